"""NumPy's remaining elementwise functions on real tensors: fabs, rint, trunc,
fix, modf, ldexp, frexp, angle and real_if_close.

Each composes existing ops; the piecewise-constant ones (rint, trunc, fix and
modf's integer part) have derivative 0, as floor and round do.
"""
from __future__ import annotations

import numpy as np

from ..tracer.numpy_dispatch import implements
from . import elementwise as ew
from ._promote import as_tensor, float_operand, refuse_complex

__all__ = ["fabs", "rint", "trunc", "fix", "modf", "ldexp", "frexp"]


@implements(np.fabs)
def fabs(x):
    """abs(x) in floating point (integers become float64), as numpy.fabs.

    Example::

        >>> gradtape.fabs(gradtape.constant([-1.5, 2.0]))
        Tensor([1.5, 2. ], dtype=float64)
    """
    return ew.abs(float_operand(x))


@implements(np.rint)
def rint(x):
    """x rounded to the nearest integer, halves to even, as numpy.rint; derivative 0.

    Example::

        >>> gradtape.rint(gradtape.constant([0.5, 1.5, -2.5]))
        Tensor([ 0.,  2., -2.], dtype=float64)
    """
    return ew.round(as_tensor(x))


@implements(np.trunc, np.fix)
def trunc(x, out=None):
    """x rounded toward zero, as numpy.trunc and numpy.fix; derivative 0.

    Example::

        >>> gradtape.trunc(gradtape.constant([-1.7, 1.7]))
        Tensor([-1.,  1.], dtype=float64)
    """
    if out is not None:
        raise TypeError("trunc: out= is not supported (tensors are immutable)")
    x = as_tensor(x)
    refuse_complex("trunc", x)
    if x.dtype.kind != "f":
        return x
    return ew.where(ew.less(x, 0.0), ew.ceil(x), ew.floor(x))


fix = trunc


@implements(np.modf)
def modf(x):
    """(fractional part, integer part) of x, both with x's sign, as numpy.modf.

    The fractional part x - trunc(x) has derivative 1; the integer part 0.

    Example::

        >>> gradtape.modf(gradtape.constant([-2.5, 3.25]))
        (Tensor([-0.5 ,  0.25], dtype=float64), Tensor([-2.,  3.], dtype=float64))
    """
    x = float_operand(x)
    whole = trunc(x)
    frac = ew.subtract(x, whole)
    # NumPy: a whole number's fraction is a zero with x's sign (x * 0), and +-inf's is +-0
    frac = ew.where(ew.equal(frac, 0.0), ew.multiply(x, 0.0), frac)
    return ew.where(ew.equal(ew.abs(x), np.inf), ew.multiply(ew.sign(x), 0.0), frac), whole


@implements(np.ldexp)
def ldexp(x1, x2):
    """x1 * 2**x2 for integer x2, as numpy.ldexp (differentiable in x1).

    Example::

        >>> gradtape.ldexp(gradtape.constant([1.5, 3.0]), [2, -1])
        Tensor([6. , 1.5], dtype=float64)
    """
    x1 = float_operand(x1)
    x2 = as_tensor(x2)
    if x2.dtype.kind not in "iub":
        raise TypeError(f"ldexp: the exponents must be integers, got {x2.dtype}")
    return ew.multiply(x1, ew.power(x1.dtype.type(2.0), ew.cast(x2, x1.dtype)))


def _times_power_of_two(x, e):
    """x * 2**e for a float exponent e, in two factors so that neither overflows (2**1074
    for a subnormal x's mantissa is past float64's range, 2**149 past float32's)."""
    half = ew.floor(ew.multiply(e, 0.5))
    two = x.dtype.type(2.0)
    return ew.multiply(ew.multiply(x, ew.power(two, half)), ew.power(two, ew.subtract(e, half)))


@implements(np.frexp)
def frexp(x):
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= abs(mantissa) < 1, as
    numpy.frexp; 0, inf and NaN give (x, 0). The exponent is int32, the mantissa's derivative
    2**-exponent.

    Example::

        >>> m, e = gradtape.frexp(gradtape.constant([8.0, -0.3, 0.0]))
        >>> m.numpy(), e.numpy()
        (array([ 0.5, -0.6,  0. ]), array([ 4, -1,  0], dtype=int32))
    """
    x = float_operand(x)
    a = ew.abs(x)
    regular = ew.logical_and(ew.greater(a, 0.0), ew.less(a, np.inf))
    a = ew.where(regular, a, 1.0)  # 1 (exponent 1) where x is 0, inf or NaN
    e = ew.add(ew.floor(ew.log2(a)), 1.0)
    # log2 rounds: where the mantissa is off [0.5, 1) by that, the exponent is off by one
    m = _times_power_of_two(a, ew.negative(e))
    e = ew.where(ew.greater_equal(m, 1.0), ew.add(e, 1.0), ew.where(ew.less(m, 0.5), ew.subtract(e, 1.0), e))
    e = ew.where(regular, e, 0.0)
    return ew.where(regular, _times_power_of_two(x, ew.negative(e)), x), ew.cast(e, np.int32)


