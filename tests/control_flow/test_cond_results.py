"""A cond or switch with several output leaves is one equation with several outputs: the
branch taken runs once for all of them (printed, verified, interpreted, differentiated,
batched, optimized and compiled as one), against NumPy, finite differences and vmap's
per-example loop."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.optimize import cse, optimize
from gradtape.runtime import compile_function
from gradtape.testing import check_grads

X = np.array([0.3, -1.2, 2.0])


def shared(x):
    """Both branches return (a vector, its sum) from one shared intermediate."""
    def positive(v):
        t = gt.sin(v) * v
        return t, gt.sum(t)

    def negative(v):
        t = gt.exp(v) - v
        return t * 2.0, gt.sum(t)
    return gt.cond(gt.sum(x) > 0, positive, negative, x)


def shared_numpy(x):
    if np.sum(x) > 0:
        t = np.sin(x) * x
        return t, np.sum(t)
    t = np.exp(x) - x
    return t * 2.0, np.sum(t)


def loss(x):
    a, b = shared(x)
    return gt.sum(a * a) + b * b


def loss_numpy(x):
    a, b = shared_numpy(x)
    return np.sum(a * a) + b * b


def test_one_equation_with_two_outputs_printed_once_and_verified():
    fn = gt.make_ir(shared, X)
    conds = [e for e in fn.eqns if e.op.name == "cond"]
    assert len(conds) == 1 and len(conds[0].outvars) == 2
    text = str(fn)
    assert text.count("= cond[") == 1
    assert ", " in text.split("= cond[")[0].rsplit(";", 1)[-1]   # `c:f64[3], d:f64[] = cond[...]`
    # each branch computes its shared intermediate once, for both outputs
    positive, negative = conds[0].params["branches"][1], conds[0].params["branches"][0]
    assert [e.op.name for e in positive.eqns].count("sin") == 1
    assert [e.op.name for e in negative.eqns].count("exp") == 1
    ir.verify(fn)


@pytest.mark.parametrize("x", [X, -X])
def test_values_from_the_interpreter_and_native_code(x):
    fn = gt.make_ir(shared, X)
    code = compile_function(fn)
    assert code.native, code.fallback_reason
    want = shared_numpy(x)
    for got in (code(x), ir.eval_function(fn, [x])):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-13)


@pytest.mark.parametrize("x", [X, -X])
def test_derivatives_to_second_order(x):
    np.testing.assert_allclose(float(gt.differentiable(loss)(x)), loss_numpy(x), rtol=1e-13)
    check_grads(loss, [x], order=2, modes=("rev", "fwd"))


def test_the_gradient_is_one_cond_for_every_operand_and_compiles():
    fn = optimize(gt.make_ir(gt.grad(loss), X))
    conds = [e for e in fn.eqns if e.op.name == "cond"]
    assert len(conds) == 2     # the forward one and the backward one
    code = compile_function(fn)
    assert code.native, code.fallback_reason
    e = 1e-6
    fd = [(loss_numpy(X + e * d) - loss_numpy(X - e * d)) / (2 * e) for d in np.eye(3)]
    np.testing.assert_allclose(code(X)[0], fd, rtol=1e-6)


def test_vmap_with_a_batched_predicate_matches_the_per_example_loop():
    xs = np.array([X, -X, X * 0.5, -2 * X])
    a, b = gt.vmap(shared)(xs)
    for k, x in enumerate(xs):
        want = shared_numpy(x)
        np.testing.assert_allclose(a[k], want[0], rtol=1e-13)
        np.testing.assert_allclose(b[k], want[1], rtol=1e-13)
    g = gt.vmap(gt.grad(loss))(xs)
    for k, x in enumerate(xs):
        np.testing.assert_allclose(g[k], gt.grad(loss)(x), rtol=1e-13)


def test_switch_of_three_branches_with_three_outputs():
    branches = [lambda v: (v, gt.sum(v), v * 2.0), lambda v: (gt.sin(v), gt.max(v), v),
                lambda v: (v * v, gt.min(v), -v)]
    numpy = [lambda v: (v, v.sum(), v * 2), lambda v: (np.sin(v), v.max(), v), lambda v: (v * v, v.min(), -v)]
    f = lambda i, x: gt.switch(i, branches, x)
    fn = gt.make_ir(f, 0, X)
    assert [len(e.outvars) for e in fn.eqns if e.op.name == "cond"] == [3]
    code = compile_function(fn)
    for i in (-1, 0, 1, 2, 7):
        want = numpy[min(max(i, 0), 2)](X)
        for got in (code(np.int64(i), X), ir.eval_function(fn, [np.int64(i), X])):
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-13)


def test_dce_drops_the_outputs_nobody_reads_from_the_branches():
    fn = optimize(gt.make_ir(lambda x: shared(x)[1], X))
    (c,) = [e for e in fn.eqns if e.op.name == "cond"]
    assert len(c.outvars) == 1 and all(len(b.outvars) == 1 for b in c.params["branches"])
    np.testing.assert_allclose(ir.eval_function(fn, [X])[0], shared_numpy(X)[1], rtol=1e-13)


def test_cse_merges_two_equal_conds_as_whole_equations():
    def twice(x):
        a, b = shared(x)
        c, d = shared(x)
        return gt.sum(a * c) + b * d
    fn = gt.make_ir(twice, X)
    # the two traces hold different (equal) Functions; make them one equation's twin by hand
    eqns = list(fn.eqns)
    first, second = [i for i, e in enumerate(eqns) if e.op.name == "cond"]
    e1, e2 = eqns[first], eqns[second]
    eqns[second] = ir.Eqn(e2.op, e2.inputs, e1.params, e2.outvars)
    merged = cse(ir.Function(fn.invars, eqns, fn.outvars))
    assert [e.op.name for e in merged.eqns].count("cond") == 1
    a, b = shared_numpy(X)
    np.testing.assert_allclose(ir.eval_function(merged, [X])[0], np.sum(a * a) + b * b, rtol=1e-13)


def test_sparse_jacobian_sees_every_output_of_the_equation():
    def f(x):
        a, b = gt.cond(gt.sum(x) > 0, lambda v: (v * 2.0, gt.sum(v) * v), lambda v: (v * 3.0, gt.sum(v * v) * v), x)
        return a + b
    for x in (X, -X):
        dense = gt.jacobian(f)(x)
        assert np.count_nonzero(dense) == 9
        np.testing.assert_allclose(gt.sparse_jacobian(f)(x).toarray(), dense, rtol=1e-13)
