"""numpy.i0 and scipy.special's i0, i1, i0e, i1e (functions/bessel.py) against NumPy and
SciPy, three ways (eager, interpreted, compiled), over the series and expansion ranges,
their split at |x| = 30, overflow and the non-finite values; and derivatives against the
identities i0' = i1, i1' = i0 - i1 / x. Finite-difference checks to third order, batching
and native code are in the op spec table (tests/ir/specs_special.py)."""
import warnings

import numpy as np
import pytest
from scipy import special as scipy_special

import gradtape as gt
from gradtape.scipy import special

from .three_ways import three_ways

RNG = np.random.default_rng(11)
X = np.concatenate([RNG.uniform(-60.0, 60.0, 300), RNG.uniform(-1.0, 1.0, 40),
                    [0.0, -0.0, 29.999999, 30.0, -30.0, 30.000001, 700.0, 709.0, 709.9, 713.0, 800.0, -720.0,
                     1e-300, 5e3, np.inf, -np.inf, np.nan]])


def _assert_close(got, want, what):
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=what)  # inf, -inf, NaN where upstream has them
    np.testing.assert_allclose(got[finite], want[finite], rtol=5e-15, atol=0, err_msg=what)


@pytest.mark.parametrize("name", ["i0", "i1", "i0e", "i1e"])
def test_bessel_functions_match_scipy_three_ways(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # exp overflows past 709.8, as in NumPy
        results = three_ways(getattr(special, name), X)
    want = getattr(scipy_special, name)(X)
    for way, got in zip(("eager", "interpreted", "compiled"), results):
        _assert_close(got, want, f"{name} {way}")


def test_numpy_i0_matches_numpy_including_overflow_and_infinities():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.i0(X)
        results = three_ways(np.i0, X)
    for way, got in zip(("eager", "interpreted", "compiled"), results):
        _assert_close(got, want, f"numpy.i0 {way}")
    x32 = X[:50].astype(np.float32)
    got = np.i0(gt.constant(x32)).numpy()
    assert got.dtype == np.i0(x32).dtype == np.float32
    np.testing.assert_allclose(got, scipy_special.i0(x32.astype(np.float64)), rtol=1e-6)


def test_derivatives_are_i1_and_i0_minus_i1_over_x():
    x = np.array([-45.0, -3.0, -0.5, 0.0, 0.7, 2.0, 29.9, 30.1, 100.0])
    np.testing.assert_allclose(gt.grad(lambda t: gt.sum(np.i0(t)))(x), scipy_special.i1(x), rtol=1e-14, atol=1e-300)
    safe = np.where(x == 0, 1.0, x)
    want = np.where(x == 0, 0.5, scipy_special.i0(x) - scipy_special.i1(x) / safe)
    np.testing.assert_allclose(gt.grad(lambda t: gt.sum(special.i1(t)))(x), want, rtol=1e-14)
    second = gt.grad(lambda t: gt.sum(gt.grad(lambda u: gt.sum(np.i0(u)))(t)))(x)
    np.testing.assert_allclose(second, want, rtol=1e-13)  # i0'' = i1'


def test_complex_input_names_the_function():
    with pytest.raises(TypeError, match=r"i0: expected real numbers, got a tensor of dtype complex128 \(shape \(2,\)\)"):
        np.i0(gt.constant(np.ones(2)) * 1j)
