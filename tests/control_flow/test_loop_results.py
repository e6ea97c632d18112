"""A loop with several results is one equation with several outputs (ir/op.py
multiple_results): printed once, evaluated once by the interpreter, lowered as one native
loop, and the stacked outputs nobody reads are dropped from its body."""
import re

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.codegen.control import Loop, WhileLoop
from gradtape.codegen.lowering import SubFunction
from gradtape.ir.ops.loops import scan_p
from gradtape.ir.ops.while_loop import while_p
from gradtape.ir.optimize import optimize
from gradtape.ir.op import impls
from gradtape.runtime import compile_function
from gradtape.tracer.dispatch import bind


def pytree_scan(h, xs, w):
    """A scan whose carry is a dict of three leaves and whose y is a pair."""
    def step(c, x):
        a = gt.tanh(c["a"] * w + x)
        b = c["b"] + a * a
        n = c["n"] + 1.0
        return {"a": a, "b": b, "n": n}, (a * 2.0, b - x)
    carry, (ya, yb) = gt.scan(step, {"a": h, "b": h * 0.0, "n": 0.0}, xs)
    return gt.sum(carry["a"]) + gt.sum(carry["b"]) * carry["n"] + gt.sum(ya * yb)


def numpy_pytree_scan(h, xs, w):
    a, b, n, total = h, h * 0.0, 0.0, 0.0
    for x in xs:
        a = np.tanh(a * w + x)
        b = b + a * a
        n += 1.0
        total += np.sum((a * 2.0) * (b - x))
    return np.sum(a) + np.sum(b) * n + total


def halving(v):
    def body(c):
        x, k, s = c
        return x * 0.5, k + 1, s + x
    x, k, s = gt.while_loop(lambda c: c[0] > 1.0, body, (v, 0, v * 0.0))
    return x + s * k.astype(v.dtype)


H = np.array([0.3, -0.8])
XS = np.array([[0.5, 0.1], [-0.4, 0.9], [1.2, -0.3]])
W = np.array([0.7, -1.2])


class Counting:
    """Counts the runs of an op's reference (the loop itself) in the interpreter."""

    def __init__(self, op):
        self.op, self.runs = op, 0

    def __enter__(self):
        self.inner = impls[self.op]

        def counted(*args, **params):
            self.runs += 1
            return self.inner(*args, **params)
        impls[self.op] = counted
        return self

    def __exit__(self, *exc):
        impls[self.op] = self.inner


def loops(fn, kind):
    return sum(isinstance(s, kind) for s in SubFunction(fn).ctx.steps)


def test_a_pytree_scan_is_one_equation_of_five_outputs_one_loop():
    fn = gt.make_ir(pytree_scan, H, XS, W)
    (eqn,) = [e for e in fn.eqns if e.op is scan_p]
    assert len(eqn.outvars) == 5       # 3 carries + 2 ys
    assert str(fn).count("= scan[") == 1
    printed = str(fn).split("= scan[")[0].rsplit(";", 1)[-1]
    # `e:f64[2], f:f64[2], g:f64[], h:f64[3,2], i:f64[3,2] = scan[...]`
    assert len(re.findall(r"\w+:\w+\[[\d,]*\]", printed)) == 5
    with Counting(scan_p) as c:
        (value,) = ir.eval_function(fn, [H, XS, W])
    assert c.runs == 1
    np.testing.assert_allclose(value, numpy_pytree_scan(H, XS, W), rtol=1e-13)
    assert loops(fn, Loop) == 1
    code = compile_function(fn)
    assert code.native
    np.testing.assert_allclose(code(H, XS, W)[0], numpy_pytree_scan(H, XS, W), rtol=1e-13)


def test_the_gradient_of_a_pytree_scan_runs_two_loops():
    """Reverse mode: the forward loop (which also stacks the residuals: the optimizer merges
    the primal loop into the one stacking them) and the backward loop, whatever the number
    of carries."""
    fn, _ = ir.vjp(gt.make_ir(pytree_scan, H, XS, W), [0, 1, 2])
    fn = optimize(fn)
    assert sum(e.op is scan_p for e in fn.eqns) == 2
    with Counting(scan_p) as c:
        got = ir.eval_function(fn, [H, XS, W, np.array(1.0)])
    assert c.runs == 2
    assert loops(fn, Loop) == 2
    g = gt.grad(pytree_scan)(H, XS, W)
    np.testing.assert_allclose(got[1], g, rtol=1e-12)
    eps, e0 = 1e-6, np.array([1.0, 0.0])
    fd = (numpy_pytree_scan(H + eps * e0, XS, W) - numpy_pytree_scan(H - eps * e0, XS, W)) / (2 * eps)
    np.testing.assert_allclose(got[1][0], fd, rtol=1e-7)


def test_a_while_loop_with_three_carries_runs_once():
    fn = gt.make_ir(halving, 37.0)
    assert [len(e.outvars) for e in fn.eqns if e.op is while_p] == [3]
    with Counting(while_p) as c:
        (value,) = ir.eval_function(fn, [np.array(37.0)])
    assert c.runs == 1
    assert loops(fn, WhileLoop) == 1
    x, k, s = 37.0, 0, 0.0
    while x > 1.0:
        x, k, s = x * 0.5, k + 1, s + x
    np.testing.assert_allclose(value, x + s * k, rtol=1e-15)
    np.testing.assert_allclose(compile_function(fn)(np.array(37.0))[0], x + s * k, rtol=1e-15)


