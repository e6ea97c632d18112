"""A while_loop's value and gradient in one Function run its forward loop once
(codegen/control_stack.py `paired_whiles`): the `while` pushes its carries, the
`while_vjp` pops them. Checked against the same loop as a scan, finite
differences, the interpreter, and the loop lowered without the pairing."""
import numpy as np

import gradtape as gt
from gradtape import ir
from gradtape.codegen import lowering
from gradtape.codegen.control import WhileLoop
from gradtape.codegen.control_stack import StackedWhileVJP, WhilePop, WhilePush, paired_whiles
from gradtape.codegen.lowering import SubFunction
from gradtape.ir import Eqn, Function, Var
from gradtape.runtime import compile_function
from gradtape.testing import check_grads
from tests.control_flow.rk4_step import rk4_step

STEPS = 40


def loop_kinds(fn):
    kinds = (WhileLoop, WhilePush, WhilePop, StackedWhileVJP)
    return [type(s).__name__ for s in SubFunction(fn).ctx.steps if isinstance(s, kinds)]


def by_while(th, y0):
    def body(c):
        y, s, i = c
        y = rk4_step(y, th)
        return y, s + gt.sum(y * y), i + 1
    return gt.while_loop(lambda c: c[2] < STEPS, body, (y0, 0.0, 0))[1]


def by_scan(th, y0):
    def step(c, _):
        y, s = c
        y = rk4_step(y, th)
        return (y, s + gt.sum(y * y)), None
    return gt.scan(step, (y0, 0.0), None, length=STEPS)[0][1]


TH, Y0 = np.linspace(0.5, 1.5, 6), np.linspace(-1.0, 1.0, 6)


def test_value_and_gradient_share_one_run_of_the_loop_and_match_the_scan():
    fn = gt.make_ir(gt.value_and_grad(by_while, argnums=(0, 1)), TH, Y0)
    assert loop_kinds(fn) == ["WhilePush", "WhilePop"]       # no second forward loop
    code = compile_function(fn)
    assert code.native, code.fallback_reason
    got = code(TH, Y0)
    want = gt.value_and_grad(by_scan, argnums=(0, 1))(TH, Y0)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-14)
    for g, w in zip(got[1:], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    reference = ir.eval_function(fn, [TH, Y0])
    for g, r in zip(got, reference):
        np.testing.assert_allclose(g, r, rtol=1e-13)
    check_grads(by_while, [TH, Y0], order=1, modes=("rev",))


def test_paired_loops_give_the_bits_of_the_loops_lowered_apart(monkeypatch):
    fn = gt.make_ir(gt.value_and_grad(by_while, argnums=(0, 1)), TH, Y0)
    paired = compile_function(fn)(TH, Y0)
    lowered = []

    def no_pairs(fn):
        lowered.append(fn)
        return {}
    monkeypatch.setattr(lowering, "paired_whiles", no_pairs)
    apart_fn = gt.make_ir(gt.value_and_grad(lambda th, y0: by_while(th, y0) * 1.0, argnums=(0, 1)), TH, Y0)
    assert loop_kinds(apart_fn) == ["WhileLoop", "StackedWhileVJP"]
    lowered.clear()
    apart = compile_function(apart_fn)(TH, Y0)
    assert lowered                                            # compiled here, without the pairing
    for a, b in zip(paired, apart):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_second_order_matches_the_scan_and_finite_differences():
    hvp = lambda th, y0: gt.grad(lambda t: gt.sum(gt.grad(by_while)(t, y0) * np.linspace(1, 2, 6)))(th)
    hvp_scan = lambda th, y0: gt.grad(lambda t: gt.sum(gt.grad(by_scan)(t, y0) * np.linspace(1, 2, 6)))(th)
    np.testing.assert_allclose(hvp(TH, Y0), hvp_scan(TH, Y0), rtol=1e-12)
    check_grads(by_while, [TH, Y0], order=2, modes=("rev",))


def test_a_loop_with_two_gradients_pairs_with_the_first_and_runs_the_second_apart():
    """The stack is popped (and freed) once: the second while_vjp of the same loop keeps its own run."""
    joint, _ = ir.vjp(gt.make_ir(by_while, TH, Y0), [0, 1])
    (v,) = [e for e in joint.eqns if e.op.name == "while_vjp"]
    twin = Eqn(v.op, v.inputs, v.params, [Var(o.type) for o in v.outvars])
    eqns = list(joint.eqns)
    eqns.insert(eqns.index(v) + 1, twin)
    fn = Function(joint.invars, eqns, [joint.outvars[0]] + list(v.outvars) + list(twin.outvars))  # value kept
    pairs = paired_whiles(fn)
    assert set(pairs) == {v, next(e for e in eqns if e.op.name == "while")}
    assert loop_kinds(fn) == ["WhilePush", "WhilePop", "StackedWhileVJP"]
    args = [TH, Y0, np.float64(1.0)]
    got = compile_function(fn)(*args)
    want = ir.eval_function(fn, args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    n = len(v.outvars)
    for first, second in zip(got[1:1 + n], got[1 + n:]):
        assert np.asarray(first).tobytes() == np.asarray(second).tobytes()


def test_zero_and_one_trip_loops_pair_too():
    def f(x, limit):
        v = gt.while_loop(lambda v: gt.sum(v) < limit, lambda v: v * 1.5 + gt.sin(v), x)
        return gt.sum(v * v)
    x = np.array([0.4, 0.7])
    for limit, steps in ((0.5, 0), (2.0, 1)):
        fn = gt.make_ir(gt.value_and_grad(f), x, limit)
        assert loop_kinds(fn) == ["WhilePush", "WhilePop"]
        value, grad = compile_function(fn)(x, np.float64(limit))
        v = x.copy()
        jac = np.eye(2)
        for _ in range(steps):
            jac = np.diag(1.5 + np.cos(v)) @ jac
            v = v * 1.5 + np.sin(v)
        np.testing.assert_allclose(value, np.sum(v * v), rtol=1e-14)
        np.testing.assert_allclose(grad, jac.T @ (2 * v), rtol=1e-13)
