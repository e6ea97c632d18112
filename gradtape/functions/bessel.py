"""Modified Bessel functions of the first kind, orders 0 and 1: numpy.i0, and
scipy.special's i0, i1, i0e, i1e (gradtape.scipy.special re-exports them).

Compositions of elementwise ops, computed in float64 (float32 input is
cast back, as NumPy returns float32 for it):

    |x| < 30   the power series, summed by Horner's rule in t = x^2 / 4:
               I0 = sum t^k / k!^2,  I1 = x/2 sum t^k / (k! (k+1)!)
               (positive terms: no cancellation; 60 terms leave < 1e-20)
    |x| >= 30  the large-argument expansion (Abramowitz and Stegun 9.7.1):
               I_v(x) = e^x / sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4v^2 - (2j-1)^2) / (k! (8x)^k),
               whose terms keep falling to ~e^(-2x) < 1e-26; I0 is even, I1 odd

Derivatives are those of these sums, which term by term are the sums of
the derivative (I0' = I1, I1' = I0 - I1 / x): every order, both modes.
Each branch gets an input it is finite on (the other branch's value is
masked out by `where`, and so is its derivative), so no NaN leaks from the
branch not taken. Like numpy.i0, i0 is exp(x) * s / sqrt(x) in that order
on the large branch: it overflows to inf past x ~ 709.8 and gives NaN at
+-inf, as NumPy does; i0e and i1e never form exp(x) and are finite there.
"""
from __future__ import annotations

import math

import numpy as np

from ..tracer.numpy_dispatch import implements
from . import elementwise as ew
from ._promote import as_tensor, convert

__all__ = ["i0"]

_SPLIT = 30.0
_SERIES_TERMS = 60
_EXPANSION_TERMS = 30


def _series_coefficients(order: int) -> list:
    """1 / (k! (k + order)!) for k = 0..terms-1."""
    return [1.0 / (math.factorial(k) * math.factorial(k + order)) for k in range(_SERIES_TERMS)]


def _expansion_coefficients(order: int) -> list:
    """The coefficient of (1 / x)^k in the large-argument expansion of I_order (times e^x / sqrt(2 pi x))."""
    mu = 4.0 * order * order
    out, c = [], 1.0
    for k in range(_EXPANSION_TERMS):
        if k:
            c *= -(mu - (2 * k - 1) ** 2) / (k * 8.0)
        out.append(c)
    return out


_SERIES = {order: _series_coefficients(order) for order in (0, 1)}
_EXPANSION = {order: _expansion_coefficients(order) for order in (0, 1)}


def _horner(coefficients, t):
    """sum_k coefficients[k] t^k."""
    acc = ew.add(ew.multiply(t, coefficients[-1]), coefficients[-2])
    for c in reversed(coefficients[:-2]):
        acc = ew.add(ew.multiply(acc, t), c)
    return acc


def _float64(name, x):
    x = as_tensor(x)
    if x.dtype.kind not in "fiub":
        raise TypeError(f"{name}: expected real numbers, got a tensor of dtype {x.dtype} (shape {x.shape})")
    out_dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    return convert(x, np.float64), out_dtype


def _bessel(name, x, order: int, scaled: bool):
    """I_order(x), or exp(-|x|) I_order(x) when scaled."""
    x, out_dtype = _float64(name, x)
    size = ew.abs(x)
    large = ew.greater_equal(size, _SPLIT)  # False for NaN, which the series carries through
    small_x = ew.where(large, 0.0, x)
    t = ew.multiply(ew.multiply(small_x, small_x), 0.25)
    series = _horner(_SERIES[order], t)
    if order == 1:
        series = ew.multiply(series, ew.multiply(small_x, 0.5))
    if scaled:
        series = ew.multiply(series, ew.exp(ew.negative(ew.abs(small_x))))
    big = ew.where(large, size, _SPLIT)
    expansion = _horner(_EXPANSION[order], ew.divide(1.0, big))
    if scaled:
        far = ew.divide(expansion, ew.sqrt(ew.multiply(big, 2.0 * math.pi)))
    else:  # numpy.i0's order of operations on this branch: exp(x) * s / sqrt(x)
        far = ew.divide(ew.multiply(ew.exp(big), ew.multiply(expansion, 1.0 / math.sqrt(2.0 * math.pi))),
                        ew.sqrt(big))
    if order == 1:
        far = ew.where(ew.less(x, 0.0), ew.negative(far), far)  # I1 is odd
    out = ew.where(large, far, series)
    return out if out_dtype == np.float64 else convert(out, out_dtype)


@implements(np.i0)
def i0(x):
    """The modified Bessel function of the first kind of order 0, as numpy.i0.

    Differentiable to every order (its derivative is i1).

    Args:
      x: a Tensor or array-like of real numbers (integers give float64).

    Returns:
      A Tensor of x's shape; inf past abs(x) ~ 709.8 and NaN at +-inf, as NumPy.

    Raises:
      TypeError: complex input.

    Example::

        >>> gradtape.i0(gradtape.constant([0.0, 1.0]))
        Tensor([1.        , 1.26606588], dtype=float64)
    """
    return _bessel("i0", x, 0, scaled=False)


def bessel_i(name: str, x, order: int, scaled: bool):
    """I_order(x) (order 0 or 1), or exp(-|x|) I_order(x) when scaled, for gradtape.scipy.special."""
    return _bessel(name, x, order, scaled)
