"""Reverse mode through scan stores each step's residuals (ir/ops/loops.py `split_step_vjp`): the
values its VJP reads that depend on the step, computed once by the forward loop, so the
backward loop does not evaluate the step again; values of the constants alone are
recomputed, not stacked. Derivatives are checked against finite differences, the unrolled
loop and the interpreter; the trade of memory for time against gt.checkpoint."""
import numpy as np

import gradtape as gt
from gradtape import codegen, ir
from gradtape.ir.optimize import optimize
from gradtape.runtime import compile_function
from gradtape.testing import check_grads
from tests.control_flow.rk4_step import rk4_step

TH, Y0 = np.linspace(0.5, 1.5, 5), np.linspace(-1.0, 1.0, 5)


def trajectory_loss(th, y0, steps=30, checkpointed=False):
    def step(c, _):
        y, s = c
        y = rk4_step(y, th)
        return (y, s + gt.sum(y * y)), None
    body = step
    if checkpointed:  # the step recomputed in the backward pass: only the carries stored
        inner = gt.checkpoint(lambda c: step(c, None)[0])
        body = lambda c, _: (inner(c), None)
    return gt.scan(body, (y0, 0.0), None, length=steps)[0][1]


def unrolled_loss(th, y0, steps=30):
    y, s = y0, 0.0
    for _ in range(steps):
        y = rk4_step(y, th)
        s = s + gt.sum(y * y)
    return s


def op_counts(fn):
    """{op name: uses} in the body of each scan of fn, in order."""
    out = []
    for e in fn.eqns:
        if e.op.name == "scan":
            counts = {}
            for b in e.params["body"].eqns:
                counts[b.op.name] = counts.get(b.op.name, 0) + 1
            out.append(counts)
    return out


def test_the_backward_loop_reads_the_cosines_the_forward_loop_computed():
    fn = optimize(gt.make_ir(gt.value_and_grad(trajectory_loss, argnums=(0, 1)), TH, Y0))
    forward, backward = op_counts(fn)                  # one forward loop: the primal merged in
    assert forward.get("sin") == 4 and forward.get("cos") == 4
    assert "sin" not in backward and "cos" not in backward
    got = compile_function(fn)(TH, Y0)
    want = gt.value_and_grad(lambda th, y0: unrolled_loss(th, y0), argnums=(0, 1))(TH, Y0)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    for g, w in zip(got[1:], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    for g, r in zip(got, ir.eval_function(fn, [TH, Y0])):
        np.testing.assert_allclose(g, r, rtol=1e-13)
    check_grads(trajectory_loss, [TH, Y0], order=2, modes=("rev",))


def test_values_of_the_constants_alone_are_recomputed_not_stacked():
    w = np.array([0.3, -0.8, 1.1])
    xs = np.random.default_rng(0).normal(size=(12, 3))

    def loss(h, w):
        scale = gt.exp(w)                              # outside the body: a constant of the loop
        def step(c, x):
            return gt.tanh(c * gt.cos(w) + x * scale), None   # cos(w): inside, but of the constant only
        return gt.sum(gt.scan(step, h, xs)[0] ** 2)

    joint, _ = ir.vjp(gt.make_ir(loss, Y0[:3], w), [0, 1])
    scans = [e for e in joint.eqns if e.op.name == "scan"]
    residual_scan = max(scans, key=lambda e: len(e.outvars))
    body = residual_scan.params["body"]
    made_by = {v: e.op.name for e in body.eqns for v in e.outvars}
    made_by.update({body.invars[0]: "the carry", body.invars[1]: "x", body.invars[2]: "w", body.invars[3]: "scale"})
    # stacked: tanh's derivative 1 - tanh^2 and the carry (w's cotangent reads c); not cos(w), x or scale
    assert sorted(made_by[v] for v in body.outvars[1:]) == ["sub", "the carry"]
    check_grads(loss, [Y0[:3], w], order=2, modes=("rev", "fwd"))


def test_checkpointing_the_body_keeps_the_carries_only():
    n = 100
    sizes = {}
    for checkpointed in (False, True):
        f = lambda th, y0, c=checkpointed: trajectory_loss(th, y0, n, c)
        fn = gt.make_ir(gt.grad(f, argnums=(0, 1)), TH, Y0)
        sizes[checkpointed] = codegen.lower(fn, "g").arena_bytes
        np.testing.assert_allclose(compile_function(fn)(TH, Y0)[0],
                                   gt.grad(lambda th, y0: unrolled_loss(th, y0, n))(TH, Y0), rtol=1e-12)
    carries = Y0.nbytes + 8
    assert sizes[True] < 2 * n * carries               # a stored carry per step, and O(1)
    assert sizes[False] > 4 * n * carries              # cosines and stage values per step
