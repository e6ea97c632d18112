"""The optimization pipeline: golden before/after text per pass, and that the
pipeline keeps values (reference interpreter) on every op spec and its VJP."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.core import Eqn, Function, Literal, Var
from gradtape.ir.optimize import PIPELINE, cse, dce, fold_constants, optimize, simplify
from gradtape.ir.types import TensorType

from .op_specs import all_specs

F3 = TensorType((3,), np.float64)
F23 = TensorType((2, 3), np.float64)
F = TensorType((), np.float64)
OP = ir.all_ops


def eqn(op, inputs, out, **params):
    return Eqn(OP[op], inputs, params, [out])


# --- fold_constants --------------------------------------------------------------------

def test_fold_constants_scalar_literals():
    a, b, c = Var(F3), Var(F), Var(F3)
    fn = Function([a], [eqn("mul", [Literal(2.0), Literal(3.0)], b), eqn("mul", [a, b], c)], [c])
    assert str(fn) == "{ a:f64[3] . b:f64[] = mul 2.0 3.0 ; c:f64[3] = mul a b -> c }"
    assert str(fold_constants(fn)) == "{ a:f64[3] . b:f64[3] = mul a 6.0 -> b }"


def test_fold_constants_splat_stays_a_splat():
    a, b, c, d = Var(F3), Var(F3), Var(F3), Var(F3)
    fn = Function([a], [
        eqn("broadcast_to", [Literal(1.0)], b, shape=(3,)),
        eqn("mul", [b, Literal(100.0)], c),
        eqn("mul", [c, a], d),
    ], [d])
    assert str(fold_constants(fn)) == (
        "{ a:f64[3] . b:f64[3] = broadcast_to[shape=(3,)] 1.0 ; "
        "c:f64[3] = broadcast_to[shape=(3,)] 100.0 ; d:f64[3] = mul c a -> d }"
    )


def test_fold_constants_keeps_the_output_dtype_and_folds_an_output():
    b = Var(TensorType((), np.float32))
    fn = Function([], [eqn("add", [Literal(1.5, np.float32), Literal(2.0, np.float32)], b)], [b])
    folded = fold_constants(fn)
    assert str(folded) == "{  . -> 3.5:f32 }"
    assert folded.outvars[0].value.dtype == np.float32


def test_fold_constants_never_materializes_a_non_elementwise_array():
    b = Var(TensorType((2, 2), np.float64))
    fn = Function([], [eqn("reshape", [Literal(np.ones(4))], b, shape=(2, 2))], [b])
    assert fold_constants(fn) is fn


# --- simplify ---------------------------------------------------------------------------

def test_simplify_identities():
    a, b, c, d, e = Var(F3), Var(F3), Var(F3), Var(F3), Var(F3)
    fn = Function([a], [
        eqn("mul", [a, Literal(1.0)], b),
        eqn("neg", [b], c),
        eqn("neg", [c], d),
        eqn("reshape", [d], e, shape=(3,)),
    ], [e])
    assert str(fn) == (
        "{ a:f64[3] . b:f64[3] = mul a 1.0 ; c:f64[3] = neg b ; d:f64[3] = neg c ; "
        "e:f64[3] = reshape[shape=(3,)] d -> e }"
    )
    assert str(dce(simplify(fn))) == "{ a:f64[3] . -> a }"


@pytest.mark.parametrize("op, lit, left", [
    ("mul", 1.0, True), ("mul", 1.0, False), ("add", 0.0, True), ("add", 0.0, False),
    ("sub", 0.0, False), ("div", 1.0, False), ("pow", 1.0, False),
])
def test_simplify_each_binary_identity(op, lit, left):
    a, b = Var(F3), Var(F3)
    ins = [Literal(lit), a] if left else [a, Literal(lit)]
    fn = Function([a], [eqn(op, ins, b)], [b])
    assert str(simplify(fn)) == "{ a:f64[3] . -> a }"


def test_simplify_keeps_an_identity_that_broadcasts():
    a, b = Var(F), Var(F3)
    fn = Function([a], [eqn("mul", [a, Literal(np.ones(3))], b)], [b])
    assert simplify(fn) is fn  # a*ones(3) changes the shape: not an identity
    c = Var(F3)
    fn = Function([a], [eqn("add", [a, Literal(0.0)], Var(F)), eqn("broadcast_to", [a], c, shape=(3,))], [c])
    assert str(simplify(fn)) == "{ a:f64[] . b:f64[3] = broadcast_to[shape=(3,)] a -> b }"


def test_simplify_layout_identities():
    a, b, c, d = Var(F23), Var(F23), Var(F23), Var(F23)
    fn = Function([a], [
        eqn("transpose", [a], b, perm=(0, 1)),
        eqn("broadcast_to", [b], c, shape=(2, 3)),
        eqn("cast", [c], d, dtype=np.dtype(np.float64)),
    ], [d])
    assert str(simplify(fn)) == "{ a:f64[2,3] . -> a }"


def test_simplify_keeps_a_real_transpose_and_stop_gradient():
    a, b, c = Var(F23), Var(TensorType((3, 2), np.float64)), Var(TensorType((3, 2), np.float64))
    fn = Function([a], [eqn("transpose", [a], b, perm=(1, 0)), eqn("stop_gradient", [b], c)], [c])
    assert simplify(fn) is fn


def test_simplify_reads_a_splat_as_a_scalar_and_as_a_one():
    a, b, c, d = Var(F3), Var(F3), Var(F3), Var(F3)
    fn = Function([a], [
        eqn("broadcast_to", [Literal(2.0)], b, shape=(3,)),
        eqn("mul", [b, a], c),
        eqn("broadcast_to", [Literal(1.0)], d, shape=(3,)),
    ], [c])
    assert str(simplify(fn)) == (
        "{ a:f64[3] . b:f64[3] = broadcast_to[shape=(3,)] 2.0 ; c:f64[3] = mul 2.0 a ; "
        "d:f64[3] = broadcast_to[shape=(3,)] 1.0 -> c }"
    )
    e = Var(F3)
    fn = Function([a], [eqn("broadcast_to", [Literal(1.0)], d, shape=(3,)), eqn("mul", [d, a], e)], [e])
    assert str(dce(simplify(fn))) == "{ a:f64[3] . -> a }"


def test_simplify_keeps_a_splat_that_gives_the_shape():
    a, b, c = Var(F), Var(F3), Var(F3)
    fn = Function([a], [eqn("broadcast_to", [Literal(2.0)], b, shape=(3,)), eqn("mul", [b, a], c)], [c])
    assert simplify(fn) is fn  # mul 2.0 a would be a scalar


def test_simplify_power_zero_is_a_splat_of_one():
    a, b, c = Var(F3), Var(F3), Var(F3)
    fn = Function([a], [eqn("pow", [a, Literal(0.0)], b), eqn("mul", [b, a], c)], [c])
    out = simplify(fn)
    assert str(out) == "{ a:f64[3] . b:f64[3] = broadcast_to[shape=(3,)] 1.0 -> a }"
    x = np.array([0.0, np.nan, -2.0])
    np.testing.assert_array_equal(ir.eval_function(out, [x])[0], ir.eval_function(fn, [x])[0])


def _contract_with(eye_atom, defs=()):
    a, out = Var(F23), Var(TensorType((3, 2), np.float64))
    eqns = list(defs) + [eqn("contract", [a, eye_atom], out, spec="ij,kj->ki")]
    return Function([a], eqns, [out])


def test_simplify_contraction_with_a_literal_identity_is_a_transpose():
    fn = _contract_with(Literal(np.eye(3)))
    assert [e.op.name for e in simplify(fn).eqns] == ["transpose"]
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(ir.eval_function(simplify(fn), [x])[0], ir.eval_function(fn, [x])[0])


def test_simplify_contraction_with_an_identity_built_from_index_literals():
    eq_out, eye = Var(TensorType((3, 3), np.bool_)), Var(TensorType((3, 3), np.float64))
    defs = [eqn("eq", [Literal(np.arange(3).reshape(3, 1)), Literal(np.arange(3))], eq_out),
            eqn("cast", [eq_out], eye, dtype=np.dtype(np.float64))]
    fn = _contract_with(eye, defs)
    out = dce(simplify(fn))
    assert [e.op.name for e in out.eqns] == ["transpose"]
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(ir.eval_function(out, [x])[0], ir.eval_function(fn, [x])[0])


@pytest.mark.parametrize("matrix", [np.eye(3) * 2.0, np.eye(3)[::-1], np.ones((3, 3))])
def test_simplify_keeps_a_contraction_with_a_matrix_that_is_not_the_identity(matrix):
    fn = _contract_with(Literal(matrix))
    assert [e.op.name for e in simplify(fn).eqns] == ["contract"]


# --- cse -------------------------------------------------------------------------------

def test_cse_merges_equal_equations():
    a, b, c, d = Var(F3), Var(F3), Var(F3), Var(F3)
    fn = Function([a], [eqn("exp", [a], b), eqn("exp", [a], c), eqn("add", [b, c], d)], [d])
    assert str(fn) == "{ a:f64[3] . b:f64[3] = exp a ; c:f64[3] = exp a ; d:f64[3] = add b c -> d }"
    assert str(cse(fn)) == "{ a:f64[3] . b:f64[3] = exp a ; c:f64[3] = add b b -> c }"


def test_cse_commutative_operands_and_literals_by_value():
    a, x, b, c, d = Var(F3), Var(F3), Var(F3), Var(F3), Var(F3)
    fn = Function([a, x], [
        eqn("mul", [a, x], b), eqn("mul", [x, a], c), eqn("add", [b, c], d),
    ], [d])
    assert str(cse(fn)) == "{ a:f64[3] b:f64[3] . c:f64[3] = mul a b ; d:f64[3] = add c c -> d }"
    e, f = Var(F3), Var(F3)
    fn = Function([a], [eqn("mul", [a, Literal(2.0)], e), eqn("mul", [a, Literal(2.0)], f)], [e, f])
    assert str(cse(fn)) == "{ a:f64[3] . b:f64[3] = mul a 2.0 -> (b, b) }"


def test_cse_distinguishes_params_literal_dtypes_and_non_commutative_order():
    a, x = Var(F23), Var(F23)
    s1, s2 = Var(F3), Var(TensorType((2,), np.float64))
    d1, d2 = Var(F23), Var(F23)
    fn = Function([a, x], [
        eqn("reduce_sum", [a], s1, axes=(0,)),
        eqn("reduce_sum", [a], s2, axes=(1,)),
        eqn("sub", [a, x], d1),
        eqn("sub", [x, a], d2),
    ], [s1, s2, d1, d2])
    assert cse(fn) is fn
    i, j = Var(TensorType((), np.int64)), Var(TensorType((), np.int64))
    y = Var(TensorType((), np.int64))
    fn = Function([y], [eqn("add", [y, Literal(1)], i), eqn("add", [y, Literal(1)], j)], [i, j])
    assert len(cse(fn).eqns) == 1


def test_dce_drops_what_no_output_needs():
    a, b, c = Var(F3), Var(F3), Var(F3)
    fn = Function([a], [eqn("exp", [a], b), eqn("sin", [a], c)], [c])
    assert str(dce(fn)) == "{ a:f64[3] . b:f64[3] = sin a -> b }"


# --- the pipeline ---------------------------------------------------------------------

def test_pipeline_names_and_order():
    assert [name for name, _ in PIPELINE] == ["fold_constants", "simplify", "cse", "merge_scans", "dce"]


def test_optimize_on_a_traced_function_and_dump_by_name():
    fn = gt.make_ir(lambda x: -(-x) * 1.0 + gt.exp(x) * gt.exp(x), np.ones(3))
    seen = []
    out = optimize(fn, dump=lambda name, f: seen.append(name))
    assert str(out) == "{ a:f64[3] . b:f64[3] = exp a ; c:f64[3] = mul b b ; d:f64[3] = add a c -> d }"
    assert seen[:5] == ["fold_constants", "simplify", "cse", "merge_scans", "dce"]


def test_optimize_a_seeded_gradient():
    fn = gt.make_ir(lambda x: gt.sum(x * x), np.ones(3))
    joint, _ = ir.vjp(fn, [0])
    from gradtape.ir.inline import substitute_inputs

    seeded = substitute_inputs(joint, {1: Literal(1.0)})
    assert str(optimize(seeded)) == (
        "{ a:f64[3] . b:f64[3] = mul a a ; c:f64[] = reduce_sum[axes=(0,)] b ; "
        "d:f64[3] = add a a -> (c, d) }"
    )


def test_optimize_passes_verify_each_stage():
    fn = gt.make_ir(lambda x: gt.tanh(x) * 1.0, np.ones(2))
    stages = []
    optimize(fn, dump=lambda name, f: stages.append(ir.verify(f)))
    assert stages


# --- semantics on every op spec -------------------------------------------------------

def _same(got, want):
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("spec", all_specs(), ids=str)
def test_optimize_preserves_values_of_op_specs(spec):
    rng = np.random.default_rng(0)
    args = spec.args(rng)
    fn = gt.make_ir(spec.fn, *args)
    values = [np.asarray(a) for a in gt.tracer.tree.flatten(list(args))]
    opt = optimize(fn)
    _same(ir.eval_function(opt, values), ir.eval_function(fn, values))


@pytest.mark.parametrize("spec", all_specs(), ids=str)
def test_optimize_preserves_values_of_op_spec_vjps(spec):
    rng = np.random.default_rng(1)
    args = spec.args(rng)
    fn = gt.make_ir(spec.fn, *args)
    wrt = [i for i, v in enumerate(fn.invars) if v.type.is_float]
    if not wrt:
        pytest.skip("no float input")
    joint, _ = ir.vjp(fn, wrt)
    values = [np.asarray(a) for a in gt.tracer.tree.flatten(list(args))]
    values += [rng.standard_normal(t.shape).astype(t.dtype) for t in fn.out_types]
    opt = optimize(joint)
    assert len(opt.eqns) <= len(joint.eqns)
    _same(ir.eval_function(opt, values), ir.eval_function(joint, values))
