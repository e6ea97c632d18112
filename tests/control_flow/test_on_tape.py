"""A staged function with control flow, called on a GradientTape, is recorded as a
call and differentiated like any other (repeatedly, so its plan is reused)."""
import numpy as np
import pytest

import gradtape as gt

from ..finite_differences import central_differences

X = np.array([[0.1, 0.2], [0.3, -0.4], [0.5, 0.1]])
W = np.array([0.7, -0.2])


@gt.differentiable
def scanned(x, w):
    _, ys = gt.scan(lambda c, x: (gt.tanh(c * w + x), c), x[0], x)
    return gt.sum(ys ** 2) + gt.cond(gt.sum(w) > 0, lambda v: gt.sum(v * v), lambda v: gt.sum(v), w)


@gt.differentiable
def looped(x, w):
    return gt.sum(gt.while_loop(lambda c: gt.sum(c) < 3.0, lambda c: c * 1.5 + w * w, x[0]))



@pytest.mark.parametrize("f", [scanned, looped], ids=["scan_cond", "while"])
@pytest.mark.parametrize("w", [W, -W], ids=["w", "minus_w"])
def test_tape_gradient_of_a_staged_function_with_control_flow(f, w):
    v = gt.Variable(w)
    for _ in range(3):
        with gt.GradientTape() as tape:
            y = f(X, v)
        g = tape.gradient(y, v)
        np.testing.assert_allclose(np.asarray(g), central_differences(lambda w: f(X, w), w), rtol=1e-7, atol=1e-8)
