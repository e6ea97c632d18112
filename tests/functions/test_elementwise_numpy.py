"""NumPy's elementwise functions on tensors: NaN rules, the ranges where a
naive composition would be wrong, and calls through NumPy itself, eager and
staged. (Values, derivatives, batching and native code of each are in the
op specs, tests/ir/specs_elementwise.py.)"""
import numpy as np
import pytest

import gradtape as gt

NAN, INF = np.nan, np.inf


def _tape_grad(f, x):
    x = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.sum(f(x))
    return tape.gradient(y, x).numpy()


@pytest.mark.parametrize("fn", [np.fmax, np.fmin])
def test_fmax_fmin_return_the_non_nan_operand_like_numpy(fn):
    x = np.array([1.0, NAN, NAN, -2.0])
    y = np.array([0.0, 0.0, NAN, NAN])
    np.testing.assert_array_equal(fn(gt.constant(x), y).numpy(), fn(x, y))
    np.testing.assert_array_equal(np.asarray(gt.differentiable(lambda a, b: fn(a, b))(x, y)), fn(x, y))


@pytest.mark.parametrize("fn", [np.fmax, np.fmin])
def test_fmax_fmin_derivative_goes_to_the_non_nan_operand(fn):
    x = np.array([1.0, NAN, -2.0, 0.5])
    y = np.array([0.0, 3.0, NAN, 0.5])
    gx = _tape_grad(lambda t: fn(t, gt.constant(y)), x)
    gy = _tape_grad(lambda t: fn(gt.constant(x), t), y)
    chosen_x = 1.0 if fn is np.fmax else 0.0
    np.testing.assert_array_equal(gx, [chosen_x, 0.0, 1.0, 0.5])
    np.testing.assert_array_equal(gy, [1.0 - chosen_x, 1.0, 0.0, 0.5])
    staged = gt.grad(lambda a: gt.sum(fn(a, y)))(x)
    np.testing.assert_array_equal(staged, gx)


def test_cosh_and_sinh_do_not_overflow_before_numpy():
    x = np.array([710.0, -710.0, 709.9])
    for fn in (np.cosh, np.sinh):
        np.testing.assert_allclose(fn(gt.constant(x)).numpy(), fn(x), rtol=1e-14)
        np.testing.assert_allclose(np.asarray(gt.differentiable(fn)(x)), fn(x), rtol=1e-14)


def test_arcsin_arccos_near_one_match_numpy():
    x = 1.0 - np.array([1e-16, 1e-12, 1e-8])
    for fn in (np.arcsin, np.arccos):
        np.testing.assert_allclose(fn(gt.constant(x)).numpy(), fn(x), rtol=4e-16)
        np.testing.assert_allclose(np.asarray(gt.differentiable(fn)(x)), fn(x), rtol=1e-15)
    # the derivative, 1 / sqrt((1 - x)(1 + x)), keeps its digits there too
    np.testing.assert_allclose(_tape_grad(np.arcsin, x), 1 / np.sqrt((1 - x) * (1 + x)), rtol=1e-15)


def test_log2_log10_exp2_are_exact_where_numpy_is():
    powers = np.array([1.0, 8.0, 1024.0, 2.0 ** -30])
    np.testing.assert_array_equal(np.asarray(gt.differentiable(np.log2)(powers)), [0.0, 3.0, 10.0, -30.0])
    np.testing.assert_array_equal(np.log10(gt.constant([1.0, 10.0, 1000.0])).numpy(), [0.0, 1.0, 3.0])
    np.testing.assert_array_equal(gt.differentiable(np.exp2)(np.array([10.0, -3.0])), [1024.0, 0.125])


def test_arcsinh_derivative_is_finite_for_huge_arguments():
    x = np.array([1e200, -1e300])
    np.testing.assert_allclose(_tape_grad(np.arcsinh, x), 1 / np.abs(x), rtol=1e-15)


def test_logaddexp_of_equal_infinities_and_ties():
    x = np.array([-INF, INF, 2.0, 1000.0])
    np.testing.assert_array_equal(np.logaddexp(gt.constant(x), x).numpy(), np.logaddexp(x, x))
    np.testing.assert_array_equal(np.logaddexp2(gt.constant(x), x).numpy(), np.logaddexp2(x, x))
    # d/dx logaddexp(x, x) = 1 (1/2 through each operand), d/dx logaddexp(x, c) = sigmoid(x - c)
    np.testing.assert_allclose(_tape_grad(lambda t: gt.logaddexp(t, t), np.array([2.0, -7.0])), [1.0, 1.0])
    np.testing.assert_allclose(_tape_grad(lambda t: np.logaddexp(t, 1.0), np.array([3.0, -40.0])),
                               1 / (1 + np.exp(1.0 - np.array([3.0, -40.0]))), rtol=1e-15)


def test_sinc_second_derivative_at_zero_is_minus_pi_squared_over_three():
    d2 = gt.grad(gt.grad(lambda x: gt.sinc(x)))(np.float64(0.0))
    assert float(d2) == pytest.approx(-np.pi ** 2 / 3, rel=1e-12)
    assert float(gt.grad(np.sinc)(np.float64(0.0))) == 0.0


def test_nan_to_num_replaces_like_numpy_with_zero_derivative_there():
    x = np.array([NAN, INF, -INF, 1.5])
    np.testing.assert_array_equal(np.nan_to_num(gt.constant(x)).numpy(), np.nan_to_num(x))
    np.testing.assert_array_equal(gt.nan_to_num(gt.constant(x), nan=1.0, posinf=2.0, neginf=-2.0).numpy(),
                                  np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0))
    np.testing.assert_array_equal(_tape_grad(np.nan_to_num, x), [0.0, 0.0, 0.0, 1.0])


def test_heaviside_and_copysign_special_values_match_numpy():
    x = np.array([-1.0, 0.0, -0.0, 2.0, NAN])
    np.testing.assert_array_equal(np.heaviside(gt.constant(x), 0.5).numpy(), np.heaviside(x, 0.5))
    y = np.array([-0.0, 0.0, -3.0, INF, -INF])
    np.testing.assert_array_equal(np.copysign(gt.constant([1.0, -2.0, 3.0, -4.0, 5.0]), y).numpy(),
                                  np.copysign([1.0, -2.0, 3.0, -4.0, 5.0], y))


def test_imag_of_real_input_has_a_zero_gradient_not_none():
    np.testing.assert_array_equal(_tape_grad(np.imag, np.array([1.0, 2.0])), [0.0, 0.0])


def test_integer_input_promotes_to_float64_like_numpy():
    for fn in (np.cosh, np.log2, np.cbrt, np.arcsinh):
        out = fn(gt.constant([1, 8]))
        assert out.dtype == np.float64
        np.testing.assert_allclose(out.numpy(), fn(np.array([1, 8])), rtol=1e-15)
    assert np.hypot(gt.constant(np.float32(3.0)), 4.0).dtype == np.float32


def test_out_argument_is_refused_naming_the_function():
    with pytest.raises(TypeError, match=r"numpy.cosh: the out= argument is not supported"):
        np.cosh(gt.constant([1.0]), out=np.empty(1))
