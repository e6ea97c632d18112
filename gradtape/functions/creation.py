"""Arrays shaped like another: zeros_like, ones_like, full_like.

The result is a constant (no gradient flows to the argument), as in NumPy,
JAX and TensorFlow; inside a trace it is a constant of the program.
"""
from __future__ import annotations

import numpy as np

from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from ._promote import as_tensor

__all__ = ["zeros_like", "ones_like", "full_like"]


@implements(np.full_like)
def full_like(x, fill_value, dtype=None):
    """An array of x's shape (and dtype, unless given) filled with `fill_value`.

    Example::

        >>> gradtape.full_like(gradtape.constant([1.0, 2.0]), 7.0)
        Tensor([7., 7.], dtype=float64)
    """
    x = as_tensor(x)
    return Tensor(np.full(x.shape, fill_value, dtype=np.dtype(dtype) if dtype is not None else x.dtype))


@implements(np.zeros_like)
def zeros_like(x, dtype=None):
    """An array of zeros of x's shape (and dtype, unless given)."""
    return full_like(x, 0, dtype)


@implements(np.ones_like)
def ones_like(x, dtype=None):
    """An array of ones of x's shape (and dtype, unless given)."""
    return full_like(x, 1, dtype)
