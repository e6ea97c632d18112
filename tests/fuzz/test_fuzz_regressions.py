"""Seeds with which the differential fuzzer found a bug, each with the bug's own
check against a reference independent of gradtape (NumPy, or the derivative's
definition). Replay any of them: python bench/fuzz_differential.py --replay SEED --version 1."""
import numpy as np
import pytest

import gradtape as gt

from . import differential, generator


def _agrees_on_every_path(seed):
    program = generator.generate(seed, version=1)  # the generator that found them
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


@pytest.mark.parametrize("seed", [1970, 2077, 3461, 3992, 4357, 4409, 4477, 5578, 8444, 8903])
def test_seeds_where_a_reduction_factored_x_times_a_plus_x_times_b(seed):
    # Fast-math `nsz` with `reassoc` on a sum's adds let LLVM rewrite x*a + x*b as
    # x*(a+b): at x = inf with a = -1, b = 1.5 that is inf, where NumPy's sum gives NaN.
    _agrees_on_every_path(seed)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_weighted_sum_of_a_broadcast_inf_is_nan_as_in_numpy(dtype):
    w = np.array([-1.0, 1.5, 2.0, -0.25, 0.5], dtype=dtype)
    for x in (np.inf, -np.inf):
        x = np.array(x, dtype=dtype)
        with np.errstate(invalid="ignore"):  # inf - inf: the NaN is the point
            want = np.sum(np.broadcast_to(x, w.shape) * w)
        assert np.isnan(want)
        f = gt.differentiable(lambda x: gt.sum(gt.broadcast_to(x, w.shape) * w))
        np.testing.assert_array_equal(f(x), want)
        np.testing.assert_array_equal(gt.value_and_grad(lambda x: gt.sum(gt.broadcast_to(x, w.shape) * w) * x)(x)[0], want)


def test_seed_3504_the_reference_einsum_multiplies_a_broadcast_operand_term_by_term():
    # NumPy's einsum on a zero-stride operand factors x*a + x*b into x*(a+b): inf, not the
    # NaN of inf*0.69 + inf*-0.55. The fuzzer's NumPy reference copies operands first.
    from . import numpy_reference

    a = np.array([[0.69, -0.55]])
    b = np.broadcast_to(np.array([[np.inf]]), (2, 1))
    with np.errstate(invalid="ignore"):
        assert np.isnan(numpy_reference.namespace.einsum("ij,jk->ik", a, b)).all()
        assert np.isnan(a @ b).all()
        np.testing.assert_array_equal(gt.einsum("ij,jk->ik", gt.constant(a), gt.constant(b)).numpy(), np.nan)
    _agrees_on_every_path(3504)


def test_seed_11324_an_outer_product_keeps_the_sign_of_a_zero_product():
    # -1 * 0 is -0 (IEEE), as np.multiply.outer gives; NumPy's einsum adds the product to a
    # +0 and gives +0, so the reference computes einsums without a summed index as products.
    program = generator.generate(11324)
    assert not differential.check(program)
    a, b = np.array([-1.0, 1e300]), np.zeros(2)
    want = np.multiply.outer(a, b)
    assert np.signbit(want[0]).all() and not np.signbit(want[1]).any()
    got = np.asarray(gt.differentiable(lambda a, b: gt.einsum("i,j->ij", a, b))(a, b))
    assert np.array_equal(np.signbit(got), np.signbit(want)) and np.array_equal(got, want)
