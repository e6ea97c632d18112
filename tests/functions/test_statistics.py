"""Scans, statistics and predicates (issue 15 points 2 and 6) beyond the op-spec
table (tests/ir/specs_statistics.py): exact gradients at zeros, ties and NaNs,
the std-over-one-element case, values against NumPy over many keyword
combinations, the eager tape against staged functions, and error messages.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape.functions.quantile_positions import METHODS
from gradtape.tracer.tensor import Tensor
from tests.quantile_reference import FIXED_IN, quantile_reference

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4, 5))


def tape_gradient(f, x):
    x = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x).numpy()


def both_gradients(f, x):
    """The gradient of f at x on the eager tape and staged (gt.grad); they must agree."""
    eager = tape_gradient(f, x)
    staged = np.asarray(gt.grad(f)(x))
    np.testing.assert_allclose(eager, staged, rtol=1e-12, atol=1e-15)
    return staged


# --- std/var over groups of one (the gradient was NaN) ---------------------------------

@pytest.mark.parametrize("fn", [np.std, np.var, gt.std, gt.var])
def test_std_var_gradient_over_an_axis_of_length_one_is_zero(fn):
    x = RNG.standard_normal((3, 1))
    g = both_gradients(lambda t: gt.sum(fn(t, axis=1) * 2.0 + t[:, 0]), x)
    np.testing.assert_array_equal(g, np.ones((3, 1)))
    np.testing.assert_array_equal(np.asarray(fn(gt.constant(x), axis=1)), np.zeros(3))


def test_std_gradient_over_longer_axes_is_unchanged():
    x = RNG.standard_normal((3, 4))
    g = both_gradients(lambda t: gt.sum(np.std(t, axis=1, ddof=1)), x)
    centered = x - x.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(g, centered / (3 * x.std(axis=1, ddof=1, keepdims=True)), rtol=1e-12)


# --- prod and cumprod with zeros: never a division by x ---------------------------------

def test_prod_gradient_with_one_zero_is_the_product_of_the_others():
    x = np.array([2.0, 0.0, 3.0, -1.5])
    np.testing.assert_array_equal(both_gradients(lambda t: np.prod(t), x), [0.0, -9.0, 0.0, 0.0])


def test_prod_gradient_with_two_zeros_is_zero():
    x = np.array([[2.0, 0.0, 3.0, 0.0], [1.0, 2.0, 3.0, 4.0]])
    g = both_gradients(lambda t: gt.sum(np.prod(t, axis=1)), x)
    np.testing.assert_array_equal(g, [[0.0, 0.0, 0.0, 0.0], [24.0, 12.0, 8.0, 6.0]])


def test_cumprod_gradient_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 5.0])
    # sum(cumprod) = x0 + x0 x1 + x0 x1 x2 + x0 x1 x2 x3
    want = [1 + 0.0, 2 + 2 * 3 + 2 * 3 * 5, 0.0, 0.0]
    np.testing.assert_array_equal(both_gradients(lambda t: gt.sum(np.cumprod(t)), x), want)


# --- scans and diff against NumPy ------------------------------------------------------

@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_scans_match_numpy(name, axis):
    got = getattr(np, name)(gt.constant(X), axis=axis)
    want = getattr(np, name)(X, axis=axis)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("values", [np.array([True, False, True]), np.arange(5, dtype=np.int16),
                                    np.arange(4, dtype=np.uint8)])
def test_scans_widen_integers_as_numpy(values):
    for name in ("cumsum", "cumprod"):
        got = getattr(np, name)(gt.constant(values))
        want = getattr(np, name)(values)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)


def test_long_cumsum_is_accurate_and_its_gradient_is_the_reversed_cumsum():
    x = RNG.standard_normal(5000)
    np.testing.assert_allclose(gt.cumsum(x).numpy(), np.cumsum(x), rtol=1e-10, atol=1e-11)
    w = RNG.standard_normal(5000)
    g = both_gradients(lambda t: gt.sum(gt.cumsum(t) * w), x)
    np.testing.assert_allclose(g, np.cumsum(w[::-1])[::-1], rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("n", [0, 1, 2, 4, 6])
@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"prepend": 1.5}, {"append": np.ones((3, 4, 1))},
                                {"prepend": 0.0, "append": 2.0, "axis": 1}])
def test_diff_matches_numpy(n, kw):
    got = np.diff(gt.constant(X), n=n, **kw)
    want = np.diff(X, n=n, **kw)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_diff_of_bools_is_not_equal_and_errors_are_numpys():
    b = np.array([True, True, False])
    np.testing.assert_array_equal(np.diff(gt.constant(b)).numpy(), np.diff(b))
    with pytest.raises(ValueError, match="diff: order must be non-negative but got -1"):
        gt.diff(X, n=-1)
    with pytest.raises(ValueError, match="diff: requires input that is at least one dimensional"):
        gt.diff(gt.constant(1.0))


def test_out_is_refused_with_the_function_named():
    with pytest.raises(TypeError, match="cumsum: the out= argument is not supported"):
        np.cumsum(gt.constant(X), out=np.empty(X.size))


# --- NaN-aware sums, average, ptp ------------------------------------------------------

def _with_nans():
    x = X.copy()
    x[0, 1, 2] = x[2, 3, 0] = np.nan
    x[1, 2, :] = np.nan  # one all-NaN group along the last axis
    return x


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
def test_nansum_nanmean_match_numpy(axis):
    x = _with_nans()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_allclose(np.nansum(gt.constant(x), axis=axis).numpy(), np.nansum(x, axis=axis))
        np.testing.assert_allclose(np.nanmean(gt.constant(x), axis=axis).numpy(), np.nanmean(x, axis=axis))


def test_nansum_gradient_is_zero_at_nans():
    x = _with_nans()
    g = both_gradients(lambda t: np.nansum(t * 3.0), x)
    np.testing.assert_array_equal(g, np.where(np.isnan(x), 0.0, 3.0))


@pytest.mark.parametrize("name", ["nanprod", "nanmax", "nanmin", "nanvar", "nanstd"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_nan_reductions_match_numpy(name, axis, keepdims):
    x = _with_nans()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = getattr(np, name)(gt.constant(x), axis=axis, keepdims=keepdims)
        want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
def test_nan_scans_match_numpy(name):
    x = _with_nans()
    for axis in (None, 1):
        np.testing.assert_allclose(getattr(np, name)(gt.constant(x), axis=axis).numpy(),
                                   getattr(np, name)(x, axis=axis), rtol=1e-12)


def test_nanstd_gradient_over_one_remaining_element_is_zero():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, np.nan]])
    g = both_gradients(lambda t: gt.sum(np.nanstd(t, axis=1)), x)
    np.testing.assert_array_equal(g, [[-0.5, 0.0, 0.5], [0.0, 0.0, 0.0]])


def test_average_with_weights_and_returned():
    w = RNG.uniform(0.5, 2.0, 4)
    got, scale = np.average(gt.constant(X), axis=1, weights=w, returned=True)
    want, want_scale = np.average(X, axis=1, weights=w, returned=True)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(scale.numpy(), want_scale, rtol=1e-13)
    # differentiable in the weights too: d/dw_j sum(x w)/sum(w) = (x_j - avg) / sum(w)
    x = X[0, :, 0]
    g = np.asarray(gt.grad(lambda w: gt.average(x, weights=w))(w))
    np.testing.assert_allclose(g, (x - np.average(x, weights=w)) / w.sum(), rtol=1e-12)


def test_average_errors():
    with pytest.raises(ZeroDivisionError, match="average: weights sum to zero"):
        np.average(gt.constant([1.0, 2.0]), weights=[1.0, -1.0])
    with pytest.raises(TypeError, match=r"average: axis must be specified .* \(3, 4, 5\) and weights \(4,\)"):
        np.average(gt.constant(X), weights=np.ones(4))
    with pytest.raises(ValueError, match=r"average: the length of weights \(3\)"):
        np.average(gt.constant(X), axis=1, weights=np.ones(3))


def test_ptp_gradient_is_max_minus_min():
    x = np.array([[4.0, 9.0, 2.0], [1.0, 0.5, 3.0]])
    np.testing.assert_array_equal(np.ptp(gt.constant(x), axis=1).numpy(), np.ptp(x, axis=1))
    g = both_gradients(lambda t: gt.sum(np.ptp(t, axis=1)), x)
    np.testing.assert_array_equal(g, [[0.0, 1.0, -1.0], [0.0, -1.0, 1.0]])


# --- order statistics ---------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 2, (0, 2)])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("keepdims", [False, True])
def test_quantile_matches_numpy(axis, method, keepdims):
    q = [0.0, 0.13, 0.5, 0.75, 1.0]
    got = np.quantile(gt.constant(X), q, axis=axis, method=method, keepdims=keepdims)
    want = quantile_reference(X, q, axis=axis, method=method, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14)


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < FIXED_IN,
                    reason="NumPy before 2.1 picks the wrong order statistic at halfway ranks")
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_the_closest_observation_reference_is_numpys_own(axis, keepdims):
    x = RNG.standard_normal((4, 7, 6))
    q = [0.0, 0.07, 0.25, 0.5, 0.75, 1.0]
    want = np.quantile(x, q, axis=axis, method="closest_observation", keepdims=keepdims)
    got = quantile_reference(x, q, axis=axis, method="closest_observation", keepdims=keepdims)
    assert got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize("axis", [None, 1, (1, 2)])
def test_median_and_percentile_match_numpy(axis):
    np.testing.assert_array_equal(np.median(gt.constant(X), axis=axis).numpy(), np.median(X, axis=axis))
    np.testing.assert_allclose(np.percentile(gt.constant(X), [10, 90], axis=axis).numpy(),
                               np.percentile(X, [10, 90], axis=axis), rtol=1e-14)
    ints = np.arange(12).reshape(3, 4) % 5
    assert np.median(gt.constant(ints)).dtype == np.median(ints).dtype


def test_median_gradient_goes_to_the_middle_elements():
    x = np.array([4.0, 1.0, 3.0, 2.0])
    np.testing.assert_array_equal(both_gradients(np.median, x), [0.0, 0.0, 0.5, 0.5])
    # quantile 0.3 of 4 elements: index 0.9 between the smallest (1) and the next (2)
    g = both_gradients(lambda t: gt.quantile(t, 0.3), x)
    np.testing.assert_allclose(g, [0.0, 0.1, 0.0, 0.9], rtol=1e-12)


def test_tied_elements_share_no_more_than_the_whole_gradient():
    x = np.array([1.0, 2.0, 2.0, 3.0, 2.0])
    assert float(np.median(gt.constant(x))) == 2.0
    g = both_gradients(np.median, x)
    assert g.sum() == 1.0 and np.count_nonzero(g) == 1 and x[np.argmax(g)] == 2.0


def test_median_of_a_group_with_nan_is_nan_and_other_groups_keep_their_gradient():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 6.0, 5.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(np.median(gt.constant(x), axis=1).numpy(), np.median(x, axis=1))
    g = both_gradients(lambda t: np.median(t, axis=1)[1], x)
    np.testing.assert_array_equal(g, [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def test_quantile_errors():
    t = gt.constant(X)
    with pytest.raises(ValueError, match=r"quantile: quantiles must be in the range \[0, 1\], got 1.5"):
        np.quantile(t, 1.5)
    with pytest.raises(ValueError, match=r"percentile: percentiles must be in the range \[0, 100\]"):
        np.percentile(t, [50, 101])
    with pytest.raises(TypeError, match="quantile: q must be numbers, not a Tensor"):
        gt.quantile(t, gt.constant(0.5))
    with pytest.raises(ValueError, match="quantile: method='cubic' is not a quantile method; use one of "
                                         "inverted_cdf, .*, normal_unbiased"):
        np.quantile(t, 0.5, method="cubic")
    with pytest.raises(ValueError, match=r"median: cannot take it over an empty group \(a has shape \(2, 0\), axis=1\)"):
        np.median(gt.constant(np.zeros((2, 0))), axis=1)
    with pytest.raises(ValueError, match=r"nanpercentile: method='cubic' is not a quantile method"):
        np.nanpercentile(t, 50, method="cubic")
    with pytest.raises(ValueError, match=r"nanquantile: quantiles must be in the range \[0, 1\], got -0.5"):
        np.nanquantile(t, -0.5)
    with pytest.raises(NotImplementedError, match=r"quantile: weights= is not supported \(got weights of shape \(3,\)\)"):
        np.quantile(t, 0.5, axis=-1, method="inverted_cdf", weights=np.ones(3))


# --- logsumexp with b= --------------------------------------------------------------------

def test_logsumexp_b_is_stable_and_matches_the_direct_formula():
    x = np.array([1000.0, 1000.0, 999.0])
    b = np.array([0.5, 2.0, 1.0])
    want = 1000.0 + np.log(0.5 + 2.0 + np.exp(-1.0))
    np.testing.assert_allclose(gt.logsumexp(x, b=b).numpy(), want, rtol=1e-15)
    g = both_gradients(lambda t: gt.logsumexp(t, b=b), x)
    weights = b * np.exp(x - 1000.0)
    np.testing.assert_allclose(g, weights / weights.sum(), rtol=1e-14)


# --- predicates and integer results ----------------------------------------------------

def test_predicates_on_watched_tensors_give_values_and_no_gradient():
    v = np.array([1.0, np.inf, -np.inf, np.nan, 0.0])
    x = gt.constant(v)
    with gt.GradientTape() as tape:
        tape.watch(x)
        results = {f: getattr(np, f)(x) for f in ("isnan", "isinf", "isfinite")}
        count = np.count_nonzero(x)
        y = gt.sum(gt.where(np.isfinite(x), x * x, 0.0))
    for name, got in results.items():
        assert isinstance(got, Tensor) and got.dtype == np.bool_
        np.testing.assert_array_equal(got.numpy(), getattr(np, name)(v))
    assert int(count) == np.count_nonzero(v) == 4
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 0.0, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_all_any_isposinf_isneginf_match_numpy(axis, keepdims):
    v = np.array([[1.0, np.inf, -np.inf], [np.nan, 0.0, 2.0], [0.0, 0.0, 0.0]])
    for name in ("all", "any"):
        got = getattr(np, name)(gt.constant(v), axis=axis, keepdims=keepdims)
        want = getattr(np, name)(v, axis=axis, keepdims=keepdims)
        assert got.dtype == np.bool_ and got.shape == np.shape(want)
        np.testing.assert_array_equal(got.numpy(), want)
    for name in ("isposinf", "isneginf"):
        np.testing.assert_array_equal(getattr(np, name)(gt.constant(v)).numpy(), getattr(np, name)(v))


def test_predicates_of_integers():
    i = np.array([3, -1, 0])
    for name in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(getattr(np, name)(gt.constant(i)).numpy(), getattr(np, name)(i))


@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_allclose_array_equal_match_numpy(equal_nan):
    a = np.array([1.0, np.inf, np.nan, 1.0, -np.inf, 1e-9])
    b = np.array([1.0 + 1e-9, np.inf, np.nan, np.inf, np.inf, 0.0])
    got = np.isclose(gt.constant(a), b, equal_nan=equal_nan)
    np.testing.assert_array_equal(got.numpy(), np.isclose(a, b, equal_nan=equal_nan))
    for x, y in [(a, b), (a, a), (a[:2], a[:2] * (1 + 1e-12)), (a[:2], a[:3])]:
        if x.shape == y.shape:
            assert bool(np.allclose(gt.constant(x), y, equal_nan=equal_nan)) == np.allclose(
                x, y, equal_nan=equal_nan)
        assert bool(np.array_equal(gt.constant(x), y, equal_nan=equal_nan)) == np.array_equal(
            x, y, equal_nan=equal_nan)


def test_predicates_and_shapes_in_a_staged_function():
    @gt.differentiable
    def f(x):
        assert np.shape(x) == (2, 3) and np.ndim(x) == 2 and np.size(x) == 6 and np.size(x, 1) == 3
        close = np.allclose(x, 1.0)
        return gt.where(close, 0.0, gt.sum(x * x)) + gt.cast(np.count_nonzero(x), "float64")

    x = np.array([[1.0, 0.0, 2.0], [3.0, 0.0, 1.0]])
    np.testing.assert_allclose(np.asarray(f(x)), np.sum(x * x) + 4.0)
    np.testing.assert_allclose(np.asarray(f(np.ones((2, 3)))), 6.0)
    np.testing.assert_allclose(np.asarray(gt.grad(f)(x)), 2 * x)


def test_casts_to_integer_types_carry_no_gradient():
    x = np.array([1.5, -2.5, 3.25])
    f = lambda t: gt.sum(t * gt.cast(t.astype(np.int64), "float64") + gt.cast(gt.cast(t, "int32"), "float64"))
    np.testing.assert_array_equal(both_gradients(f, x), np.trunc(x))
    assert gt.constant(x).astype(np.int64).dtype == np.int64
