"""Deferred eager execution (gradtape/tracer/deferred.py): ops a single tape records
are computed when read, and tape.gradient recomputes the forward in its own
(compiled) function. Every value is checked against NumPy written by hand."""
import sys

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.tracer import backward_cache, deferred
from gradtape.tracer.deferred import PendingTensor, is_pending

RNG = np.random.default_rng(7)
X = RNG.normal(size=(12, 3))
Y = (RNG.normal(size=12) > 0).astype(np.float64)


def logreg_loss(w, X, y):
    z = X @ w
    return gt.mean(gt.softplus(z) - y * z)


def logreg_grad_numpy(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return X.T @ (p - y) / len(y)


def test_recorded_ops_are_pending_until_read_and_then_match_numpy():
    w = gt.Variable([0.5, -1.0, 2.0])
    with gt.GradientTape() as tape:
        z = X @ w
        loss = logreg_loss(w, X, Y)
    assert type(z) is PendingTensor and is_pending(z) and is_pending(loss)
    assert z.shape == (12,) and z.dtype == np.float64 and loss.shape == ()
    np.testing.assert_allclose(z.numpy(), X @ w.numpy())
    assert not is_pending(z)
    zn = X @ w.numpy()
    want = np.mean(np.logaddexp(0.0, zn) - Y * zn)
    np.testing.assert_allclose(float(loss), want, rtol=1e-14)
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), logreg_grad_numpy(w.numpy(), X, Y), rtol=1e-13)


def test_gradient_computes_the_targets_value_and_no_other_forward_value():
    w = gt.Variable([0.1, 0.2, -0.3])
    with gt.GradientTape() as tape:
        z = X @ w
        loss = gt.mean(gt.softplus(z) - Y * z)
    g = tape.gradient(loss, w)
    # The backward recomputed what it needed itself, and its run gave the target's value.
    assert is_pending(z) and not is_pending(loss)
    zn = X @ w.numpy()
    np.testing.assert_allclose(float(loss), np.mean(np.logaddexp(0.0, zn) - Y * zn), rtol=1e-14)
    np.testing.assert_allclose(g.numpy(), logreg_grad_numpy(w.numpy(), X, Y), rtol=1e-13)
    np.testing.assert_allclose(z.numpy(), zn, rtol=1e-14)  # still computed when read


def test_compiled_recomputing_plan_matches_numpy_over_a_training_loop(compile_at_once):
    w = gt.Variable(np.zeros(3))
    w_ref = np.zeros(3)
    opt = gt.optimizers.SGD(0.5)
    for _ in range(6):
        with gt.GradientTape() as tape:
            loss = logreg_loss(w, X, Y)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        w_ref = w_ref - 0.5 * logreg_grad_numpy(w_ref, X, Y)
    np.testing.assert_allclose(w.numpy(), w_ref, rtol=1e-12)
    info = backward_cache.cache_info()
    assert (info["misses"], info["hits"]) == (1, 5)
    plan = next(iter(backward_cache._plans.values()))
    assert plan._compiled is not None and plan._compiled.native
    # the plan takes only the leaves (w, X, y): no forward value is an input
    assert [v.type.shape for v in plan.fn.invars] == [(3,), (12, 3), (12,)]


def test_reading_a_value_after_the_gradient_still_matches_numpy():
    w = gt.Variable([1.0, 2.0, 3.0])
    with gt.GradientTape() as tape:
        h = gt.tanh(X @ w)
        loss = gt.sum(h * h)
    g = tape.gradient(loss, w)
    t = np.tanh(X @ w.numpy())
    np.testing.assert_allclose(h.numpy(), t, rtol=1e-14)
    np.testing.assert_allclose(loss.numpy(), np.sum(t * t), rtol=1e-14)
    np.testing.assert_allclose(g.numpy(), X.T @ (2 * t * (1 - t * t)), rtol=1e-12)


def test_a_variable_assigned_after_an_op_keeps_the_value_the_op_read():
    v = gt.Variable([1.0, 2.0])
    with gt.GradientTape() as tape:
        y = v * 3.0
        v.assign([10.0, 20.0])
        z = v * 3.0
    np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(z.numpy(), [30.0, 60.0])
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [3.0, 3.0])


def test_a_shape_error_is_raised_at_the_op():
    w = gt.Variable(np.ones(3))
    with gt.GradientTape():
        with pytest.raises(ir.ShapeError, match="broadcast"):
            w + np.ones(4)


def test_gather_is_not_deferred_so_a_bad_index_fails_at_the_op():
    w = gt.Variable(np.ones(3))
    with gt.GradientTape():
        with pytest.raises(IndexError):
            gt.take(w, np.array([5]))


def test_a_long_chain_is_computed_without_recursion():
    w = gt.Variable(np.array([1.0]))
    n = sys.getrecursionlimit() + 500
    with gt.GradientTape() as tape:
        y = w
        for _ in range(n):
            y = y + 1.0
    assert is_pending(y)
    np.testing.assert_array_equal(y.numpy(), [1.0 + n])
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [1.0])


def test_nested_tapes_defer_too_and_give_second_derivatives():
    x = gt.constant(0.7)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = gt.sin(x) * x
        assert is_pending(y)  # recorded on both tapes, computed by neither yet
        dy = inner.gradient(y, x)
        assert is_pending(dy)  # the replayed backward, recorded (deferred) on the outer tape
    d2y = outer.gradient(dy, x)
    np.testing.assert_allclose(dy.numpy(), np.cos(0.7) * 0.7 + np.sin(0.7), rtol=1e-14)
    np.testing.assert_allclose(d2y.numpy(), -np.sin(0.7) * 0.7 + 2 * np.cos(0.7), rtol=1e-14)
    np.testing.assert_allclose(y.numpy(), np.sin(0.7) * 0.7, rtol=1e-14)


