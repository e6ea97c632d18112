"""GradientTape.jacobian and batch_jacobian run one vectorized backward; the
row-by-row loop (experimental_use_pfor=False) is the independent reference,
and finite differences check both."""
import numpy as np

import gradtape as gt

RNG = np.random.default_rng(3)
W = RNG.normal(size=(4, 3))


def numeric_jacobian(f, x, eps=1e-6):
    J = np.zeros(f(x).shape + x.shape)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        J[(...,) + i] = (f(x + d) - f(x - d)) / (2 * eps)
    return J


def test_jacobian_with_a_variable_read_twice_matches_the_loop_and_finite_differences():
    v = gt.Variable(RNG.normal(size=3))
    x = gt.constant(RNG.normal(size=(2, 3)))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.tanh(x @ W.T) * gt.sum(v * v) + gt.sum(x * v, axis=1, keepdims=True)
    fast_x, fast_v = tape.jacobian(y, [x, v])
    slow_x, slow_v = tape.jacobian(y, [x, v], experimental_use_pfor=False)
    np.testing.assert_allclose(fast_x.numpy(), slow_x.numpy(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(fast_v.numpy(), slow_v.numpy(), rtol=1e-14, atol=1e-15)
    vv = v.numpy()
    f_v = lambda p: np.tanh(x.numpy() @ W.T) * np.sum(p * p) + np.sum(x.numpy() * p, axis=1, keepdims=True)  # noqa: E731
    assert fast_v.shape == (2, 4, 3)
    np.testing.assert_allclose(fast_v.numpy(), numeric_jacobian(f_v, vv), rtol=1e-7, atol=1e-9)


def test_batch_jacobian_matches_the_loop_and_per_example_jacobians():
    x = gt.constant(RNG.normal(size=(5, 3)))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.sin(x @ W.T) * gt.sum(x ** 2, axis=1, keepdims=True)
    fast = tape.batch_jacobian(y, x)
    slow = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    assert fast.shape == (5, 4, 3)
    np.testing.assert_allclose(fast.numpy(), slow.numpy(), rtol=1e-14, atol=1e-15)
    for i in range(5):
        f_i = lambda r: np.sin(W @ r) * np.sum(r ** 2)  # noqa: E731
        np.testing.assert_allclose(fast.numpy()[i], numeric_jacobian(f_i, x.numpy()[i]), rtol=1e-7, atol=1e-9)


def test_jacobian_of_a_matrix_target_with_nested_tapes_gives_third_derivatives():
    x = gt.constant(np.array([0.3, -0.5]))
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = x ** 4
        J = inner.jacobian(y, x)  # diag(4 x^3), recorded on the outer tape
    d = outer.jacobian(J, x)  # d J_ij / d x_k = 12 x_i^2 where i = j = k
    expected = np.zeros((2, 2, 2))
    expected[[0, 1], [0, 1], [0, 1]] = 12 * x.numpy() ** 2
    np.testing.assert_allclose(d.numpy(), expected, rtol=1e-14)
