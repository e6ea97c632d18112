"""Seeds with which the differential fuzzer found a bug, each with the bug's own
check against a reference independent of gradtape (NumPy, or the derivative's
definition). Replay any of them: python bench/fuzz_differential.py --replay SEED."""
import numpy as np

import gradtape as gt

from . import differential, generator


def _agrees_on_every_path(seed):
    program = generator.generate(seed)
    findings = differential.check(program)
    assert not findings, "\n".join(f"[{f.category}] {f.detail}" for f in findings)


def test_seed_452_derivative_of_x_to_the_power_0_is_zero_at_0_and_inf():
    # x ** 0 is 1 everywhere (NumPy: 0 ** 0 == inf ** 0 == 1); its derivative is 0,
    # as JAX gives, on every path; it was NaN at x = -0 (0 * x ** -1) except on the
    # staged call recorded on a tape, which differentiated the optimized x ** 0 -> 1.
    _agrees_on_every_path(452)
    x = np.array([6.5, -np.inf, -0.0, 0.0, np.nan])
    assert np.array_equal(np.ones_like(x), np.power(x, 0))
    f = lambda x: gt.sum(x ** 0 * np.arange(1.0, 6.0))  # noqa: E731
    np.testing.assert_array_equal(gt.grad(f)(x), np.zeros(5))
    np.testing.assert_array_equal(gt.jvp(f, (x,), (np.ones(5),))[1], 0.0)
    c = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(c)
        y = f(c)
    np.testing.assert_array_equal(tape.gradient(y, c).numpy(), np.zeros(5))


def test_seed_2342_a_matrix_product_keeps_nan_times_zero_like_numpy_matmul():
    # The eager reference computed products through np.dot, whose OpenBLAS small-matrix
    # path gives 0 for NaN * 0 at some shapes ((2, 1) @ (1, 1)); NumPy's @ gives NaN.
    a, b = np.full((2, 1), np.nan), np.zeros((1, 1))
    want = a @ b
    assert np.isnan(want).all()
    np.testing.assert_array_equal((gt.constant(a) @ gt.constant(b)).numpy(), want)
    np.testing.assert_array_equal(gt.differentiable(lambda a, b: a @ b)(a, b), want)
    np.testing.assert_array_equal(gt.dot(gt.constant(a), gt.constant(b)).numpy(), want)
