"""The vectorization pass (gradtape.ir.vmap) and every op's batching rule.

The oracle (batching_oracle.py) is the reference interpreter run once per
batch element on the original Function, its results stacked along the
output's batch axis. Every
op spec and every case of batching_cases.py is batched over each subset of
its inputs, with the batch axis first and last; then compositions (vmap of
adjoints and tangents, vmap of vmap, calls), the compiled path, the shape
of the emitted IR where efficiency depends on it, and the errors.
"""
from __future__ import annotations

import importlib
import zlib

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.batching import infer_axis_size
from gradtape.ir.op import batching_rules
from gradtape.ir.ops import contract, gather, reduce_sum, scatter_add, sin, tanh
from gradtape.runtime import compile_function

from .batching_cases import CASES, function, f64
from .batching_oracle import B, check_every_subset, check_vmap, stacked_inputs
from .op_specs import all_specs

LAYOUT_OPS = {"broadcast_to", "reshape", "transpose", "slice", "unslice", "gather",
              "concatenate", "pad", "neg", "stop_gradient", "argmax", "argmin", "argsort"}


# --- every op spec, every subset of inputs ------------------------------------------------

SPECS = all_specs()


def _spec_function(spec):
    rng = np.random.default_rng(0)
    fn = gt.make_ir(spec.fn, *spec.args(rng))

    def make_args(rng):
        return [np.asarray(a, v.type.dtype).reshape(v.type.shape) for a, v in zip(spec.args(rng), fn.invars)]

    return fn, make_args


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_vmap_of_spec_matches_per_element(spec):
    fn, make_args = _spec_function(spec)
    exact = {e.op.name for e in fn.eqns} <= LAYOUT_OPS
    check_every_subset(fn, make_args, zlib.crc32(spec.name.encode()), exact)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_vmap_of_spec_adjoint_matches_per_element(spec):
    # Batched cotangents alone (rows of a Jacobian) and everything batched (per-example
    # gradients): the adjoint ops (unslice, scatter_add, masked where, sums) get batched too.
    fn, make_args = _spec_function(spec)
    joint, _ = ir.vjp(fn, [i for i, v in enumerate(fn.invars) if v.type.is_float])
    n_in = len(fn.invars)

    def make_joint_args(rng):
        cts = [rng.standard_normal(v.type.shape).astype(v.type.dtype) for v in joint.invars[n_in:]]
        return make_args(rng) + cts

    rng = np.random.default_rng(zlib.crc32(spec.name.encode()))
    elements = [make_joint_args(rng) for _ in range(B)]
    n_out, n_grads = len(fn.outvars), len(joint.outvars) - len(fn.outvars)
    for axis in (0, -1):
        cts_only = [None] * n_in + [axis] * n_out
        check_vmap(joint, elements, cts_only, out_axes=[None] * n_out + [axis] * n_grads)
        check_vmap(joint, elements, [axis] * len(joint.invars), out_axes=axis)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_vmap_of_case_matches_per_element(case):
    exact = {e.op.name for e in case.fn.eqns} <= LAYOUT_OPS
    check_every_subset(case.fn, case.args, zlib.crc32(case.name.encode()), exact)


def test_every_op_of_the_core_op_table_is_batched_by_a_table_test():
    # The custom-derivative ops (ops/custom.py, tracer/custom_gradient.py) are tested with their rules.
    modules = [importlib.import_module(f"gradtape.ir.ops.{m}")  # (ops.contract is also a function)
               for m in ("elementwise", "layout", "reduce", "indexing", "contract", "call")]
    core = {v.name for m in modules for v in vars(m).values() if isinstance(v, ir.Op)}
    assert {"mul", "reshape", "reduce_sum", "gather", "contract", "call"} <= core
    covered = {e.op.name for s in SPECS for e in _spec_function(s)[0].eqns}
    covered |= {e.op.name for c in CASES for e in c.fn.eqns}
    assert core - covered == set()


# --- the emitted IR: no copies of shared operands, contractions stay one GEMM -----------

