"""The reduction ops and nn composites: gradient checks to second order in both
modes from the spec table, values against NumPy, reference implementations
against shape rules, exact derivatives at ties and zeros, and shape-rule errors.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.op import all_ops, impls, jvp_rules, shape_rules, vjp_rules
from gradtape.testing import check_grads
from gradtape.tracer.dispatch import bind

from .specs_reduce import SPECS

T = ir.TensorType


def _args(spec):
    return spec.args(np.random.default_rng(0))


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_grads(spec):
    check_grads(spec.fn, _args(spec), order=spec.order, modes=spec.modes)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.numpy_fn is not None], ids=str)
def test_values_match_numpy(spec):
    values = _args(spec)
    want = spec.numpy_fn(*values)
    eager = spec.fn(*[gt.constant(v) for v in values])
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-12, atol=1e-12)
    (traced,) = ir.eval_function(gt.make_ir(spec.fn, *values), values)
    np.testing.assert_allclose(traced, want, rtol=1e-12, atol=1e-12)
    assert np.shape(traced) == np.shape(want)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_reference_types_agree_with_shape_rules(spec):
    """The NumPy references return exactly the types the shape rules promise,
    in the function and in its derivative functions (which use prod_of_others etc.)."""
    values = _args(spec)
    fn = gt.make_ir(spec.fn, *values)
    ir.eval_function(fn, values, check_types=True)
    wrt = [i for i, v in enumerate(fn.invars) if v.type.is_float]
    cts = [np.ones(v.type.shape, v.type.dtype) for v in fn.outvars]
    joint, _ = ir.vjp(fn, wrt)
    ir.eval_function(joint, values + cts, check_types=True)
    joint, _ = ir.jvp(fn, wrt)
    ir.eval_function(joint, values + [np.ones_like(values[i]) for i in wrt], check_types=True)


def test_every_spec_op_is_exercised():
    for spec in SPECS:
        text = str(gt.make_ir(spec.fn, *_args(spec)))
        for op in spec.ops:
            assert f" {op}" in text, f"{spec.name} does not use {op}: {text}"


# --- the op table --------------------------------------------------------------------

NEW_OPS = ["reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin"]


@pytest.mark.parametrize("name", NEW_OPS + ["reduce_sum"])
def test_every_op_has_its_rules(name):
    op = all_ops[name]
    assert op in shape_rules and op in impls
    if name.startswith("arg"):
        assert not op.differentiable
        assert op not in vjp_rules and op not in jvp_rules
    else:
        assert op.differentiable
        assert op in vjp_rules and op in jvp_rules


def test_ops_are_exported_from_ir_ops():
    from gradtape.ir import ops

    for name in NEW_OPS + ["reduce_sum", "reduced_shape", "kept_shape", "expand_reduced"]:
        assert hasattr(ops, name)
        assert hasattr(ops, f"{name}_p") or not name.startswith(("reduce_", "arg"))


def test_printed_ir():
    x = np.ones((2, 3))
    assert str(gt.make_ir(lambda x: gt.max(x, axis=1), x)) == (
        "{ a:f64[2,3] . b:f64[2] = reduce_max[axes=(1,)] a -> b }"
    )
    assert str(gt.make_ir(lambda x: gt.argmin(x, axis=-1), x)) == (
        "{ a:f64[2,3] . b:i64[2] = argmin[axis=1] a -> b }"
    )
    assert str(gt.make_ir(lambda x: gt.prod(x, axis=(0, 1)), x)) == (
        "{ a:f64[2,3] . b:f64[] = reduce_prod[axes=(0, 1)] a -> b }"
    )


# --- exact derivatives: ties, zeros ------------------------------------------------------

def _vjp_at(f, x, ct=None):
    fn = gt.make_ir(f, x)
    joint, _ = ir.vjp(fn, [0])
    out_type = fn.outvars[0].type
    ct = np.ones(out_type.shape, out_type.dtype) if ct is None else ct
    return ir.eval_function(joint, [x, ct])[1]


def _jvp_at(f, x, t):
    fn = gt.make_ir(f, x)
    joint, _ = ir.jvp(fn, [0])
    return ir.eval_function(joint, [x, t])[1]


def _hessian(f, x):
    """Hessian of a scalar f by reverse-over-reverse on the IR, one row per basis vector."""
    fn = gt.make_ir(f, x)
    grad_fn = ir.select_outputs(ir.vjp(fn, [0])[0], [1])  # (x, ct) -> grad
    second, _ = ir.vjp(grad_fn, [0])
    rows = []
    for e in np.eye(x.size):
        rows.append(ir.eval_function(second, [x, np.ones(()), e.reshape(x.shape)])[1].reshape(-1))
    return np.array(rows)


def test_max_ties_share_the_gradient_equally():
    x = np.array([1.0, 3.0, 3.0, 2.0])
    np.testing.assert_array_equal(_vjp_at(lambda x: gt.max(x), x), [0, 0.5, 0.5, 0])
    np.testing.assert_array_equal(_jvp_at(lambda x: gt.max(x), x, np.array([5.0, 1.0, 2.0, 7.0])), 1.5)


def test_min_ties_by_row():
    x = np.array([[1.0, 1.0, 1.0], [4.0, 0.0, 2.0]])
    g = _vjp_at(lambda x: gt.min(x, axis=1), x, np.array([3.0, 2.0]))
    np.testing.assert_allclose(g, [[1.0, 1.0, 1.0], [0.0, 2.0, 0.0]])


def test_max_ties_under_a_tape():
    x = gt.constant([[2.0, 2.0], [1.0, 5.0]])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.max(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[0, 0], [0, 1]])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.max(x, axis=1)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[0.5, 0.5], [0, 1]])


@pytest.mark.parametrize(
    "x, want",
    [
        ([2.0, 0.0, 3.0, 4.0], [0.0, 24.0, 0.0, 0.0]),  # one zero: only it has a gradient
        ([2.0, 0.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0]),  # two zeros: all partials vanish
        ([2.0, -1.0, 3.0, 0.5], [-1.5, 3.0, -1.0, -6.0]),
        ([0.0], [1.0]),
    ],
)
def test_prod_gradient_with_zeros(x, want):
    x = np.array(x)
    np.testing.assert_array_equal(_vjp_at(lambda x: gt.prod(x), x), want)
    t = np.arange(1.0, x.size + 1)
    np.testing.assert_allclose(_jvp_at(lambda x: gt.prod(x), x, t), np.dot(want, t))


def test_prod_gradient_with_zeros_along_an_axis():
    x = np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0], [1.0, 2.0, 4.0]])
    g = _vjp_at(lambda x: gt.prod(x, axis=0), x, np.array([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(g, [[1.0, 0.0, 0.0], [0.0, 40.0, 1200.0], [0.0, 0.0, 0.0]])


def test_prod_hessian_with_two_zeros_is_exact():
    # d2/dxi dxj prod(x) = product of the others; with x = (0, 0, 2, 3) only the pair (0, 1) survives.
    x = np.array([0.0, 0.0, 2.0, 3.0])
    want = np.zeros((4, 4))
    want[0, 1] = want[1, 0] = 6.0
    np.testing.assert_array_equal(_hessian(lambda x: gt.prod(x), x), want)


def test_prod_hessian_without_zeros():
    x = np.array([1.5, -2.0, 0.5])
    want = np.array([[0.0, 0.5, -2.0], [0.5, 0.0, 1.5], [-2.0, 1.5, 0.0]])
    np.testing.assert_allclose(_hessian(lambda x: gt.prod(x), x), want)


def test_prod_of_empty_axis_has_empty_gradient():
    x = np.zeros((2, 0))
    np.testing.assert_array_equal(gt.prod(x, axis=1).numpy(), [1.0, 1.0])
    assert _vjp_at(lambda x: gt.prod(x, axis=1), x).shape == (2, 0)


def test_max_second_derivative_is_zero():
    x = np.array([0.3, -1.0, 2.0])
    np.testing.assert_array_equal(_hessian(lambda x: gt.max(x), x), np.zeros((3, 3)))


# --- shape-rule errors --------------------------------------------------------------

def _rule(name):
    return shape_rules[all_ops[name]]


@pytest.mark.parametrize("name, what", [("reduce_max", "maximum"), ("reduce_min", "minimum")])
def test_empty_extreme_is_a_shape_error(name, what):
    with pytest.raises(ir.ShapeError) as info:
        _rule(name)(T((2, 0), np.float64), axes=(1,))
    msg = str(info.value)
    assert msg.startswith(f"{name}: cannot take the {what} over axis 1 of f64[2,0]")
    assert "length 0" in msg
    # Reducing the other axis is fine: the result is empty.
    assert _rule(name)(T((2, 0), np.float64), axes=(0,)) == T((0,), np.float64)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"])
def test_bad_axes_are_a_shape_error(name):
    for axes in [(1, 0), (2,), (0, 0), (-1,)]:
        with pytest.raises(ir.ShapeError, match=rf"^{name}: axes \(.*\) are not sorted unique axes of a rank-2 operand"):
            _rule(name)(T((2, 3), np.float64), axes=axes)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_shape_rule(name):
    rule = _rule(name)
    assert rule(T((2, 3, 4), np.float32), axis=1) == T((2, 4), np.int64)
    assert rule(T((5,), np.int32), axis=0) == T((), np.int64)
    with pytest.raises(ir.ShapeError, match=rf"^{name}: axis 2 is not an axis of a rank-2 operand f64\[2,3\]"):
        rule(T((2, 3), np.float64), axis=2)
    with pytest.raises(ir.ShapeError, match=rf"^{name}: cannot take the index of the \w+ over axis 0 of f64\[0,3\]"):
        rule(T((0, 3), np.float64), axis=0)


def test_prod_of_empty_is_allowed():
    assert _rule("reduce_prod")(T((0, 3), np.float64), axes=(0,)) == T((3,), np.float64)


def test_empty_max_error_reaches_the_user():
    with pytest.raises(ValueError, match=r"^max: zero-size array to reduction operation maximum which has no identity"):
        gt.max(np.zeros(0))
    with pytest.raises(ir.ShapeError, match=r"argmin: cannot take the index of the minimum"):
        gt.argmin(np.zeros((2, 0)), axis=1)
    with pytest.raises(ir.ShapeError, match=r"^min: zero-size array to reduction operation minimum"):
        gt.make_ir(lambda x: gt.min(x, axis=0), np.zeros((0, 2)))
    # the op itself, under the front ends' check
    with pytest.raises(ir.ShapeError, match=r"reduce_min: cannot take the minimum over axis 0 of f64\[0,2\]"):
        gt.make_ir(lambda x: bind(all_ops["reduce_min"], x, axes=(0,)), np.zeros((0, 2)))
