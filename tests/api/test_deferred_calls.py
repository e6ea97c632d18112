"""A staged function called on a single recording tape is deferred like any recorded op
(gradtape/staging/tape_calls.py): its outputs are PendingTensors, `tape.gradient` computes
the call's forward fused with the backward, and a value read first is computed by the
reference interpreter. Each result is checked against the same call computed at once
(deferral off) and against NumPy."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer import backward_cache, deferred
from gradtape.tracer.deferred import PendingTensor

rng = np.random.default_rng(3)
X = rng.normal(size=(24, 5))
Y = (rng.random(24) < 0.5).astype(float)
W0 = rng.normal(size=5) * 0.3
IDX = np.array([0, 3, 3, 1])

traced = []  # what the Python body saw when it ran (tracing)


def logreg(w, X, y):
    traced.append(type(w).__name__)
    z = X @ w
    return gt.mean(gt.softplus(z) - y * z)


def two_outputs(w, X):
    z = X @ w
    return gt.sum(gt.tanh(z) ** 2), z


def gathers(w):
    return gt.sum(gt.take(w, IDX) ** 2)


LOGREG, TWO, GATHERS = gt.differentiable(logreg), gt.differentiable(two_outputs), gt.differentiable(gathers)


def numpy_logreg_grad(w):
    z = X @ w
    return X.T @ (1 / (1 + np.exp(-z)) - Y) / len(Y)


@pytest.fixture(params=[True, False], ids=["deferred", "at once"])
def deferral(request, monkeypatch):
    monkeypatch.setattr(deferred, "enabled", request.param)
    return request.param


def test_gradient_of_a_deferred_call(deferral):
    w = gt.Variable(W0.copy())
    for _ in range(backward_cache_runs()):  # past the plan's compile, with async compiles waited for
        with gt.GradientTape() as tape:
            loss = LOGREG(w, X, Y)
        assert (type(loss) is PendingTensor) == deferral
        g = tape.gradient(loss, w)
        gt.runtime.wait_for_compiles()
        np.testing.assert_allclose(g.numpy(), numpy_logreg_grad(W0), rtol=1e-12)


def backward_cache_runs():
    from gradtape.tracer import backward_plan

    return backward_plan.compile_after_runs + 2


def test_a_deferred_value_read_equals_the_compiled_one(deferral):
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as tape:
        loss, z = TWO(w, X)
        np.testing.assert_allclose(z.numpy(), X @ W0, rtol=1e-13)  # read on the tape: computed now
        np.testing.assert_allclose(loss.numpy(), np.sum(np.tanh(X @ W0) ** 2), rtol=1e-13)
        total = loss + gt.sum(z)
    np.testing.assert_allclose(loss.numpy(), TWO(W0, X)[0], rtol=1e-13)  # the compiled value
    g = tape.gradient(total, w)
    z0 = X @ W0
    np.testing.assert_allclose(g.numpy(), X.T @ (2 * np.tanh(z0) / np.cosh(z0) ** 2 + 1), rtol=1e-12)


def test_the_body_still_runs_at_the_call():
    traced.clear()
    fresh = gt.differentiable(logreg)
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as tape:
        loss = fresh(w, X, Y)
        assert traced == ["Tensor"]  # traced here, on abstract tensors, though not computed
    assert type(loss) is PendingTensor
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), numpy_logreg_grad(W0), rtol=1e-12)


def test_calls_that_can_fail_on_values_run_at_once():
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as tape:
        s = GATHERS(w)
    assert type(s) is not PendingTensor
    expected = np.zeros(5)
    np.add.at(expected, IDX, 2 * W0[IDX])
    np.testing.assert_allclose(tape.gradient(s, w).numpy(), expected, rtol=1e-13)


def test_calls_on_untracked_arguments_are_computed_and_not_recorded():
    with gt.GradientTape() as tape:
        loss = LOGREG(gt.constant(W0), X, Y)
    assert type(loss) is not PendingTensor and tape._tape.structure == []
    z = X @ W0
    np.testing.assert_allclose(loss.numpy(), np.mean(np.logaddexp(0, z) - Y * z), rtol=1e-13)


def test_two_tapes_see_computed_calls_and_give_second_derivatives():
    x = gt.Variable(np.array([0.3, -1.2]))
    cube = gt.differentiable(lambda v: gt.sum(v**3))
    with gt.GradientTape() as outer:
        with gt.GradientTape() as inner:
            y = cube(x)
        assert type(y) is not PendingTensor
        g = inner.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    np.testing.assert_allclose(outer.gradient(g, x).numpy(), 6 * x.numpy())


def test_a_persistent_tape_answers_twice():
    w = gt.Variable(W0.copy())
    with gt.GradientTape(persistent=True) as tape:
        loss, z = TWO(w, X)
    g1 = tape.gradient(loss, w)
    g2 = tape.gradient(z, w)
    z0 = X @ W0
    np.testing.assert_allclose(g1.numpy(), X.T @ (2 * np.tanh(z0) / np.cosh(z0) ** 2), rtol=1e-12)
    np.testing.assert_allclose(g2.numpy(), X.sum(axis=0), rtol=1e-12)


def test_the_plan_of_a_deferred_call_is_compiled_fused():
    """The backward plan inlines the call, so the compiled function is one flat Function."""
    backward_cache.clear_cache()
    w = gt.Variable(W0.copy())
    for _ in range(backward_cache_runs()):
        with gt.GradientTape() as tape:
            loss = LOGREG(w, X, Y)
        tape.gradient(loss, w)
        gt.runtime.wait_for_compiles()
    plans = [p for p in backward_cache._plans.values() if p._compiled is not None]
    assert len(plans) == 1
    # What the tape recorded: the call, once for the loss's value and once in its backward.
    assert [e.op.name for e in plans[0].fn.eqns] == ["call", "call"]
    from gradtape.tracer.backward_plan import _prepared

    assert "call" not in [e.op.name for e in _prepared(plans[0].fn).eqns]  # what is compiled


def test_a_read_runs_the_compiled_program_once_for_all_outputs(monkeypatch):
    """Not the interpreter (call's NumPy reference): it would be op by op."""
    from gradtape.ir.op import impls
    from gradtape.ir.ops.call import call_p
    from gradtape.staging.program import Program

    def interpreted(*args, **params):
        raise AssertionError("a deferred staged call was computed by the interpreter")

    runs = []
    real_runner = Program.runner

    def counted(self):
        runs.append(self)
        return real_runner(self)

    monkeypatch.setitem(impls, call_p, interpreted)
    monkeypatch.setattr(Program, "runner", counted)
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as tape:
        loss, z = TWO(w, X)
    assert type(loss) is PendingTensor and type(z) is PendingTensor
    np.testing.assert_allclose(loss.numpy(), np.sum(np.tanh(X @ W0) ** 2), rtol=1e-13)
    np.testing.assert_allclose(z.numpy(), X @ W0, rtol=1e-13)
    assert len(runs) == 1
    monkeypatch.undo()  # a plan's first runs are interpreted, calls included
    z0 = X @ W0
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), X.T @ (2 * np.tanh(z0) / np.cosh(z0) ** 2),
                               rtol=1e-12)
