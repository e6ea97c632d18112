"""A recording's last value read by a compiled plan once its program repeats (value_plans.py):
the values against NumPy's, the gradients after against finite differences, and what must
still hold on that path (held arrays checked, `t[i] = v` after the tape, variables assigned)."""
import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer import backward_cache, value_plans
from gradtape.tracer.deferred import is_pending
from gradtape.tracer.errors import ArrayModifiedError

from ..finite_differences import central_differences

STEPS = 30  # ops per step: each 2 positions and more, so a recording is past min_positions
N = value_plans.repeats


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(gt.runtime.config, "async_compile", False)
    backward_cache.clear_cache()
    value_plans._remains.clear()
    yield
    backward_cache.clear_cache()
    value_plans._remains.clear()


def objective(w, x, c):
    """(loss, an intermediate value), on tensors."""
    h = w
    for _ in range(STEPS):
        h = gt.tanh(h * c + x)
    return gt.sum(h * h) + 0.5, h


def numpy_objective(w, x, c):
    h = w
    for _ in range(STEPS):
        h = np.tanh(h * c + x)
    return np.sum(h * h) + 0.5, h



def data(step):
    rng = np.random.default_rng(step)
    return rng.normal(size=4), rng.normal(size=4), rng.uniform(0.5, 1.5, size=4)


def plans_run():
    info = backward_cache.cache_info()
    return info["hits"] + info["misses"]


def test_a_value_read_after_the_block_is_computed_by_a_plan_from_the_nth_step():
    for step in range(N + 3):
        w0, x, c = data(step)
        w = gt.Variable(w0)
        before = plans_run()
        with gt.GradientTape() as tape:
            loss, h = objective(w, x, gt.constant(c))
        want, want_h = numpy_objective(w0, x, c)
        np.testing.assert_allclose(loss.numpy(), want, rtol=1e-12)
        planned = step >= N - 1
        assert (plans_run() - before == 1) == planned
        assert is_pending(h) == planned  # a plan computes the loss alone
        np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-12)
        g = tape.gradient(loss, w).numpy()
        want_g = central_differences(lambda v: numpy_objective(v, x, c)[0], w0)
        np.testing.assert_allclose(g, want_g, rtol=1e-6, atol=1e-9)


def test_a_loss_kept_after_its_tape_is_gone_is_computed_by_a_plan():
    def record(w, x, c):
        with gt.GradientTape() as tape:
            tape.watch(w)
            loss, _ = objective(w, x, c)
        return loss  # the tape and its recording are freed here

    for step in range(N + 3):
        w0, x, c = data(step)
        before = plans_run()
        loss = record(gt.constant(w0), x, gt.constant(c))
        np.testing.assert_allclose(loss.numpy(), numpy_objective(w0, x, c)[0], rtol=1e-12)
        assert (plans_run() - before == 1) == (step >= N - 1)


