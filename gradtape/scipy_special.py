"""scipy.special's functions on tensors, differentiable, with SciPy's names,
signatures and values (SciPy itself is not needed).

    from gradtape.scipy import special
    special.gammaln(t), special.logsumexp(t, axis=0, b=w), special.softmax(t, axis=-1)

gammaln and the polygamma family (digamma = psi = polygamma(0, .)) are ops
with native code; their derivatives are the next polygamma, so derivatives
of every order exist. The others are compositions of gradtape's ops.
Values follow scipy.special (tests/functions/test_special.py), with these
documented exceptions: gammaln(-inf) is +inf (C's lgamma; SciPy: -inf) and
polygamma(n >= 1, -inf) is NaN (SciPy: inf for n = 1).
"""
from __future__ import annotations

import numpy as np

from .functions import elementwise as ew
from .functions import elementwise_division as division
from .functions import nn, reductions
from .functions._promote import float_operand, normalize_axis, promote_pair
from .functions.shape import reshape
from .ir.ops import special as special_ops
from .tracer.dispatch import bind

__all__ = ["erf", "erfc", "expit", "logit", "gammaln", "digamma", "psi", "polygamma", "gamma", "betaln",
           "xlogy", "xlog1py", "logsumexp", "softmax", "log_softmax"]

erf = ew.erf
erfc = ew.erfc


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x)), as scipy.special.expit (stable for any x).

    Example::

        >>> special.expit(gradtape.constant([0.0, -800.0]))
        Tensor([0.5, 0. ], dtype=float64)
    """
    return nn.sigmoid(x)


def logit(x):
    """log(x / (1 - x)), the inverse of expit, as scipy.special.logit: -inf at 0, inf at 1, NaN outside [0, 1].

    Computed as log(x) - log1p(-x), so it keeps its digits near 0 and 1; its derivative is 1 / (x (1 - x)).

    Example::

        >>> special.logit(gradtape.constant([0.5, 0.75]))
        Tensor([0.        , 1.09861229], dtype=float64)
    """
    x = float_operand(x)
    return ew.subtract(ew.log(x), ew.log1p(ew.negative(x)))


def gammaln(x):
    """log |Gamma(x)|, as scipy.special.gammaln; its derivative is digamma(x).

    Native code calls the C library's lgamma. Poles (0, -1, -2, ...) give +inf.

    Example::

        >>> special.gammaln(gradtape.constant([1.0, 5.0, 0.5]))
        Tensor([0.        , 3.17805383, 0.57236494], dtype=float64)
    """
    return bind(special_ops.gammaln_p, float_operand(x))


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

        >>> special.digamma(gradtape.constant([1.0, -0.5]))   # -euler_gamma, 0.0365
        Tensor([-0.57721566,  0.03648998], dtype=float64)
    """
    return polygamma(0, x)


psi = digamma


def gamma(x):
    """Gamma(x), as scipy.special.gamma, computed as sign * exp(gammaln(x)).

    Its relative error grows with |gammaln(x)| (about 1e-13 near x = 170,
    where it overflows as SciPy's does); poles give inf (SciPy: inf at 0, NaN at negative integers).

    Example::

        >>> special.gamma(gradtape.constant([5.0, -0.5]))
        Tensor([24.        , -3.5449077], dtype=float64)
    """
    x = float_operand(x)
    negative_odd = ew.logical_and(ew.less(x, 0.0), ew.equal(division.remainder(ew.floor(ew.negative(x)), 2.0), 0.0))
    return ew.where(negative_odd, ew.negative(ew.exp(gammaln(x))), ew.exp(gammaln(x)))


def betaln(a, b):
    """log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b), as scipy.special.betaln.

    Example::

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

        >>> special.xlogy(gradtape.constant([0.0, 2.0]), [0.0, np.e])
        Tensor([0., 2.], dtype=float64)
    """
    return _xlog("xlogy", ew.log, x, y)


def xlog1py(x, y):
    """x * log1p(y), and 0 where x == 0 (unless y is NaN), as scipy.special.xlog1py.

    Example::

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
        log |sum| (a negative sum gives NaN without it, as in SciPy).

    Returns:
      A Tensor, or (Tensor, sign Tensor) with return_sign.

    Example::

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

        >>> special.softmax(gradtape.constant([0.0, np.log(3.0)]))
        Tensor([0.25, 0.75], dtype=float64)
    """
    return nn.softmax(x, axis=axis)


def log_softmax(x, axis=None):
    """x - logsumexp(x) over `axis` (None: all elements), as scipy.special.log_softmax.

    Example::

        >>> special.log_softmax(gradtape.constant([0.0, 1000.0]))
        Tensor([-1000.,     0.], dtype=float64)
    """
    return nn.log_softmax(x, axis=axis)

