"""scipy.special's functions on tensors, differentiable, with SciPy's names,
signatures and values (SciPy itself is not needed).

    from gradtape.scipy import special
    special.gammaln(t), special.logsumexp(t, axis=0, b=w), special.softmax(t, axis=-1)

gammaln and the polygamma family (digamma = psi = polygamma(0, .)) are ops
with native code; their derivatives are the next polygamma, so derivatives
of every order exist. The others are compositions of gradtape's ops.
Values follow scipy.special (tests/functions/test_special.py), with these
documented exception: polygamma(n >= 1, -inf) is NaN (SciPy: inf for n = 1).
"""
from __future__ import annotations

import numpy as np

from .functions import elementwise as ew
from .functions.bessel import bessel_i
from .functions import elementwise_division as division
from .functions import elementwise_more
from .functions import nn, reductions
from .functions._promote import float_operand, normalize_axis, promote_pair
from .functions.shape import reshape
from .ir.ops import special as special_ops
from .tracer.dispatch import bind

__all__ = ["erf", "erfc", "expit", "logit", "gammaln", "digamma", "psi", "polygamma", "i0", "i1", "i0e", "i1e", "gamma", "betaln",
           "xlogy", "xlog1py", "logsumexp", "softmax", "log_softmax", "entr", "rel_entr", "kl_div", "ndtr",
           "log_ndtr", "gammasgn", "rgamma", "beta", "poch", "factorial", "comb", "multigammaln", "boxcox",
           "boxcox1p"]

erf = ew.erf
erfc = ew.erfc


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x)), as scipy.special.expit (stable for any x).

    Example::

        >>> from gradtape.scipy import special
        >>> special.expit(gradtape.constant([0.0, -800.0]))
        Tensor([0.5, 0. ], dtype=float64)
    """
    return nn.sigmoid(x)


def logit(x):
    """log(x / (1 - x)), the inverse of expit, as scipy.special.logit: -inf at 0, inf at 1, NaN outside [0, 1].

    Computed as log(x) - log1p(-x), so it keeps its digits near 0 and 1; its derivative is 1 / (x (1 - x)).

    Example::

        >>> from gradtape.scipy import special
        >>> special.logit(gradtape.constant([0.5, 0.75]))
        Tensor([0.        , 1.09861229], dtype=float64)
    """
    x = float_operand(x)
    return ew.subtract(ew.log(x), ew.log1p(ew.negative(x)))


def gammaln(x):
    """log(abs(Gamma(x))), as scipy.special.gammaln; its derivative is digamma(x).

    Native code calls the C library's lgamma. Poles (0, -1, -2, ...) give +inf, and
    -inf gives -inf, as SciPy (C's lgamma gives +inf there).

    Example::

        >>> from gradtape.scipy import special
        >>> special.gammaln(gradtape.constant([1.0, 5.0, 0.5]))
        Tensor([0.        , 3.17805383, 0.57236494], dtype=float64)
    """
    return bind(special_ops.gammaln_p, float_operand(x))


def i0(x):
    """The modified Bessel function of the first kind of order 0, as scipy.special.i0 (its derivative is i1).

    Example::

        >>> from gradtape.scipy import special
        >>> special.i0(gradtape.constant(1.0))
        Tensor(1.26606588, dtype=float64)
    """
    return bessel_i("i0", x, 0, scaled=False)


def i1(x):
    """The modified Bessel function of the first kind of order 1, as scipy.special.i1
    (its derivative is i0(x) - i1(x) / x, 1/2 at 0).

    Example::

        >>> from gradtape.scipy import special
        >>> special.i1(gradtape.constant(1.0))
        Tensor(0.5651591, dtype=float64)
    """
    return bessel_i("i1", x, 1, scaled=False)


def i0e(x):
    """exp(-abs(x)) i0(x), as scipy.special.i0e: finite for every finite x (0 at +-inf).

    Example::

        >>> from gradtape.scipy import special
        >>> special.i0e(gradtape.constant(1.0))
        Tensor(0.46575961, dtype=float64)
    """
    return bessel_i("i0e", x, 0, scaled=True)


def i1e(x):
    """exp(-abs(x)) i1(x), as scipy.special.i1e.

    Example::

        >>> from gradtape.scipy import special
        >>> special.i1e(gradtape.constant(1.0))
        Tensor(0.20791042, dtype=float64)
    """
    return bessel_i("i1e", x, 1, scaled=True)


def polygamma(n, x):
    """psi^(n)(x), the n-th derivative of digamma, as scipy.special.polygamma (n a Python int >= 0).

    Args:
      n: the order, a non-negative Python int (not a tensor).
      x: a Tensor or array-like (integers become float64).

    Returns:
      A Tensor of x's shape; its derivative is polygamma(n + 1, x).

    Raises:
      ValueError: n is not a non-negative integer.

    Example::

        >>> from gradtape.scipy import special
        >>> special.polygamma(1, gradtape.constant(1.0))   # pi**2 / 6
        Tensor(1.64493407, dtype=float64)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"polygamma: n must be a non-negative Python int, got {n!r}")
    return bind(special_ops.polygamma_p, float_operand(x), n=int(n))