def test_a_value_read_inside_the_block_then_more_recorded():
    for step in range(N + 2):
        w0, x, c = data(step)
        w = gt.Variable(w0)
        with gt.GradientTape() as tape:
            loss, _ = objective(w, x, gt.constant(c))
            first = loss.numpy()  # read while the tape records: later ops still recorded
            total = loss * 3.0 + gt.sum(w)
        np.testing.assert_allclose(first, numpy_objective(w0, x, c)[0], rtol=1e-12)
        want_g = central_differences(lambda v: 3 * numpy_objective(v, x, c)[0] + np.sum(v), w0)
        np.testing.assert_allclose(tape.gradient(total, w).numpy(), want_g, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("kept", [False, True])
def test_an_array_modified_after_recording_is_refused_on_the_plan_path(kept):
    w0, x, c = data(0)
    for step in range(N + 1):
        held = x.copy()  # writeable: the tape holds it and checks it when a value is computed
        with gt.GradientTape() as tape:
            tape.watch(w := gt.constant(w0))
            loss, _ = objective(w, held, gt.constant(c))
        if kept:
            del tape
        if step == N:  # a plan would read it now
            held[0] += 1.0
            with pytest.raises(ArrayModifiedError):
                loss.numpy()
        else:
            np.testing.assert_allclose(loss.numpy(), numpy_objective(w0, x, c)[0], rtol=1e-12)


def test_what_changes_after_the_tape_is_gone_does_not_change_the_loss():
    """A constant assigned into (`c[0] = v`) and a variable assigned after the tape is freed:
    the loss computes with the values the ops saw, as op by op."""
    w0, x, c0 = data(1)
    w = gt.Variable(w0)
    for step in range(N + 2):
        c = gt.constant(c0)
        with gt.GradientTape() as tape:
            loss, _ = objective(w, x, c)
        del tape
        c[0] = 100.0
        w.assign(w0 + 1.0)
        np.testing.assert_allclose(loss.numpy(), numpy_objective(w0, x, c0)[0], rtol=1e-12)
        w.assign(w0)


def test_short_recordings_and_a_recording_read_as_it_grows_use_no_plan():
    w0, x, c = data(2)
    w = gt.Variable(w0)
    before = plans_run()
    for step in range(N + 2):  # 3 ops: op by op costs less than a native call
        with gt.GradientTape():
            loss = gt.sum(gt.tanh(w * c + x))
        np.testing.assert_allclose(loss.numpy(), np.sum(np.tanh(w0 * c + x)), rtol=1e-12)
    for step in range(N + 2):  # the last value read every step of a loop: a new length each time
        with gt.GradientTape():
            h = w
            for i in range(STEPS):
                h = gt.tanh(h * c + x)
                gt.sum(h).numpy()
    assert plans_run() == before


def test_turned_off_every_value_is_computed_op_by_op(monkeypatch):
    monkeypatch.setattr(value_plans, "enabled", False)
    w0, x, c = data(3)
    for step in range(N + 2):
        with gt.GradientTape() as tape:
            tape.watch(w := gt.constant(w0))
            loss, h = objective(w, x, gt.constant(c))
        np.testing.assert_allclose(loss.numpy(), numpy_objective(w0, x, c)[0], rtol=1e-12)
        assert not is_pending(h)
    assert plans_run() == 0


def test_the_gradient_after_a_value_read_by_a_plan_is_native_from_its_first_run():
    """Reading the loss by a plan leaves the forward uncomputed, so the gradient's plan changes
    to one that recomputes it: that plan is compiled at once (the program has repeated), not
    interpreted for its first runs."""
    for step in range(N + 1):
        w0, x, c = data(step)
        w = gt.Variable(w0)
        with gt.GradientTape() as tape:
            loss, _ = objective(w, x, gt.constant(c))
        loss.numpy()
        want_g = central_differences(lambda v: numpy_objective(v, x, c)[0], w0)
        np.testing.assert_allclose(tape.gradient(loss, w).numpy(), want_g, rtol=1e-6, atol=1e-9)
    recomputing = [plan for key, plan in backward_cache._plans.items() if "recompute" in key.parts[1][-1]]
    assert len(recomputing) == 2  # the value's and the gradient's
    assert all(plan._served.compiled is not None for plan in recomputing)


def test_losses_freed_unread_count_no_meeting():
    """A loop that never reads its loss (a recording dropped, or read by the gradient's plan)
    leaves each loss only a stand-in, and no plan is built for reads that have not repeated."""
    w0, x, c = data(4)
    before = plans_run()
    for step in range(N + 3):
        with gt.GradientTape() as tape:
            tape.watch(w := gt.constant(w0))
            loss, _ = objective(w, x, gt.constant(c))
        del tape, loss
    assert all(left.__class__ is tuple for _, left in value_plans._remains.values())
    with gt.GradientTape() as tape:
        tape.watch(w := gt.constant(w0))
        loss, h = objective(w, x, gt.constant(c))
    del tape
    np.testing.assert_allclose(loss.numpy(), numpy_objective(w0, x, c)[0], rtol=1e-12)
    assert plans_run() == before and not is_pending(h)


def test_a_plan_that_fails_warns_and_the_value_is_computed_op_by_op(monkeypatch):
    def broken(*args, **kwargs):
        raise NotImplementedError("a rule this test takes away")
    monkeypatch.setattr(value_plans, "BackwardParts", broken)
    monkeypatch.setattr(value_plans, "_refused", set())
    w0, x, c = data(5)
    for step in range(N + 2):
        with gt.GradientTape() as tape:
            tape.watch(w := gt.constant(w0))
            loss, _ = objective(w, x, gt.constant(c))
        if step == N - 1:
            with pytest.warns(RuntimeWarning, match="computed op by op instead"):
                value = loss.numpy()
        else:  # before: no plan yet; after: the program is not tried again
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value = loss.numpy()
            assert not caught
        np.testing.assert_allclose(value, numpy_objective(w0, x, c)[0], rtol=1e-12)


def test_the_stand_in_of_a_program_is_made_for_an_empty_recording_too():
    """backward_cache.stand_in keys the count of meetings: equal for equal structures, empty ones
    included (a tape that recorded nothing), and apart from a recording of one op."""
    from gradtape.tracer.recording import Recording
    assert backward_cache.stand_in(Recording()) == backward_cache.stand_in(Recording())
    w0, x, c = data(6)
    with gt.GradientTape() as tape:
        tape.watch(w := gt.constant(w0))
        gt.tanh(w)
    assert backward_cache.stand_in(tape._tape) != backward_cache.stand_in(Recording())
