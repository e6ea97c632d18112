"""gradtape.array and gradtape.asarray: NumPy's constructors, with the tensors
inside a nested list kept differentiable (stacked, as jnp.array does).

`np.array([x, 2 * x])` cannot do this: NumPy builds a plain array, and
`Tensor.__array__` refuses to when a tape differentiates x (see
tracer/numpy_dispatch.py). These are the spellings that record.
"""
from __future__ import annotations

import numpy as np

from ..tracer.tensor import Tensor
from ._promote import as_tensor, convert, holds_tensor, stacked
from .shape import reshape

__all__ = ["array", "asarray"]


def array(obj, dtype=None, *, copy=True, ndmin=0):
    """A Tensor from a Tensor, an array-like, or a nested list/tuple that holds Tensors.

    Tensors inside lists are stacked along new leading axes (recorded, so
    gradients flow to each of them), like `jax.numpy.array`; Python numbers
    and arrays next to them become constants of the result.

    Args:
      obj: a Tensor, array-like, or nested sequence mixing Tensors, arrays and numbers.
      dtype: the result dtype; by default NumPy's promotion of the items
        (Python numbers are weak: `[x_float32, 2.0]` stays float32).
      copy: accepted for NumPy compatibility (tensors are immutable).
      ndmin: the minimum number of dimensions; 1s are prepended, as in NumPy.

    Returns:
      A Tensor.

    Raises:
      ValueError: the nested items do not all have the same shape.

    Example::

        >>> x = gradtape.constant(1.0)
        >>> with gradtape.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gradtape.mean(gradtape.array([x, 2 * x])) + x
        >>> tape.gradient(y, x)
        Tensor(2.5, dtype=float64)
    """
    if holds_tensor(obj):
        t = stacked(obj, "array")
    elif isinstance(obj, Tensor):
        t = obj
    else:
        t = Tensor(np.array(obj))
    if dtype is not None:
        t = convert(t, np.dtype(dtype))
    if t.ndim < ndmin:
        t = reshape(t, (1,) * (ndmin - t.ndim) + t.shape)
    return t


def asarray(obj, dtype=None):
    """Like `array`, without copying: a Tensor is returned as it is (cast if `dtype` differs).

    Example::

        >>> gradtape.asarray([gradtape.constant(1.0), 2.0]).shape
        (2,)
    """
    if isinstance(obj, Tensor) and dtype is None:
        return obj
    return array(obj, dtype) if holds_tensor(obj) or isinstance(obj, Tensor) else as_tensor(obj, dtype)