def digamma(x):
    """psi(x) = d/dx log Gamma(x), as scipy.special.digamma; its derivative is polygamma(1, x).

    digamma(+0) = -inf, digamma(-0) = +inf and NaN at the negative integers, as SciPy.

    Example::

        >>> from gradtape.scipy import special
        >>> special.digamma(gradtape.constant([1.0, -0.5])).numpy().round(6)   # -euler_gamma, 0.0365
        array([-0.577216,  0.03649 ])
    """
    return polygamma(0, x)


psi = digamma


def gamma(x):
    """Gamma(x), as scipy.special.gamma, computed as sign * exp(gammaln(x)).

    Its relative error grows with abs(gammaln(x)) (about 1e-13 near x = 170,
    where it overflows as SciPy's does); poles give inf (SciPy: inf at 0, NaN at negative integers);
    -inf gives NaN.

    Example::

        >>> from gradtape.scipy import special
        >>> special.gamma(gradtape.constant([5.0, -0.5])).numpy().round(6)
        array([24.      , -3.544908])
    """
    x = float_operand(x)
    negative_odd = ew.logical_and(ew.less(x, 0.0), ew.equal(division.remainder(ew.floor(ew.negative(x)), 2.0), 0.0))
    value = ew.where(negative_odd, ew.negative(ew.exp(gammaln(x))), ew.exp(gammaln(x)))
    return ew.where(ew.equal(x, -np.inf), np.nan, value)  # SciPy: Gamma has no limit at -inf


def betaln(a, b):
    """log(abs(B(a, b))) = gammaln(a) + gammaln(b) - gammaln(a + b), as scipy.special.betaln.

    Example::

        >>> from gradtape.scipy import special
        >>> special.betaln(gradtape.constant(2.0), 3.0)   # log(1/12)
        Tensor(-2.48490665, dtype=float64)
    """
    a, b = promote_pair(a, b, True)
    return ew.subtract(ew.add(gammaln(a), gammaln(b)), gammaln(ew.add(a, b)))


def _xlog(name, log_fn, x, y):
    x, y = promote_pair(x, y, True)
    zero = ew.logical_and(ew.equal(x, 0.0), ew.equal(y, y))  # 0 * log(y) is 0 unless y is NaN
    safe_y = ew.where(zero, 1.0, y)
    return ew.where(zero, 0.0, ew.multiply(x, log_fn(safe_y)))


def xlogy(x, y):
    """x * log(y), and 0 where x == 0 (unless y is NaN), as scipy.special.xlogy.

    Where x == 0 the gradient is 0 in both operands (y = 0 gives no NaN).

    Example::

        >>> from gradtape.scipy import special
        >>> special.xlogy(gradtape.constant([0.0, 2.0]), [0.0, np.e])
        Tensor([0., 2.], dtype=float64)
    """
    return _xlog("xlogy", ew.log, x, y)


