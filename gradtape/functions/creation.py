"""Arrays shaped like another: zeros_like, ones_like, full_like; and full.

The result does not depend on the argument's values, so no gradient flows
to it, as in NumPy, JAX and TensorFlow; inside a trace it is a constant of
the program. A tensor fill value (full_like, full) is broadcast, and is
differentiable.
"""
from __future__ import annotations

import numpy as np

from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from ._promote import as_tensor, holds_tensor
from .shape import broadcast_to

__all__ = ["zeros_like", "ones_like", "full_like", "full"]


@implements(np.full_like)
def full_like(x, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """An array of x's shape (or `shape`; x's dtype unless given) filled with `fill_value`, as numpy.full_like.

    Example::

        >>> gradtape.full_like(gradtape.constant([1.0, 2.0]), 7.0)
        Tensor([7., 7.], dtype=float64)
    """
    x = as_tensor(x)
    return full(x.shape if shape is None else shape, fill_value, x.dtype if dtype is None else dtype)


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with `fill_value`, as numpy.full; a tensor fill value is
    broadcast (and differentiable). np.full itself cannot take a tensor: NumPy writes the
    value into a new array without dispatching, so call gradtape.full.

    Example::

        >>> gradtape.full((2,), gradtape.constant(3.0))
        Tensor([3., 3.], dtype=float64)
    """
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
    if isinstance(fill_value, Tensor) or holds_tensor(fill_value):
        fill = as_tensor(fill_value) if dtype is None else as_tensor(fill_value, np.dtype(dtype))
        return broadcast_to(fill, shape)
    return Tensor(np.full(shape, fill_value, dtype=None if dtype is None else np.dtype(dtype)))


@implements(np.zeros_like)
def zeros_like(x, dtype=None):
    """An array of zeros of x's shape (and dtype, unless given)."""
    return full_like(x, 0, dtype)


@implements(np.ones_like)
def ones_like(x, dtype=None):
    """An array of ones of x's shape (and dtype, unless given)."""
    return full_like(x, 1, dtype)