def test_elementwise_with_a_shared_operand_broadcasts_without_copies():
    fn = function([f64(3), f64(2, 3)], lambda x, y: x * y + 1.0)
    assert str(ir.vmap(fn, [0, None], 4)) == (
        "{ a:f64[4,3] b:f64[2,3] . c:f64[4,1,3] = reshape[shape=(4, 1, 3)] a ; "
        "d:f64[4,2,3] = mul c b ; e:f64[4,2,3] = add d 1.0 -> e }"
    )


@pytest.mark.parametrize("batched, spec", [
    ((True, False), "aij,jk->aik"),  # the batch letter is one more free letter: one GEMM, M = a*i
    ((False, True), "ij,ajk->aik"),  # N = a*k after C^T = B^T A^T
    ((True, True), "aij,ajk->aik"),  # a batch letter of both: one GEMM per batch element
])
def test_contract_stays_one_contraction(batched, spec):
    fn = function([f64(2, 3), f64(3, 4)], lambda a, b: contract(a, b, "ij,jk->ik"))
    out = ir.vmap(fn, [0 if bd else None for bd in batched], 5)
    assert [(e.op.name, e.params["spec"]) for e in out.eqns] == [("contract", spec)]


@pytest.mark.parametrize("in_axes", [[0, 0], [None, 0]])
def test_gather_and_scatter_add_with_batched_indices_need_no_transposes(in_axes):
    index = ir.TensorType((2,), np.int64)
    take = function([f64(2, 4, 3), index], lambda x, i: gather(x, i, 1))
    clamp = ["maximum", "minimum"]  # indices clamped into their own row (flat_indices)
    assert [e.op.name for e in ir.vmap(take, in_axes, 5).eqns] == ["reshape"] + clamp + ["reshape", "add", "gather"]
    put = function([f64(2, 2, 3), index], lambda x, i: scatter_add(x, i, 1, 4))
    expected = clamp + ["reshape", "add", "scatter_add", "reshape"]
    if in_axes[0] is None:  # every batch element adds the shared x anew
        expected = ["broadcast_to"] + expected
    assert [e.op.name for e in ir.vmap(put, in_axes, 5).eqns] == expected


def test_equations_without_batched_operands_are_kept_as_they_are():
    fn = function([f64(3), f64(3)], lambda w, x: sin(w) * x)
    out = ir.vmap(fn, [None, 0], 2)
    assert out.eqns[0] is fn.eqns[0] and out.invars[0] is fn.invars[0]


# --- compositions ----------------------------------------------------------------------------

def mlp_loss(w1, b1, w2, x):
    h = gt.tanh(x @ w1 + b1)
    return gt.sum((h @ w2) ** 2) + gt.sum(x ** 3)


def _mlp_values(rng, rows):
    return [rng.standard_normal(s) for s in ((3, 4), (4,), (4, 2))], rng.standard_normal((rows, 3))


def test_vmap_of_adjoint_gives_per_example_gradients():
    rng = np.random.default_rng(1)
    params, xs = _mlp_values(rng, 5)
    fn = gt.make_ir(mlp_loss, *params, xs[0])
    joint, _ = ir.vjp(fn, [0, 1, 2, 3])
    ct = np.asarray(1.0)
    elements = [params + [x, ct] for x in xs]
    check_vmap(joint, elements, [None, None, None, 0, None])
    # cotangents batched too, the batch axis last
    cts = rng.standard_normal(5)
    elements = [params + [x, c] for x, c in zip(xs, cts)]
    check_vmap(joint, elements, [None, None, None, -1, 0], out_axes=-1)


def test_vmap_of_tangent_over_a_basis_gives_the_gradient():
    rng = np.random.default_rng(2)
    params, xs = _mlp_values(rng, 1)
    fn = gt.make_ir(mlp_loss, *params, xs[0])
    tangent, _ = ir.jvp(fn, [3])
    basis = np.eye(3)
    elements = [params + [xs[0], e] for e in basis]
    batched = check_vmap(tangent, elements, [None, None, None, None, 0], out_axes=[None, 0])
    _, directional = ir.eval_function(batched, params + [xs[0], basis])
    joint, _ = ir.vjp(fn, [3])
    grad = ir.eval_function(joint, params + [xs[0], np.asarray(1.0)])[1]
    np.testing.assert_allclose(directional, grad, rtol=1e-12)


