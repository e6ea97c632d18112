"""A tape's backward plans for many sizes of one program share one dynamic version
(runtime/dynamic_serving.py), with the gradients a plan of each size gives."""
import logging

import numpy as np
import pytest

import gradtape as gt
from gradtape import runtime
from gradtape.tracer import backward_cache, backward_plan
from tests.slow_builds import slow_background_builds


@pytest.fixture(autouse=True)
def native_and_fresh(monkeypatch):
    monkeypatch.setattr(runtime.config, "async_compile", False)  # compiles finish in the run that starts them
    backward_cache.clear_cache()
    backward_plan.serve.clear()  # families of plans live as long as the hook: no test sees another's
    yield
    backward_cache.clear_cache()
    backward_plan.serve.clear()


def _step(w, x, y):
    with gt.GradientTape() as tape:
        loss = gt.mean((gt.tanh(x @ w) - y) ** 2)
    return loss, tape.gradient(loss, w)


def _numpy(w, x, y):
    h = np.tanh(x @ w)
    r = h - y
    return np.mean(r ** 2), x.T @ (2 * r / r.size * (1 - h * h))


def test_batch_sizes_share_one_dynamic_plan(caplog):
    caplog.set_level(logging.INFO, logger="gradtape")
    rng = np.random.default_rng(0)
    w = gt.Variable(rng.normal(size=(5, 3)))
    sizes = [40, 41, 7, 100, 64, 33, 2, 1, 250, 18, 90, 3]
    for n in sizes:
        x, y = rng.normal(size=(n, 5)), rng.normal(size=(n, 3))
        loss, g = _step(w, x, y)
        ref_loss, ref_g = _numpy(w.numpy(), x, y)
        np.testing.assert_allclose(loss.numpy(), ref_loss, rtol=1e-13)
        np.testing.assert_allclose(g.numpy(), ref_g, rtol=1e-12, atol=1e-15)
    assert caplog.text.count("compiled a dynamic version") == 1
    # the family's build starts at its 5th run (compile_after_runs), which its plan serves as before
    # (interpreted), in the background; every later size but 1 runs it (the 6th waits for it)
    assert "tape backward plan: building a dynamic version (in the background)" in caplog.text
    used = caplog.text.count("runs its dynamic version at N=")
    assert used == len([n for n in sizes[5:] if n >= 2])
    assert "not the dynamic version (N=1 (the dynamic version is for N >= 2))" in caplog.text


def test_one_size_is_served_as_before(monkeypatch):
    rng = np.random.default_rng(1)
    w = gt.Variable(rng.normal(size=(5, 3)))
    x, y = rng.normal(size=(8, 5)), rng.normal(size=(8, 3))
    for _ in range(7):
        _, g = _step(w, x, y)
        np.testing.assert_allclose(g.numpy(), _numpy(w.numpy(), x, y)[1], rtol=1e-12, atol=1e-15)
    (plan,) = [p for p in backward_cache._plans.values()]
    assert plan._served.compiled is not None and not getattr(plan._served.compiled, "dynamic", False)


def test_dynamic_plans_can_be_turned_off(monkeypatch, caplog):
    monkeypatch.setattr(runtime.config, "dynamic_plans", False)
    caplog.set_level(logging.INFO, logger="gradtape")
    rng = np.random.default_rng(2)
    w = gt.Variable(rng.normal(size=(5, 3)))
    for n in [10, 11, 12, 13, 14, 15, 16]:
        x, y = rng.normal(size=(n, 5)), rng.normal(size=(n, 3))
        np.testing.assert_allclose(_step(w, x, y)[1].numpy(), _numpy(w.numpy(), x, y)[1], rtol=1e-12)
    assert "dynamic version" not in caplog.text


def _loop(sizes, seed=3):
    rng = np.random.default_rng(seed)
    w = gt.Variable(rng.normal(size=(5, 3)))
    out = []
    for n in sizes:
        x, y = rng.normal(size=(n, 5)), rng.normal(size=(n, 3))
        g = _step(w, x, y)[1].numpy()
        w.assign(w.numpy() - 0.1 * g)
        out.append(g)
    return out


def test_the_plan_that_starts_the_build_waits_for_it_at_its_next_run(caplog):
    caplog.set_level(logging.INFO, logger="gradtape")
    sizes = [10, 11, 12, 13, 14, 14]
    assert all(g.shape == (5, 3) for g in _loop(sizes))
    assert caplog.text.count("runs its dynamic version at N=") == 1
    assert "runs its dynamic version at N=14 (no compile)" in caplog.text


def test_same_bits_whatever_the_builds_speed(monkeypatch):
    sizes = [10, 11, 12, 13, 14, 14, 15, 10, 11]
    fast = _loop(sizes)
    backward_cache.clear_cache()
    backward_plan.serve.clear()
    runtime.clear_cache()
    slow_background_builds(monkeypatch)
    for a, b in zip(fast, _loop(sizes)):
        np.testing.assert_array_equal(a, b)
