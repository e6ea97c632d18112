"""Floor division and remainders as NumPy computes them: `remainder` (`mod`,
the `%` operator), `fmod`, `floor_divide` (`//`) and `divmod`, on float and
integer tensors, with NumPy's promotion (bools divide as int8).

`remainder(x, y)` has the sign of y and `fmod(x, y)` the sign of x; both
are differentiable (d/dx = 1, d/dy = minus the integer quotient), and
`floor_divide` has derivative 0 wherever it is continuous. A zero integer
divisor gives 0 (NumPy warns and gives 0); a zero float divisor gives NaN
remainders and +-inf (or NaN) quotients, as NumPy.
"""
from __future__ import annotations


import numpy as np

from ..ir.ops import elementwise_division as ops
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.weak import WeakScalar
from ._promote import convert, promote_pair

__all__ = ["remainder", "mod", "fmod", "floor_divide", "divmod"]

_INT8 = np.dtype(np.int8)


def _operands(x, y):
    weak = x.__class__ is WeakScalar and y.__class__ is WeakScalar
    x, y = promote_pair(x, y)
    if x.dtype.kind == "b":  # NumPy divides bools as int8
        x, y = convert(x, _INT8), convert(y, _INT8)
    return x, y, weak


def _apply(op, x, y):
    x, y, weak = _operands(x, y)
    out = bind(op, x, y)
    return WeakScalar(sym=out._sym) if weak and out._sym is not None else out


@implements(np.remainder, np.mod)
def remainder(x1, x2):
    """The remainder of floor division, with the sign of the divisor: numpy.remainder (`x1 % x2`).

    Args:
      x1, x2: Tensors, arrays or numbers, broadcast together and promoted as
        NumPy does (integers stay integers; bools become int8).

    Returns:
      A Tensor: x1 - floor(x1 / x2) * x2, computed exactly (0 has x2's sign;
      x2 == 0 gives NaN for floats and 0 for integers, as NumPy).

    The derivative is 1 with respect to x1 and -floor(x1 / x2) with respect to x2.

    Example::

        >>> gradtape.remainder(gradtape.constant([5.0, -5.0]), 3.0)
        Tensor([2., 1.], dtype=float64)
    """
    return _apply(ops.remainder_p, x1, x2)


mod = remainder


@implements(np.fmod)
def fmod(x1, x2):
    """The remainder of truncated division, with the sign of the dividend: numpy.fmod (C's fmod).

    Args:
      x1, x2: Tensors, arrays or numbers (NumPy's broadcasting and promotion).

    Returns:
      A Tensor: x1 - trunc(x1 / x2) * x2, exact; x2 == 0 gives NaN for floats, 0 for integers.

    The derivative is 1 with respect to x1 and -trunc(x1 / x2) with respect to x2.

    Example::

        >>> gradtape.fmod(gradtape.constant([5.0, -5.0]), 3.0)
        Tensor([ 2., -2.], dtype=float64)
    """
    return _apply(ops.fmod_p, x1, x2)


@implements(np.floor_divide)
def floor_divide(x1, x2):
    """floor(x1 / x2) as NumPy computes it (`x1 // x2`), consistent with `remainder`.

    Args:
      x1, x2: Tensors, arrays or numbers (NumPy's broadcasting and promotion).

    Returns:
      A Tensor with x1 == floor_divide(x1, x2) * x2 + remainder(x1, x2) up to
      rounding; x2 == 0 gives x1 / x2 (+-inf or NaN) for floats and 0 for integers.
      Its derivative is 0 (it is piecewise constant).

    Example::

        >>> gradtape.floor_divide(gradtape.constant([5.0, -5.0]), 3.0)
        Tensor([ 1., -2.], dtype=float64)
    """
    return _apply(ops.floor_divide_p, x1, x2)


@implements(np.divmod)
def divmod(x1, x2):
    """`(floor_divide(x1, x2), remainder(x1, x2))`, as numpy.divmod and Python's divmod.

    Example::

        >>> q, r = gradtape.divmod(gradtape.constant(-7.0), 2.0)
        >>> float(q), float(r)
        (-4.0, 1.0)
    """
    return floor_divide(x1, x2), remainder(x1, x2)