def test_hessian_by_vmap_of_forward_over_reverse():
    # f(x) = sum(tanh(x)^2 x) + 0.5 |A x|^2 (the W5 function): H = diag(g''(x)) + A^T A.
    n = 4
    rng = np.random.default_rng(13)
    a, x = rng.standard_normal((3, n)), rng.standard_normal(n)
    fn = gt.make_ir(lambda a, x: gt.sum(gt.tanh(x) ** 2 * x) + 0.5 * gt.sum((a @ x) ** 2), a, x)
    grad = ir.passes.select_outputs(ir.vjp(fn, [1])[0], [1])  # (a, x, ct) -> df/dx
    hvp, _ = ir.jvp(grad, [1])  # (a, x, ct, t) -> (df/dx, H t)
    hessian = ir.vmap(hvp, [None, None, None, 0], n, out_axes=[None, 0])
    _, got = ir.eval_function(hessian, [a, x, np.asarray(1.0), np.eye(n)])
    t, s = np.tanh(x), 1 - np.tanh(x) ** 2
    want = np.diag(2 * s ** 2 * x - 4 * t ** 2 * s * x + 4 * t * s) + a.T @ a
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_vmap_of_vmap_matches_a_double_loop():
    fn = function([f64(3), f64(3, 2)],
                  lambda x, w: tanh(contract(x, w, "i,ij->j")) * reduce_sum(x, (0,)))
    inner = ir.vmap(fn, [0, None], 4)  # x: (4, 3)
    outer = ir.vmap(inner, [None, 2], 2, out_axes=1)  # w: (3, 2, 2)
    rng = np.random.default_rng(3)
    xs, ws = rng.standard_normal((4, 3)), rng.standard_normal((3, 2, 2))
    (got,) = ir.eval_function(outer, [xs, ws])
    want = np.stack([
        np.stack([ir.eval_function(fn, [x, ws[:, :, j]])[0] for j in range(2)], 0) for x in xs
    ], 0)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_call_is_batched_recursively_and_cached():
    inner = function([f64(3), f64(3)], lambda x, y: sin(x) * y)

    def body(x, y):
        return ir.ops.call(inner, x, y) + ir.ops.call(inner, y, x)

    fn = function([f64(3), f64(3)], body)
    rng = np.random.default_rng(4)
    elements = [[rng.standard_normal(3), rng.standard_normal(3)] for _ in range(B)]
    out = check_vmap(fn, elements, [0, None])
    calls = [e for e in out.eqns if e.op.name == "call"]
    subs = {e.params["fn"] for e in calls}
    assert len(subs) == 2  # batched first operand, batched second operand
    again = ir.vmap(fn, [0, None], B)
    assert {e.params["fn"] for e in again.eqns if e.op.name == "call"} == subs


@pytest.mark.parametrize("out_axes", [0, 1, -1, [1, None], [-2, 0]])
def test_out_axes(out_axes):
    # output 0 depends on the batched x; output 1 only on the shared y
    fn = function([f64(2, 3), f64(3)], lambda x, y: (x * y, sin(y)))
    rng = np.random.default_rng(5)
    y = rng.standard_normal(3)
    elements = [[rng.standard_normal((2, 3)), y] for _ in range(B)]
    check_vmap(fn, elements, [1, None], out_axes)


def test_unbatched_outputs_are_broadcast_or_passed_through():
    fn = function([f64(3), f64(2)], lambda x, y: (sin(x), y * 2.0, y))
    rng = np.random.default_rng(6)
    y = rng.standard_normal(2)
    elements = [[rng.standard_normal(3), y] for _ in range(B)]
    out = check_vmap(fn, elements, [0, None], out_axes=[0, 1, None])
    assert out.outvars[2] is fn.invars[1]
    check_vmap(fn, elements, [0, None], out_axes=[-1, 0, 0])


