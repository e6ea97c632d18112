"""A Python loop recorded on a GradientTape: the backward plan re-rolls it into a scan before
the adjoint (ir/reroll.py), reads the rows of a constant as one stacked input, and gives the
unrolled plan's gradients, to second order with nested tapes."""
import numpy as np

import gradtape as gt
from gradtape import ir
from gradtape.tracer import backward_cache
from gradtape.tracer.backward import BackwardParts, Question
from gradtape.tracer.stacked_leaves import LeafStack
from tests.reroll_programs import rnn_loss, small_loops_too  # noqa: F401  (an autouse fixture)

RNG = np.random.default_rng(5)
H = RNG.normal(size=4) * 0.5
W = RNG.normal(size=(4, 4)) * 0.4
U = RNG.normal(size=(4, 3)) * 0.4
XS = RNG.normal(size=(10, 3))


def tape_gradient(xs, watch_xs=False):
    w = gt.Variable(W)
    xs = gt.constant(xs)
    with gt.GradientTape() as tape:
        if watch_xs:
            tape.watch(xs)
        y = rnn_loss(gt.constant(H), w, gt.constant(U), xs)
    return [np.asarray(g) for g in tape.gradient(y, [w, xs] if watch_xs else [w])]


def test_the_plan_is_a_loop_reading_the_rows_as_one_input(compile_at_once):
    (g,) = tape_gradient(XS)
    plan = backward_cache._recent[1]
    ops = [e.op.name for e in plan.fn.eqns]
    assert "scan" in ops and "tanh" not in ops and len(ops) < 40, ops
    # u @ xs[i], of constants, is not recorded: a constant leaf per step, which the plan takes
    # stacked, in one input.
    assert [v.type.shape for v in plan.fn.invars] == [W.shape, H.shape, (len(XS), len(H))]
    (g_again,) = tape_gradient(XS + 1.0)  # the plan again, on other rows
    assert backward_cache._recent[1] is plan
    staged = gt.grad(rnn_loss, argnums=1)
    np.testing.assert_allclose(g, staged(H, W, U, XS), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g_again, staged(H, W, U, XS + 1.0), rtol=1e-12, atol=1e-15)


def parts_of(steps):
    """The BackwardParts of the RNN's gradient with respect to w over `steps` rows."""
    xs = np.resize(XS, (steps, XS.shape[1]))
    w = gt.Variable(W)
    with gt.GradientTape(persistent=True) as tape:
        y = rnn_loss(gt.constant(H), w, gt.constant(U), gt.constant(xs))
    rec = tape._tape
    return BackwardParts(rec, Question(rec, [y], [w]))


def test_the_rows_are_one_input_before_the_adjoint_whatever_the_trip_count():
    # Joined right after the re-roll, the rows are no equation of the adjoint's, the optimizer's
    # or the plan's: the backward function is the same size at 8 and 64 steps.
    small, large = parts_of(8), parts_of(64)
    for parts, steps in ((small, 8), (large, 64)):
        (stack,) = [v for v in parts.leaves if v.__class__ is LeafStack]
        assert len(stack) == steps and all(v.type.shape == (U.shape[0],) for v in stack)
        assert parts.fn.invars[parts.leaves.index(stack)].type.shape == (steps, U.shape[0])
    assert len(small.fn.eqns) == len(large.fn.eqns)
    assert len(small.fn.invars) == len(large.fn.invars)


def test_the_uncached_backward_stacks_the_rows_as_the_plan_does(compile_at_once):
    xs = XS * 0.7
    cached = tape_gradient(xs)
    assert "scan" in [e.op.name for e in backward_cache._recent[1].fn.eqns]
    with backward_cache.disabled():  # a Backward of its own, run by the interpreter
        uncached = tape_gradient(xs)
    staged = gt.grad(rnn_loss, argnums=1)(H, W, U, xs)
    np.testing.assert_allclose(uncached[0], staged, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cached[0], staged, rtol=1e-12, atol=1e-15)


def test_the_gradient_is_the_unrolled_plans(compile_at_once, monkeypatch):
    rolled = tape_gradient(XS, watch_xs=True)
    assert "scan" in [e.op.name for e in backward_cache._recent[1].fn.eqns]
    monkeypatch.setattr(ir.config, "reroll", False)
    backward_cache.clear_cache()
    unrolled = tape_gradient(XS, watch_xs=True)
    assert "scan" not in [e.op.name for e in backward_cache._recent[1].fn.eqns]
    for a, b in zip(rolled, unrolled):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_second_order_with_nested_tapes_against_finite_differences():
    v = RNG.normal(size=W.shape)

    def first(w_value):
        w = gt.Variable(w_value)
        with gt.GradientTape() as tape:
            y = rnn_loss(gt.constant(H), w, gt.constant(U), gt.constant(XS))
        return np.asarray(tape.gradient(y, w))

    w = gt.Variable(W)
    with gt.GradientTape() as outer:
        with gt.GradientTape() as inner:
            y = rnn_loss(gt.constant(H), w, gt.constant(U), gt.constant(XS))
        g = inner.gradient(y, w)
        s = gt.sum(g * v)
    hv = np.asarray(outer.gradient(s, w))
    h = 1e-5
    np.testing.assert_allclose(np.asarray(g), first(W), rtol=1e-12)
    fd = (first(W + h * v) - first(W - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-7 * np.max(np.abs(hv)))