def xlog1py(x, y):
    """x * log1p(y), and 0 where x == 0 (unless y is NaN), as scipy.special.xlog1py.

    Example::

        >>> from gradtape.scipy import special
        >>> special.xlog1py(gradtape.constant([0.0, 2.0]), [-1.0, np.e - 1.0])
        Tensor([0., 2.], dtype=float64)
    """
    return _xlog("xlog1py", ew.log1p, x, y)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) over `axis`, without overflow, as scipy.special.logsumexp.

    Args:
      a: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints.
      b: scale factors broadcast against a (differentiable), or None.
      keepdims: keep the reduced axes with length 1.
      return_sign: also return the sign of the sum; the first result is then
        log(abs(sum)) (a negative sum gives NaN without it, as in SciPy).

    Returns:
      A Tensor, or (Tensor, sign Tensor) with return_sign.

    Example::

        >>> from gradtape.scipy import special
        >>> special.logsumexp(gradtape.constant([1.0, 2.0]), b=[1.0, -3.0], return_sign=True)
        (Tensor(2.96778982, dtype=float64), Tensor(-1., dtype=float64))
    """
    if not return_sign:
        return nn.logsumexp(a, axis=axis, keepdims=keepdims, b=b)
    a = float_operand(a)
    if b is not None:
        a, b = promote_pair(a, b, True)
        a = ew.add(a, ew.multiply(b, 0.0))  # broadcast a against b (b may add axes)
    axes = normalize_axis("logsumexp", axis, a.ndim)
    m = nn._shift(a, axes)
    e = ew.exp(ew.subtract(a, m))
    total = reductions.sum(e if b is None else ew.multiply(b, e), axis=axes, keepdims=True)
    out, sign = ew.add(ew.log(ew.abs(total)), m), ew.sign(total)
    if not keepdims:
        shape = tuple(n for i, n in enumerate(a.shape) if i not in axes)
        out, sign = reshape(out, shape), reshape(sign, shape)
    return out, sign


def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) over `axis` (None: all elements, as SciPy's default), as scipy.special.softmax.

    Example::

        >>> from gradtape.scipy import special
        >>> special.softmax(gradtape.constant([0.0, np.log(3.0)]))
        Tensor([0.25, 0.75], dtype=float64)
    """
    return nn.softmax(x, axis=axis)


def log_softmax(x, axis=None):
    """x - logsumexp(x) over `axis` (None: all elements), as scipy.special.log_softmax.

    Example::

        >>> from gradtape.scipy import special
        >>> special.log_softmax(gradtape.constant([0.0, 1000.0]))
        Tensor([-1000.,     0.], dtype=float64)
    """
    return nn.log_softmax(x, axis=axis)



# --- more of scipy.special: compositions of the functions above ------------------------

def entr(x):
    """-x log x for x > 0, 0 at 0 and -inf for x < 0, as scipy.special.entr.

    Example::

        >>> from gradtape.scipy import special
        >>> special.entr(gradtape.constant([0.0, 0.5])).numpy().round(6).tolist()   # (SciPy's 0 is +0.0)
        [-0.0, 0.346574]
    """
    x = float_operand(x)
    return ew.where(ew.less(x, 0.0), -np.inf, ew.negative(xlogy(x, x)))


def rel_entr(x, y):
    """x log(x / y) for x, y > 0; 0 at x = 0 <= y; inf otherwise, as scipy.special.rel_entr.

    Example::

        >>> from gradtape.scipy import special
        >>> special.rel_entr(gradtape.constant([1.0, 0.0]), [2.0, 1.0])
        Tensor([-0.69314718,  0.        ], dtype=float64)
    """
    x, y = promote_pair(x, y, True)
    both = ew.logical_and(ew.greater(x, 0.0), ew.greater(y, 0.0))
    safe_x, safe_y = ew.where(both, x, 1.0), ew.where(both, y, 1.0)
    inside = ew.multiply(safe_x, ew.log(ew.divide(safe_x, safe_y)))
    edge = ew.where(ew.logical_and(ew.equal(x, 0.0), ew.greater_equal(y, 0.0)), 0.0, np.inf)
    nan = ew.logical_or(ew.not_equal(x, x), ew.not_equal(y, y))
    return ew.where(nan, ew.add(x, y), ew.where(both, inside, edge))


