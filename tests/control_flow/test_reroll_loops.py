"""Staged functions whose Python `for` loops are re-rolled into scans (ir/reroll.py): one
loop in the program, the unrolled program's values, derivatives to second order against
finite differences, and GRADTAPE_REROLL=0 giving the unrolled program back."""
import logging

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from tests.reroll_programs import rnn_loss, small_loops_too  # noqa: F401  (an autouse fixture)

RNG = np.random.default_rng(3)
H = RNG.normal(size=4) * 0.5
W = RNG.normal(size=(4, 4)) * 0.4
U = RNG.normal(size=(4, 3)) * 0.4
XS = RNG.normal(size=(12, 3))
ARGS = (H, W, U, XS)


def euler(k, y, steps=30, dt=0.02):
    """y' = -k y + 0.1 t, with t = i dt a Python constant of each step."""
    for i in range(steps):
        y = y + dt * (-k * y + 0.1 * (i * dt))
    return gt.sum(y * y)


@pytest.fixture
def native(monkeypatch):
    monkeypatch.setattr(gt.runtime.config, "async_compile", False)


def top_ops(f) -> list:
    ((_, program),) = f.programs()
    return [e.op.name for e in program.fn.eqns]


def test_the_gradient_is_a_loop_with_the_unrolled_values(native, monkeypatch):
    g = gt.value_and_grad(rnn_loss, argnums=(0, 1, 2, 3))
    value, grads = g(*ARGS)
    ops = top_ops(g)
    assert "scan" in ops and len(ops) < 40 and "tanh" not in ops, ops
    monkeypatch.setattr(ir.config, "reroll", False)
    unrolled = gt.value_and_grad(rnn_loss, argnums=(0, 1, 2, 3))
    value0, grads0 = unrolled(*ARGS)
    assert top_ops(unrolled).count("tanh") == 12
    np.testing.assert_allclose(value, value0, rtol=1e-14)
    for a, b in zip(grads, grads0):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def central(f, x, v, h=1e-5):
    return (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))) / (2 * h)


def test_first_and_second_derivatives_against_finite_differences():
    v = RNG.normal(size=W.shape)
    loss = gt.differentiable(lambda w: rnn_loss(H, w, U, XS))
    grad = gt.grad(lambda w: rnn_loss(H, w, U, XS))
    hess = gt.hessian(lambda w: rnn_loss(H, w, U, XS))
    np.testing.assert_allclose(np.sum(grad(W) * v), central(loss, W, v), rtol=1e-7)
    hv = np.tensordot(hess(W), v, axes=2)
    np.testing.assert_allclose(hv, central(grad, W, v), rtol=1e-6, atol=1e-7 * np.max(np.abs(hv)))


def test_a_python_constant_that_changes_each_step_is_scanned():
    k, y = np.linspace(0.5, 2.0, 3), np.linspace(-1.0, 1.0, 3)
    g = gt.grad(euler, argnums=(0, 1))
    gk, gy = g(k, y)
    ops = top_ops(g)
    assert "scan" in ops and len(ops) < 20, ops
    loss = gt.differentiable(euler)
    for i, (x, grad) in enumerate(((k, gk), (y, gy))):
        v = RNG.normal(size=3)
        f = (lambda x: loss(x, y)) if i == 0 else (lambda x: loss(k, x))
        np.testing.assert_allclose(np.dot(grad, v), central(f, x, v), rtol=1e-8)


def test_nested_loops_and_a_different_last_step(native):
    def f(x, w):
        for i in range(6):
            for _ in range(5):
                x = gt.tanh(x * w + 0.3)
            if i < 5:
                x = x + 0.5 * gt.sigmoid(x)
        return gt.sum(x * x)

    x = np.linspace(-1.0, 1.0, 8)
    d = gt.differentiable(f)
    assert np.asarray(d(x, 0.7)).tobytes() == np.asarray(gt.differentiable(f)(x, 0.7)).tobytes()
    ops = top_ops(d)
    assert ops.count("scan") == 2 and len(ops) < 12, ops   # the last step's inner loop, then the rest
    g = gt.grad(f, argnums=1)
    np.testing.assert_allclose(g(x, 0.7), central(lambda w: d(x, w), 0.7, 1.0), rtol=1e-8)
    h = gt.grad(gt.grad(f, argnums=1), argnums=1)
    np.testing.assert_allclose(h(x, 0.7), central(lambda w: g(x, w), 0.7, 1.0), rtol=1e-6)


def test_reroll_off_keeps_the_loop_unrolled(monkeypatch):
    monkeypatch.setattr(ir.config, "reroll", False)
    f = gt.differentiable(rnn_loss)
    f(*ARGS)
    assert "scan" not in top_ops(f)


def test_the_compile_log_names_the_loop(caplog):
    with caplog.at_level(logging.INFO, logger="gradtape"):
        gt.grad(rnn_loss)(*ARGS)
    assert "reroll rnn_loss: 12 iterations of" in caplog.text
