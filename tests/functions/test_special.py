"""gradtape.scipy.special against scipy.special: values (eager, interpreted,
compiled, float64 and float32), special values, signatures, derivatives."""
import numpy as np
import pytest
from scipy import special as scipy_special

import gradtape as gt
from gradtape.scipy import special

from .three_ways import three_ways

RNG = np.random.default_rng(7)
X_WIDE = np.concatenate([RNG.uniform(-12.0, 30.0, 400), RNG.uniform(1e-6, 1.0, 50), [1e-300, 1e5, 1e300, 170.5]])
X_POLES = np.array([0.0, -0.0, -1.0, -2.0, -7.0, np.inf, np.nan])


def _compare(got, want, rtol, atol=0.0, what=""):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_matches_scipy_three_ways(n):
    want = scipy_special.polygamma(n, X_WIDE) if n else scipy_special.digamma(X_WIDE)
    for way, got in zip(("eager", "interpreted", "compiled"),
                        three_ways(lambda t: special.polygamma(n, t), X_WIDE)):
        # relative, except near a root (digamma's at 1.46, the others' on the negative axis)
        _compare(got, want, rtol=1e-12, atol=1e-14, what=f"{n} {way}")


@pytest.mark.parametrize("n", [0, 1, 2])
def test_polygamma_poles_and_infinities_follow_scipy(n):
    want = scipy_special.polygamma(n, X_POLES) if n else scipy_special.digamma(X_POLES)
    for got in three_ways(lambda t: special.polygamma(n, t), X_POLES):
        np.testing.assert_array_equal(got, want)
    assert np.isnan(special.digamma(gt.constant(-np.inf)).numpy())  # as SciPy


def test_gammaln_matches_scipy_three_ways_and_poles():
    x = np.concatenate([X_WIDE, [0.0, -1.0, -3.0, np.inf, -np.inf, np.nan]])
    for got in three_ways(special.gammaln, x):
        _compare(got, scipy_special.gammaln(x), rtol=1e-13, atol=1e-15)


def test_gammaln_and_gamma_at_minus_infinity():
    # SciPy (1.13 to 1.18): gammaln(-inf) = -inf; C's lgamma gives +inf there. Gamma has no limit: NaN.
    for way, got in zip(("eager", "interpreted", "compiled"), three_ways(special.gammaln, np.array([-np.inf]))):
        np.testing.assert_array_equal(got, [-np.inf], err_msg=way)
    for way, got in zip(("eager", "interpreted", "compiled"), three_ways(special.gamma, np.array([-np.inf, 4.0]))):
        np.testing.assert_allclose(got, [np.nan, 6.0], rtol=1e-14, err_msg=way)


def test_float32_compiles_and_matches_scipy_in_float32_precision():
    x = RNG.uniform(0.2, 20.0, 64).astype(np.float32)
    for fn, ref in ((special.digamma, scipy_special.digamma), (special.gammaln, scipy_special.gammaln),
                    (lambda t: special.polygamma(1, t), lambda v: scipy_special.polygamma(1, v))):
        for got in three_ways(fn, x):
            assert got.dtype == np.float32
            _compare(got, ref(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name,args", [
    ("erf", (np.linspace(-3, 3, 7),)), ("erfc", (np.linspace(-3, 6, 7),)),
    ("expit", (np.array([-800.0, -3.0, 0.0, 2.0, 40.0]),)),
    ("logit", (np.array([0.0, 1e-12, 0.25, 0.5, 0.999, 1.0, 1.5]),)),
    ("xlogy", (np.array([0.0, 0.0, 0.0, 2.0, -1.5]), np.array([0.0, np.nan, 3.0, 0.5, 4.0]))),
    ("xlog1py", (np.array([0.0, 0.0, 2.0, 3.0]), np.array([-1.0, np.nan, 0.5, 1e-10]))),
    ("gamma", (np.array([0.5, 1.0, 5.0, -0.5, -1.5, -2.5, 30.0]),)),
    ("betaln", (np.array([0.5, 2.0, 10.0]), np.array([3.0, 2.0, 0.25]))),
    ("psi", (np.array([0.3, 1.0, -2.5]),)),
    ("entr", (np.array([0.0, -1.0, 0.5, 3.0, np.inf, np.nan]),)),
    ("rel_entr", (np.array([0.0, 0.0, 1.0, 1.0, 2.0, -1.0, np.nan]), np.array([0.0, 1.0, 0.0, 2.0, 0.5, 1.0, 1.0]))),
    ("kl_div", (np.array([0.0, 0.0, 1.0, 1.0, 2.0]), np.array([0.0, 1.0, 0.0, 2.0, 0.5]))),
    ("ndtr", (np.array([-30.0, -10.0, -1.0, 0.0, 2.0, 9.0]),)),
    ("log_ndtr", (np.array([-30.0, -10.0, -1.0, 0.0, 2.0, 9.0, 30.0]),)),
    ("gammasgn", (np.array([0.0, -0.0, 2.5, -0.5, -1.5, -2.5, -1.0, np.inf, np.nan]),)),
    ("rgamma", (np.array([0.0, -1.0, -2.5, 0.5, 3.0, 10.0]),)),
    ("beta", (np.array([0.5, 2.0, 10.0]), np.array([3.0, 2.0, 0.25]))),
    ("poch", (np.array([2.0, 0.5, 4.0]), np.array([3.0, 2.0, -1.5]))),
    ("factorial", (np.array([-1.0, 0.0, 1.0, 3.5, 10.0]),)),
    ("comb", (np.array([5.0, 5.0, 5.0, 10.5, 3.0]), np.array([2.0, -1.0, 6.0, 3.0, 3.0]))),
    ("boxcox", (np.array([0.0, 1.0, 2.0, 4.0]), np.array([0.0, 0.5, 0.0, -1.5]))),
    ("boxcox1p", (np.array([-1.0, 1e-10, 1.0, 3.0]), np.array([0.5, 0.5, 0.0, 2.0]))),
])
def test_compositions_match_scipy(name, args):
    with np.errstate(all="ignore"):
        want = getattr(scipy_special, name)(*args)
        if name == "gammasgn" and scipy_special.gammasgn(-0.0) == 0.0:
            # an older SciPy (1.13, the floor) gives 0 at the poles; gradtape follows the newer
            # rule: the sign of a signed zero, NaN at the negative integers
            x = args[0]
            want = np.where(x == 0, np.copysign(1.0, x), np.where((x < 0) & (x == np.floor(x)), np.nan, want))
        for got in three_ways(getattr(special, name), *args):
            _compare(got, want, rtol=1e-13, atol=1e-300)