@pytest.mark.parametrize("used", [[0], [1], [0, 1]])
def test_only_the_results_a_function_uses_are_written(used):
    def f(h, xs, w):
        carry, ys = gt.scan(lambda c, x: (c * w + x, gt.sin(c)), h, xs)
        return [carry, ys][used[0]] if len(used) == 1 else (carry, ys)
    fn = gt.make_ir(f, H, XS, W)
    code = compile_function(fn)
    want = ir.eval_function(fn, [H, XS, W])
    for got, ref in zip(code(H, XS, W), want):
        np.testing.assert_allclose(got, ref, rtol=1e-14)


def test_dce_drops_the_stacked_outputs_nobody_reads_from_the_body():
    def f(h, xs, w):
        carry, (ya, yb) = gt.scan(lambda c, x: (c * w + x, (gt.sin(c), gt.exp(c) * x)), h, xs)
        return gt.sum(carry) + gt.sum(yb)
    fn = optimize(gt.make_ir(f, H, XS, W))
    (eqn,) = [e for e in fn.eqns if e.op is scan_p]
    assert len(eqn.outvars) == 2 and len(eqn.params["body"].outvars) == 2     # carry and yb
    assert "sin" not in str(eqn.params["body"])
    c, total = H, 0.0
    for x in XS:
        total += np.sum(np.exp(c) * x)
        c = c * W + x
    want = np.sum(c) + total
    np.testing.assert_allclose(ir.eval_function(fn, [H, XS, W])[0], want, rtol=1e-13)
    np.testing.assert_allclose(compile_function(fn)(H, XS, W)[0], want, rtol=1e-13)


def test_nested_tapes_replay_equations_of_several_outputs():
    """A @differentiable function holding a two-carry scan and a two-output cond, on nested
    tapes: the outer tape records the inner backward pass, which replays those equations
    output by output. Against central differences of the staged gradient."""
    @gt.differentiable
    def f(x):
        def step(c, t):
            return (gt.sin(c[0]) * t + c[1], c[1] * 0.9 + c[0]), c[0] * c[1]
        (a, b), ys = gt.scan(step, (x, x * 0.5), np.array([0.3, 0.7, 1.1]))
        y, s = gt.cond(gt.sum(a) > 0, lambda u, v: (u * v, gt.sum(u)), lambda u, v: (u + v, gt.sum(v)), a, b)
        return gt.sum(y) + s + gt.sum(ys)

    x0 = np.array([0.4, -0.2])
    x = gt.constant(x0)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
        s = gt.sum(g * g)
    h = outer.gradient(s, x).numpy()
    grad = gt.grad(f)
    np.testing.assert_allclose(g.numpy(), grad(x0), rtol=1e-13)
    e = 1e-6
    fd = [(np.sum(grad(x0 + e * d) ** 2) - np.sum(grad(x0 - e * d) ** 2)) / (2 * e) for d in np.eye(2)]
    np.testing.assert_allclose(h, fd, rtol=1e-6)


def test_a_replay_on_tensors_records_each_output_of_an_equation():
    """eval_function with bind (how a tape replays a backward pass for an outer tape) runs an
    equation of several outputs as one `call` per output, recorded: the tape differentiates it."""
    def f(x):
        def step(c, t):
            return (gt.sin(c[0]) * t + c[1], c[1] * 0.9 + c[0]), c[0] * c[1]
        (a, b), ys = gt.scan(step, (x, x * 0.5), np.array([0.3, 0.7, 1.1]))
        y, s = gt.cond(gt.sum(a) > 0, lambda u, v: (u * v, gt.sum(u)), lambda u, v: (u + v, gt.sum(v)), a, b)
        return gt.sum(y) + s + gt.sum(ys)

    fn = gt.make_ir(f, np.ones(2))
    x0 = np.array([0.4, -0.2])
    x = gt.constant(x0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        (y,) = ir.eval_function(fn, [x], bind=bind)
    np.testing.assert_allclose(float(y), ir.eval_function(fn, [x0])[0], rtol=1e-15)
    e = 1e-6
    fd = [(ir.eval_function(fn, [x0 + e * d])[0] - ir.eval_function(fn, [x0 - e * d])[0]) / (2 * e)
          for d in np.eye(2)]
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), fd, rtol=1e-7)


def test_reverse_mode_runs_the_forward_loop_once():
    """The primal scan and the scan stacking the residuals share their body's equations: the
    optimizer merges them (ir/loop_merge.py), so value_and_grad is one forward and one
    backward loop, with the values and gradients of the unmerged program."""
    def traj(h, xs, w):
        (c, n), ys = gt.scan(lambda c, x: ((gt.tanh(c[0] * w + x), c[1] + 1.0), gt.sum(c[0] * c[0])), (h, 0.0), xs)
        return gt.sum(c) * n + gt.sum(ys)
    raw = gt.make_ir(gt.value_and_grad(traj, argnums=(0, 2)), H, XS, W)
    fn = optimize(raw)
    assert sum(e.op is scan_p for e in fn.eqns) == 2
    assert loops(fn, Loop) == 2
    want = ir.eval_function(raw, [H, XS, W])
    for got in (ir.eval_function(fn, [H, XS, W]), compile_function(fn)(H, XS, W)):
        for g, r in zip(got, want):
            np.testing.assert_allclose(g, r, rtol=1e-13)
    e = 1e-6
    value = lambda w: ir.eval_function(gt.make_ir(traj, H, XS, W), [H, XS, w])[0]
    fd = [(value(W + e * d) - value(W - e * d)) / (2 * e) for d in np.eye(2)]
    np.testing.assert_allclose(want[2], fd, rtol=1e-7)