def kl_div(x, y):
    """rel_entr(x, y) - x + y, as scipy.special.kl_div (inf where rel_entr is).

    Example::

        >>> from gradtape.scipy import special
        >>> special.kl_div(gradtape.constant([1.0, 0.0]), [2.0, 1.0])
        Tensor([0.30685282, 1.        ], dtype=float64)
    """
    x, y = promote_pair(x, y, True)
    return ew.add(ew.subtract(rel_entr(x, y), x), y)


_SQRT_HALF = float(np.sqrt(0.5))


def ndtr(x):
    """The standard normal CDF, erfc(-x / sqrt(2)) / 2, as scipy.special.ndtr (accurate in the lower tail).

    Example::

        >>> from gradtape.scipy import special
        >>> special.ndtr(gradtape.constant([0.0, -10.0]))
        Tensor([5.00000000e-01, 7.61985302e-24], dtype=float64)
    """
    x = float_operand(x)
    return ew.multiply(ew.erfc(ew.multiply(x, -_SQRT_HALF)), 0.5)


def log_ndtr(x):
    """log(ndtr(x)), as scipy.special.log_ndtr: log1p(-ndtr(-x)) for x > 0 (no rounding to
    log(1)), log(ndtr(x)) below, finite down to x = -37 (ndtr underflows after).

    Example::

        >>> from gradtape.scipy import special
        >>> special.log_ndtr(gradtape.constant([0.0, 10.0]))
        Tensor([-6.93147181e-01, -7.61985302e-24], dtype=float64)
    """
    x = float_operand(x)
    positive = ew.greater(x, 0.0)
    upper = ew.log1p(ew.negative(ndtr(ew.negative(ew.where(positive, x, 0.0)))))
    lower = ew.log(ndtr(ew.where(positive, 0.0, x)))
    return ew.where(positive, upper, lower)


def gammasgn(x):
    """The sign of Gamma(x): 1 for x > 0, alternating between the poles for x < 0, NaN at
    the poles below 0; +-1 at +-0, as scipy.special.gammasgn. Its derivative is 0.

    Example::

        >>> from gradtape.scipy import special
        >>> special.gammasgn(gradtape.constant([2.5, -0.5, -1.5]))
        Tensor([ 1., -1.,  1.], dtype=float64)
    """
    x = float_operand(x)
    odd = ew.equal(division.remainder(ew.floor(ew.negative(x)), 2.0), 0.0)
    sign = ew.where(ew.greater(x, 0.0), 1.0, ew.where(odd, -1.0, 1.0))
    pole = ew.logical_and(ew.less(x, 0.0), ew.equal(x, ew.floor(x)))
    zero = ew.where(ew.equal(x, 0.0), elementwise_more.copysign(1.0, x), sign)
    return ew.where(ew.logical_or(pole, ew.not_equal(x, x)), np.nan, zero)


def rgamma(x):
    """1 / Gamma(x), 0 at the poles, as scipy.special.rgamma.

    Example::

        >>> from gradtape.scipy import special
        >>> special.rgamma(gradtape.constant([3.0, -1.0]))
        Tensor([0.5, 0. ], dtype=float64)
    """
    x = float_operand(x)
    pole = ew.logical_and(ew.less_equal(x, 0.0), ew.equal(x, ew.floor(x)))
    safe = ew.where(pole, 1.0, x)
    return ew.where(pole, 0.0, ew.divide(gammasgn(safe), ew.exp(gammaln(safe))))