def test_an_input_returned_with_its_own_batch_axis_is_passed_through():
    fn = function([f64(2, 3)], lambda x: (x, x * 2.0))
    out = ir.vmap(fn, [1], 4, out_axes=[1, 0])
    assert out.outvars[0] is out.invars[0]
    rng = np.random.default_rng(12)
    check_vmap(fn, [[rng.standard_normal((2, 3))] for _ in range(B)], [1], out_axes=[1, 0])


def test_literal_output_and_no_batched_input():
    b = ir.Builder()
    x = b.input(f64(2))
    fn = b.build([x], [x, ir.Literal(np.arange(2.0))])
    x0 = np.array([1.0, 2.0])
    out = ir.vmap(fn, [None], 3, out_axes=[1, 0])
    got = ir.eval_function(out, [x0])
    np.testing.assert_array_equal(got[0], np.stack([x0] * 3, axis=1))
    np.testing.assert_array_equal(got[1], np.stack([np.arange(2.0)] * 3))


def test_in_axes_may_be_one_int_for_every_input():
    fn = function([f64(3), f64(3)], lambda x, y: x * y)
    rng = np.random.default_rng(7)
    elements = [[rng.standard_normal(3), rng.standard_normal(3)] for _ in range(B)]
    check_vmap(fn, elements, -1)


def test_batch_of_one_and_of_none():
    fn = function([f64(2, 3), f64(3)], lambda x, w: reduce_sum(x * w, (1,)))
    rng = np.random.default_rng(8)
    check_vmap(fn, [[rng.standard_normal((2, 3)), rng.standard_normal(3)]], [1, 0])
    empty = ir.vmap(fn, [0, None], 0)
    (got,) = ir.eval_function(empty, [np.zeros((0, 2, 3)), np.ones(3)])
    assert got.shape == (0, 2)


def test_both_operands_of_gather_and_scatter_add_batched_stay_in_their_batch_element():
    # Indices that would hit another batch element if the offsets were wrong.
    fn = function([f64(4, 2), ir.TensorType((3,), np.int64)],
                  lambda x, i: scatter_add(gather(x, i, 0), i, 0, 4))
    xs = np.arange(3 * 4 * 2.0).reshape(3, 4, 2)
    idx = np.array([[0, 3, 3], [3, 0, 1], [2, 2, 2]])
    check_vmap(fn, [[x, i] for x, i in zip(xs, idx)], [0, 0], exact=True)


# --- the compiled path ---------------------------------------------------------------------

def _compiled_matches_interpreter(fn, args, rtol=1e-12):
    cf = compile_function(fn)
    assert cf.native, cf.fallback_reason
    got = cf(*args)
    want = ir.eval_function(fn, args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("n", [4, 30])  # a loop nest below 24**3 multiply-adds, BLAS above
@pytest.mark.parametrize("in_axes", [[0, None], [None, 0], [0, 0], [2, 1]])
def test_compiled_batched_contract(n, in_axes):
    fn = function([f64(n, n), f64(n, n)], lambda a, b: tanh(contract(a, b, "ij,jk->ik")))
    batched = ir.vmap(fn, in_axes, 3)
    rng = np.random.default_rng(9)
    args = [rng.standard_normal(v.type.shape) for v in batched.invars]
    _compiled_matches_interpreter(batched, args)


def test_compiled_jacobian_by_vmap_of_adjoint():
    n = 30
    fn = gt.make_ir(lambda w, x: gt.tanh(w @ x) + x ** 3, np.ones((n, n)), np.ones(n))
    joint, _ = ir.vjp(fn, [1])
    jac = ir.vmap(joint, [None, None, 0], n, out_axes=[None, 0])
    rng = np.random.default_rng(10)
    w, x = rng.standard_normal((n, n)) / n, rng.standard_normal(n)
    _compiled_matches_interpreter(jac, [w, x, np.eye(n)])
    _, got = compile_function(jac)(w, x, np.eye(n))
    analytic = (1 - np.tanh(w @ x) ** 2)[:, None] * w + np.diag(3 * x ** 2)
    np.testing.assert_allclose(got, analytic, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, in_axes", [
    ("gather_axis1_2d_index", [0, 0]), ("gather_axis1_2d_index", [None, 1]),
    ("scatter_add_axis1_2d_index", [0, 0]), ("scatter_add_axis1_2d_index", [None, 0]),
    ("reduce_max_min", [1]), ("concatenate_three", [0, None, 1]), ("bool_where", [0, None, 0]),
])
def test_compiled_batched_cases(name, in_axes):
    case = next(c for c in CASES if c.name == name)
    batched = ir.vmap(case.fn, in_axes, B)
    rng = np.random.default_rng(11)
    elements = [case.args(rng) for _ in range(B)]
    _compiled_matches_interpreter(batched, stacked_inputs(elements, in_axes))