def test_logsumexp_softmax_log_softmax_signatures_and_defaults():
    x = RNG.standard_normal((3, 4)) * 5
    b = RNG.uniform(-1.0, 1.0, 4)
    _compare(special.logsumexp(x).numpy(), scipy_special.logsumexp(x), 1e-14)
    _compare(special.logsumexp(x, axis=0, keepdims=True).numpy(),
             scipy_special.logsumexp(x, axis=0, keepdims=True), 1e-14)
    for axis in (None, 1, (0, 1)):
        got, sign = special.logsumexp(x, axis=axis, b=b, return_sign=True)
        want, want_sign = scipy_special.logsumexp(x, axis=axis, b=b, return_sign=True)
        _compare(got.numpy(), want, 1e-12)
        np.testing.assert_array_equal(sign.numpy(), want_sign)
    got, sign = special.logsumexp(x, axis=1, b=b, return_sign=True, keepdims=True)
    assert got.shape == sign.shape == (3, 1)
    for fn in ("softmax", "log_softmax"):  # axis=None is over every element, as SciPy's default
        _compare(getattr(special, fn)(x).numpy(), getattr(scipy_special, fn)(x), 1e-13)
        _compare(getattr(special, fn)(x, axis=0).numpy(), getattr(scipy_special, fn)(x, axis=0), 1e-13)


def test_derivatives_are_the_next_polygamma():
    x = np.array([0.3, 2.5, -1.5, 9.0])
    np.testing.assert_allclose(gt.grad(lambda t: gt.sum(special.gammaln(t)))(x), scipy_special.digamma(x),
                               rtol=1e-13)
    hess = gt.hessian(lambda t: gt.sum(special.digamma(t)))(x)
    np.testing.assert_allclose(np.diag(hess), scipy_special.polygamma(2, x), rtol=1e-12)
    _, tangent = gt.jvp(lambda t: special.polygamma(1, t), (x,), (np.ones(4),))
    np.testing.assert_allclose(tangent, scipy_special.polygamma(2, x), rtol=1e-12)


def test_xlogy_gradient_is_zero_where_x_is_zero():
    gx, gy = gt.grad(lambda a, b: gt.sum(special.xlogy(a, b)), argnums=(0, 1))(np.array([0.0, 2.0]),
                                                                           np.array([0.0, 4.0]))
    np.testing.assert_array_equal(gx, [0.0, np.log(4.0)])
    np.testing.assert_array_equal(gy, [0.0, 0.5])


def test_multigammaln_and_the_more_functions_differentiate():
    np.testing.assert_allclose(special.multigammaln(gt.constant([3.0, 4.5]), 3).numpy(),
                               scipy_special.multigammaln(np.array([3.0, 4.5]), 3), rtol=1e-13)
    x = np.array([0.3, 1.2, 2.5])
    np.testing.assert_allclose(gt.grad(lambda t: gt.sum(special.entr(t)))(x), -(np.log(x) + 1), rtol=1e-13)
    np.testing.assert_allclose(gt.grad(lambda t: gt.sum(special.ndtr(t)))(x), np.exp(-x * x / 2) / np.sqrt(2 * np.pi),
                               rtol=1e-13)


def test_polygamma_order_must_be_a_nonnegative_int():
    with pytest.raises(ValueError, match=r"polygamma: n must be a non-negative Python int, got -1"):
        special.polygamma(-1, 1.0)
    with pytest.raises(ValueError, match=r"got 1.5"):
        special.polygamma(1.5, 1.0)
