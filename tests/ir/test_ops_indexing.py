"""The layout and indexing ops: derivatives to second order in both modes,
reference values against NumPy, reference types against the shape rules,
normalized slice params, transpose pairs, and shape-rule error messages."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.ops import concatenate, gather, pad, scatter_add, unslice
from gradtape.ir.ops import slice as slice_
from gradtape.ir.ops.indexing import (
    concatenate_p,
    gather_p,
    normalize_range,
    pad_p,
    scatter_add_p,
    slice_p,
    unslice_p,
)
from gradtape.testing import check_grads

from .specs_indexing import SPECS

F64 = np.float64


def f64(*shape):
    return ir.TensorType(shape, F64)


def i64(*shape):
    return ir.TensorType(shape, np.int64)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_gradients_match_finite_differences(spec):
    check_grads(spec.fn, spec.args(np.random.default_rng(0)), order=spec.order, modes=spec.modes)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.numpy_fn is not None], ids=str)
def test_values_match_numpy_and_types_match_shape_rules(spec):
    values = spec.args(np.random.default_rng(1))
    fn = gt.make_ir(spec.fn, *values)
    (out,) = ir.eval_function(fn, values, check_types=True)
    expected = spec.numpy_fn(*values)
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.asarray(expected).dtype
    eager = spec.fn(*[gt.constant(v) for v in values])
    np.testing.assert_array_equal(eager.numpy(), expected)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_derivative_functions_have_consistent_types(spec):
    """Every equation of the joint functions evaluates to its declared type."""
    values = spec.args(np.random.default_rng(2))
    fn = gt.make_ir(spec.fn, *values)
    wrt = [i for i, v in enumerate(fn.invars) if v.type.is_float]
    rng = np.random.default_rng(3)
    rev, _ = ir.vjp(fn, wrt)
    cts = [rng.standard_normal(v.type.shape).astype(v.type.dtype) for v in fn.outvars]
    ir.eval_function(rev, list(values) + cts, check_types=True)
    fwd, _ = ir.jvp(fn, wrt)
    ts = [rng.standard_normal(fn.invars[i].type.shape).astype(fn.invars[i].type.dtype) for i in wrt]
    ir.eval_function(fwd, list(values) + ts, check_types=True)


# --- normalized slice params --------------------------------------------------------------

@pytest.mark.parametrize(
    "r, want",
    [
        ((0, 5, 1), (0, 5, 1)),
        ((4, -1, -1), (4, -1, -1)),  # x[::-1]: stop -1 means "down to index 0"
        ((4, -1, -2), (4, -1, -2)),  # x[::-2] of length 5 picks 4, 2, 0
        ((1, 5, 2), (1, 4, 2)),  # stop is one past the last index picked
        ((3, 0, -2), (3, 0, -2)),
        ((4, 0, -3), (4, 0, -3)),  # picks 4, 1
        ((2, 3, 1), (2, 3, 1)),
        ((2, 1, -1), (2, 3, 1)),  # one element: step 1
        ((2, 2, 1), (0, 0, 1)),  # empty
        ((3, 1, 1), (0, 0, 1)),
    ],
)
def test_normalize_range(r, want):
    assert normalize_range(*r) == want
    assert list(range(*want)) == list(range(*r))


def test_traced_slices_print_normalized_params():
    fn = gt.make_ir(lambda x: x[1:, ::-2], np.zeros((3, 5)))
    assert str(fn) == (
        "{ a:f64[3,5] . b:f64[2,3] = slice[starts=(1, 4),steps=(1, -2),stops=(3, -1)] a -> b }"
    )
    fn = gt.make_ir(lambda x: x[:, ::-1][0] * 2.0, np.zeros((2, 3)))
    assert str(fn) == (
        "{ a:f64[2,3] . b:f64[2,3] = slice[starts=(0, 2),steps=(1, -1),stops=(2, -1)] a ; "
        "c:f64[1,3] = slice[starts=(0, 0),steps=(1, 1),stops=(1, 3)] b ; "
        "d:f64[3] = reshape[shape=(3,)] c ; e:f64[3] = mul d 2.0 -> e }"
    )


def test_identity_slices_emit_nothing():
    b = ir.Builder()
    x = b.input(f64(3, 1))
    assert slice_(x, (0, 0), (3, 1), (1, 1)) is x
    assert slice_(x, (0, 0), (3, -1), (1, -1)) is x  # a length-1 axis reversed is itself
    assert unslice(x, (3, 1), (0, 0), (3, 1)) is x
    assert pad(x, ((0, 0), (0, 0))) is x
    assert concatenate([x], 0) is x
    assert b.eqns == []


def test_transpose_pairs():
    """The VJP of each op is its partner, so reverse mode twice returns to the op."""
    pairs = [
        (lambda x: slice_(x, (4,), (-1,), (-2,)), f64(5), "unslice"),
        (lambda x: unslice(x, (5,), (4,), (-1,), (-2,)), f64(3), "slice"),
        (lambda x: gather(x, x.builder.literal(np.array([0, 2, 2])), 0), f64(3), "scatter_add"),
        (lambda x: scatter_add(x, x.builder.literal(np.array([0, 2, 2])), 0, 4), f64(3), "gather"),
        (lambda x: pad(x, ((1, 2),)), f64(3), "slice"),
        (lambda x: concatenate([x, x], 0), f64(3), "slice"),
    ]
    for emit, in_type, adjoint_op in pairs:
        b = ir.Builder()
        x = b.input(in_type)
        fn = b.build([x], [emit(x)])
        joint, _ = ir.vjp(fn, [0])
        ops = [e.op.name for e in joint.eqns[len(fn.eqns):]]
        assert adjoint_op in ops, (fn, joint)


def test_gather_scatter_reference():
    x = np.arange(6.0).reshape(3, 2)
    idx = np.array([[2, 0], [2, 2]])
    np.testing.assert_array_equal(ir.impls[gather_p](x, idx, axis=0), x[idx])
    ct = np.ones((2, 2, 2))
    np.testing.assert_array_equal(
        ir.impls[scatter_add_p](ct, idx, axis=0, size=3), [[1, 1], [0, 0], [3, 3]]
    )


def test_gather_and_scatter_add_references_clamp_out_of_range_indices_to_the_edge():
    """The rule compiled code follows too (an index traced, not known, cannot raise there)."""
    x = np.array([10.0, 20.0, 30.0])
    np.testing.assert_array_equal(ir.impls[gather_p](x, np.array([0, 3, -1, 99]), axis=0), [10, 30, 10, 30])
    np.testing.assert_array_equal(
        ir.impls[scatter_add_p](np.ones((2, 3)), np.array([4, -2, 1]), axis=1, size=4),
        [[1, 1, 0, 1], [1, 1, 0, 1]],
    )


def test_second_order_of_gather_stays_in_the_op_set():
    fn = gt.make_ir(lambda x: gt.sin(gt.take(x, [1, 1, 0])), np.ones(2))
    joint, _ = ir.vjp(fn, [0])
    joint2, _ = ir.vjp(ir.select_outputs(joint, [1]), [0, 1])
    names = {e.op.name for e in joint2.eqns}
    assert {"gather", "scatter_add"} <= names


# --- shape-rule errors ------------------------------------------------------------------------

SHAPE_ERRORS = [
    (slice_p, [f64(3)], dict(starts=(0, 0), stops=(1, 1), steps=(1, 1)), ir.ShapeError,
     r"slice: needs one \(start, stop, step\) per axis of shape \(3,\)"),
    (slice_p, [f64(3)], dict(starts=(0,), stops=(3,), steps=(0,)), ir.ShapeError,
     r"slice: step of axis 0 is 0 \(operand f64\[3\]\)"),
    (slice_p, [f64(3)], dict(starts=(0,), stops=(4,), steps=(2,)), ir.ShapeError,
     r"slice: axis 0 has \(start, stop, step\)=\(0, 4, 2\), which is not normalized; "
     r"use \(0, 3, 2\)"),
    (slice_p, [f64(3, 2)], dict(starts=(0, 1), stops=(4, 2), steps=(1, 1)), ir.ShapeError,
     r"slice: range\(0, 4, 1\) of axis 0 selects indices outside 0..2 of shape \(3, 2\)"),
    (unslice_p, [f64(2)], dict(shape=(5,), starts=(0,), stops=(3,), steps=(1,)), ir.ShapeError,
     r"unslice: operand f64\[2\] does not fit the slice of shape \(5,\) .* which has shape \(3,\)"),
    (gather_p, [f64(3), f64(2)], dict(axis=0), ir.DTypeError,
     r"gather: indices must be an integer array, got f64\[2\]"),
    (gather_p, [f64(3), i64(2)], dict(axis=1), ir.ShapeError,
     r"gather: axis 1 is out of range for an operand f64\[3\] \(indices i64\[2\]\)"),
    (scatter_add_p, [f64(2, 3), i64(3)], dict(axis=0, size=4), ir.ShapeError,
     r"scatter_add: operand f64\[2,3\] must have the index shape \(3,\) at axis 0"),
    (concatenate_p, [f64(2, 3), f64(3, 3)], dict(axis=1), ir.ShapeError,
     r"concatenate: operand shapes must agree except along axis 1, got f64\[2,3\], f64\[3,3\]"),
    (concatenate_p, [f64(2), ir.TensorType((2,), np.float32)], dict(axis=0), ir.DTypeError,
     r"concatenate: operands must have one dtype, got f64\[2\], f32\[2\]"),
    (concatenate_p, [f64(2), f64(2)], dict(axis=1), ir.ShapeError,
     r"concatenate: axis 1 is out of range for operands f64\[2\], f64\[2\]"),
    (pad_p, [f64(2, 2)], dict(pad_width=((1, 1),), value=0.0), ir.ShapeError,
     r"pad: pad_width must hold one \(before, after\) pair of non-negative ints per axis of "
     r"f64\[2,2\], got \(\(1, 1\),\)"),
    (pad_p, [f64(2)], dict(pad_width=((-1, 1),), value=0.0), ir.ShapeError,
     r"pad: pad_width must hold .* got \(\(-1, 1\),\)"),
]


@pytest.mark.parametrize(
    "op, types, params, error, message", SHAPE_ERRORS, ids=lambda v: getattr(v, "name", "")
)
def test_shape_rule_errors(op, types, params, error, message):
    with pytest.raises(error, match=message):
        ir.shape_rules[op](*types, **params)


def test_verifier_rejects_unnormalized_slice():
    x, y = ir.Var(f64(5)), ir.Var(f64(3))
    eqn = ir.Eqn(slice_p, [x], dict(starts=(0,), stops=(6,), steps=(2,)), [y])
    with pytest.raises(ir.VerifyError, match="'slice' is ill-typed: .*not normalized"):
        ir.verify(ir.Function([x], [eqn], [y]))