# --- errors ----------------------------------------------------------------------------------

@pytest.fixture
def mul_fn():
    return function([f64(2, 3), f64(3)], lambda x, y: x * y)


def test_in_axes_of_the_wrong_length(mul_fn):
    with pytest.raises(ValueError, match=r"vmap: in_axes has 1 entries \(0,\) but the Function has 2 inputs"):
        ir.vmap(mul_fn, [0], 4)


def test_out_axes_of_the_wrong_length(mul_fn):
    with pytest.raises(ir.IRError, match="out_axes has 2 entries"):
        ir.vmap(mul_fn, [0, None], 4, out_axes=[0, 0])


@pytest.mark.parametrize("in_axes, text", [
    ([3, None], r"in_axes\[0\]=3 is out of range for input 0 \(f64\[2,3\]\), which has rank 3 once "
                r"batched; use an axis in -3..2 or None"),
    ([None, -3], r"in_axes\[1\]=-3 is out of range for input 1 \(f64\[3\]\).* -2..1 or None"),
    ([0.5, None], r"in_axes\[0\] is 0.5; use an int or None"),
])
def test_in_axes_out_of_range(mul_fn, in_axes, text):
    with pytest.raises(ValueError, match=text):
        ir.vmap(mul_fn, in_axes, 4)


def test_out_axis_out_of_range(mul_fn):
    with pytest.raises(ValueError, match=r"out_axes\[0\]=-4 is out of range for output 0 \(f64\[2,3\]\)"):
        ir.vmap(mul_fn, [0, None], 4, out_axes=-4)


def test_batched_output_with_out_axes_none(mul_fn):
    with pytest.raises(ValueError, match=r"output 0 \(f64\[2,3\]\) depends on a batched input, "
                                         r"but out_axes\[0\] is None"):
        ir.vmap(mul_fn, [None, 0], 4, out_axes=None)


@pytest.mark.parametrize("size", [-1, 2.0])
def test_bad_axis_size(mul_fn, size):
    with pytest.raises(ValueError, match="axis_size must be a non-negative int"):
        ir.vmap(mul_fn, [0, None], size)


def test_infer_axis_size_agrees_or_names_the_disagreement():
    assert infer_axis_size([(5, 3), (3,), (2, 5)], [0, None, -1]) == 5
    with pytest.raises(ValueError, match=r"disagree on the batch size: argument 0 has 5 along axis 0 "
                                         r"\(shape \(5, 3\)\), argument 1 has 4 along axis 1"):
        infer_axis_size([(5, 3), (2, 4)], [0, 1])
    with pytest.raises(ValueError, match=r"in_axes\[0\]=2 is not an axis of argument 0"):
        infer_axis_size([(5, 3)], [2])
    with pytest.raises(ValueError, match="batch no argument"):
        infer_axis_size([(5, 3)], [None])


def test_missing_rule_names_the_op(mul_fn, monkeypatch):
    monkeypatch.delitem(batching_rules, ir.all_ops["mul"])
    with pytest.raises(ir.MissingRuleError, match="op 'mul' has no batching rule"):
        ir.vmap(mul_fn, [0, None], 4)


def test_a_rule_returning_the_wrong_type_is_reported(mul_fn, monkeypatch):
    monkeypatch.setitem(batching_rules, ir.all_ops["mul"], lambda n, ins, batched: ins[1])
    with pytest.raises(ir.IRError, match=r"batching rule of 'mul' returned f64\[4,3\] for an output of type "
                                         r"f64\[2,3\] batched to f64\[4,2,3\]"):
        ir.vmap(mul_fn, [None, 0], 4)