def beta(a, b):
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), for a, b > 0, as scipy.special.beta (exp of betaln).

    Example::

        >>> from gradtape.scipy import special
        >>> special.beta(gradtape.constant(2.0), 3.0)
        Tensor(0.08333333, dtype=float64)
    """
    return ew.exp(betaln(a, b))


def poch(z, m):
    """The rising factorial Gamma(z + m) / Gamma(z), for z > 0 and z + m > 0, as scipy.special.poch.

    Example::

        >>> from gradtape.scipy import special
        >>> special.poch(gradtape.constant(2.0), 3.0)
        Tensor(24., dtype=float64)
    """
    z, m = promote_pair(z, m, True)
    return ew.exp(ew.subtract(gammaln(ew.add(z, m)), gammaln(z)))


def factorial(n, exact=False):
    """n! = Gamma(n + 1) for real n >= 0, 0 for n < 0, as scipy.special.factorial with exact=False.

    Example::

        >>> from gradtape.scipy import special
        >>> special.factorial(gradtape.constant([3.0, 3.5, -1.0])).numpy().round(6)
        array([ 6.      , 11.631728,  0.      ])
    """
    if exact:
        raise TypeError("factorial: exact=True gives Python integers; gradtape computes exact=False")
    n = float_operand(n)
    negative = ew.less(n, 0.0)
    return ew.where(negative, 0.0, gamma(ew.add(ew.where(negative, 0.0, n), 1.0)))


def comb(N, k, *, exact=False, repetition=False):
    """N choose k = exp(gammaln(N + 1) - gammaln(k + 1) - gammaln(N - k + 1)), 0 outside
    0 <= k <= N, as scipy.special.comb with exact=False.

    Example::

        >>> from gradtape.scipy import special
        >>> special.comb(gradtape.constant(5.0), 2.0)
        Tensor(10., dtype=float64)
    """
    if exact:
        raise TypeError("comb: exact=True gives Python integers; gradtape computes exact=False")
    N, k = promote_pair(N, k, True)
    if repetition:
        N = ew.subtract(ew.add(N, k), 1.0)
    valid = ew.logical_and(ew.greater_equal(k, 0.0), ew.logical_and(ew.greater_equal(N, k), ew.greater_equal(N, 0.0)))
    sN, sk = ew.where(valid, N, 1.0), ew.where(valid, k, 0.0)
    logs = ew.subtract(ew.subtract(gammaln(ew.add(sN, 1.0)), gammaln(ew.add(sk, 1.0))),
                       gammaln(ew.add(ew.subtract(sN, sk), 1.0)))
    return ew.where(valid, ew.exp(logs), 0.0)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension d (a Python int), as scipy.special.multigammaln.

    Example::

        >>> from gradtape.scipy import special
        >>> special.multigammaln(gradtape.constant(3.0), 2)   # log(pi) / 2 + gammaln(3) + gammaln(2.5)
        Tensor(1.55019499, dtype=float64)
    """
    a = float_operand(a)
    d = int(d)
    total = ew.multiply(ew.add(ew.multiply(a, 0.0), 0.0), 1.0)
    for j in range(d):
        total = ew.add(total, gammaln(ew.subtract(a, j / 2.0)))
    return ew.add(total, d * (d - 1) / 4.0 * float(np.log(np.pi)))


def boxcox(x, lmbda):
    """The Box-Cox transform (x**lmbda - 1) / lmbda, log(x) at lmbda = 0, as scipy.special.boxcox.

    Example::

        >>> from gradtape.scipy import special
        >>> special.boxcox(gradtape.constant([1.0, 4.0]), 0.5)
        Tensor([0., 2.], dtype=float64)
    """
    x, lmbda = promote_pair(x, lmbda, True)
    return _boxcox(ew.log(x), lmbda)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x, accurate for small x, as scipy.special.boxcox1p.

    Example::

        >>> from gradtape.scipy import special
        >>> special.boxcox1p(gradtape.constant([0.0, 3.0]), 0.5)
        Tensor([0., 2.], dtype=float64)
    """
    x, lmbda = promote_pair(x, lmbda, True)
    return _boxcox(ew.log1p(x), lmbda)


def _boxcox(log_x, lmbda):
    zero = ew.equal(lmbda, 0.0)
    safe = ew.where(zero, 1.0, lmbda)
    return ew.where(zero, log_x, ew.divide(ew.expm1(ew.multiply(safe, log_x)), safe))