def test_results_are_the_same_with_deferral_off(monkeypatch):
    w0 = np.array([0.3, -0.2, 0.9])

    def run():
        w = gt.Variable(w0)
        with gt.GradientTape(persistent=True) as tape:
            loss = logreg_loss(w, X, Y)
            h = gt.exp(X @ w)
        return loss.numpy(), tape.gradient(loss, w).numpy(), tape.jacobian(h, w).numpy()

    deferred_results = run()
    monkeypatch.setattr(deferred, "enabled", False)
    eager_results = run()
    for a, b in zip(deferred_results, eager_results):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    e = np.exp(X @ w0)
    np.testing.assert_allclose(deferred_results[2], e[:, None] * X, rtol=1e-13)


def test_an_unrecorded_op_on_a_pending_value_computes_it():
    w = gt.Variable([2.0, 3.0])
    with gt.GradientTape() as tape:
        y = w * w
        with tape.stop_recording():
            z = y + 1.0  # not recorded: computed at once, from y's value
    assert not is_pending(z) and not is_pending(y)
    np.testing.assert_array_equal(z.numpy(), [5.0, 10.0])


def test_a_target_read_before_the_gradient_uses_the_values_it_computed(compile_at_once):
    w = gt.Variable([0.4, -0.1, 0.2])
    with gt.GradientTape() as tape:
        loss = logreg_loss(w, X, Y)
    float(loss)  # computes every value the loss depends on
    g = tape.gradient(loss, w)
    np.testing.assert_allclose(g.numpy(), logreg_grad_numpy(w.numpy(), X, Y), rtol=1e-13)
    plan = next(iter(backward_cache._plans.values()))
    # forward values are inputs of this plan: more than the three leaves
    assert len(plan.fn.invars) > 3


def test_values_read_after_the_gradient_come_from_the_compiled_plan(compile_at_once, monkeypatch):
    forced = []
    real_force = deferred._force
    monkeypatch.setattr(deferred, "_force", lambda t: forced.append(t) or real_force(t))
    w = gt.Variable([0.3, -0.2, 0.1])
    for step in range(4):
        with gt.GradientTape() as tape:
            z = X @ w
            loss = gt.mean(gt.softplus(z) - Y * z)
            other = gt.sum(gt.exp(w))
            unused = gt.sum(gt.cos(w))                    # recorded, not a target: stays pending
        g = tape.gradient([loss, other], w)
        assert not is_pending(loss) and not is_pending(other) and is_pending(unused)
        np.testing.assert_allclose(float(other), np.sum(np.exp(w.numpy())), rtol=1e-12)
        zn = X @ w.numpy()
        np.testing.assert_allclose(float(loss), np.mean(np.logaddexp(0.0, zn) - Y * zn), rtol=1e-12)
        want = logreg_grad_numpy(w.numpy(), X, Y) + np.exp(w.numpy())
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)
        w_then = w.numpy().copy()
        w.assign(w_then * 0.9 + 0.05)
    assert forced == []  # no value was recomputed op by op
    plan = next(iter(backward_cache._plans.values()))
    assert plan._compiled is not None and plan._compiled.native
    info = backward_cache.cache_info()
    assert (info["misses"], info["hits"]) == (1, 3)
    np.testing.assert_allclose(float(unused), np.sum(np.cos(w_then)), rtol=1e-14)  # computed when read


def test_a_persistent_tape_asked_twice_reuses_the_recomputing_plan():
    backward_cache.clear_cache()
    w = gt.Variable([0.3, -0.2, 0.1])
    with gt.GradientTape(persistent=True) as tape:
        loss = logreg_loss(w, X, Y)
    first = tape.gradient(loss, w).numpy()
    assert not is_pending(loss)
    second = tape.gradient(loss, w).numpy()
    np.testing.assert_array_equal(first, second)
    info = backward_cache.cache_info()
    assert (info["misses"], info["hits"]) == (1, 1)


@pytest.mark.parametrize("force", ["python", "c"])
def test_the_c_force_computes_what_the_python_one_does(force, monkeypatch):
    """deferred._force is _crecord.force with the C recorder: the same values, bit for bit,
    from Variables, held arrays, constants and chains of pending ops."""
    from gradtape.tracer import _crecord, dispatch
    if force == "c" and dispatch.bind is not getattr(_crecord, "bind", None):
        pytest.skip("the C recorder is not in use")
    monkeypatch.setattr(deferred, "_force", deferred.python_force if force == "python" else _crecord.force)
    w = gt.Variable([0.5, -1.0, 2.0])
    held = X.copy()  # writeable: read through its Held
    with gt.GradientTape():
        z = held @ w
        y = gt.tanh(z)[2:9] * gt.constant(np.arange(7.0)) + 1.5
        loss = gt.sum(gt.reshape(y, (7, 1)) ** 2, axis=0)
    zn = X @ w.numpy()
    want = np.sum(np.reshape(np.tanh(zn)[2:9] * np.arange(7.0) + 1.5, (7, 1)) ** 2, axis=0)
    np.testing.assert_array_equal(loss.numpy(), want)
    assert not is_pending(z) and z._args is None
