"""Arrays shaped like another: zeros_like, ones_like, full_like; and full.

The result does not depend on the argument's values, so no gradient flows
to it, as in NumPy, JAX and TensorFlow; inside a trace it is a constant of
the program. A tensor fill value (full_like, full) is broadcast, and is
differentiable.
"""
from __future__ import annotations

import numpy as np

from ..tracer.basic_index import EXACT_TENSORS
from ..tracer.numpy_dispatch import fast_path, implements
from ..tracer.tensor import Tensor
from ._promote import as_tensor, holds_tensor
from .fresh import always_new
from .shape import broadcast_to

__all__ = ["zeros_like", "ones_like", "full_like", "full"]


@implements(np.full_like)
def full_like(x, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """An array of x's shape (or `shape`; x's dtype unless given) filled with `fill_value`, as numpy.full_like.

    Example::

        >>> gradtape.full_like(gradtape.constant([1.0, 2.0]), 7.0)
        Tensor([7., 7.], dtype=float64)
    """
    _on_the_cpu("full_like", device)
    x = as_tensor(x)
    return full(x.shape if shape is None else shape, fill_value, x.dtype if dtype is None else dtype)


def _on_the_cpu(name, device):
    """NumPy's check of the `device` argument of its *_like functions: None or "cpu" only."""
    if device is not None and device != "cpu":
        raise ValueError(f'{name}: device={device!r} is not supported: gradtape computes on the CPU '
                         '(device="cpu" or None)')


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with `fill_value`, as numpy.full; a tensor fill value is
    broadcast (and differentiable). np.full itself cannot take a tensor: NumPy writes the
    value into a new array without dispatching, so call gradtape.full.

    Example::

        >>> gradtape.full((2,), gradtape.constant(3.0))
        Tensor([3., 3.], dtype=float64)
    """
    if shape.__class__ is tuple:  # the common case, without np.ndim's dispatch
        shape = tuple(int(n) for n in shape)
    else:
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
    if isinstance(fill_value, Tensor) or holds_tensor(fill_value):
        fill = as_tensor(fill_value) if dtype is None else as_tensor(fill_value, np.dtype(dtype))
        return broadcast_to(fill, shape)
    return _constant(np.full(shape, fill_value, dtype=None if dtype is None else np.dtype(dtype)))


# Where np.zeros and np.ones give what np.full(shape, 0 or 1, dtype) gives: bools and numbers
# (np.full(shape, 0, "U1") is "0", np.zeros(shape, "U1") is "").
_FILLED_KINDS = frozenset("biufc")


def _constant(array: np.ndarray) -> Tensor:
    """A constant Tensor of `array`, which gradtape made (Tensor() without its np.asarray)."""
    array.setflags(write=False)  # a tape need not hold it (held_arrays.py); cheaper than .flags
    out = Tensor.__new__(Tensor)
    out._value, out._sym = array, None
    return out


def _filled(x, make):
    """zeros_like(x) or ones_like(x) (`make` np.zeros or np.ones) for x a tensor of a number
    dtype, without full_like's conversions (a loop of small ops calls them on every step);
    None for anything else, left to full_like."""
    if x.__class__ not in EXACT_TENSORS:
        return None
    dtype = x.dtype
    if dtype.kind not in _FILLED_KINDS:
        return None
    return _constant(make(x.shape, dtype))


def _filled_like(x, make, fill_value, dtype, shape):
    out = _filled(x, make) if dtype is None and shape is None else None
    return full_like(x, fill_value, dtype, shape=shape) if out is None else out


@implements(np.zeros_like)
@always_new  # a new constant on every path
def zeros_like(x, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """An array of zeros of x's shape and dtype (unless given), as numpy.zeros_like.

    Example::

        >>> gradtape.zeros_like(gradtape.constant([1.0, 2.0]))
        Tensor([0., 0.], dtype=float64)
    """
    _on_the_cpu("zeros_like", device)
    return _filled_like(x, np.zeros, 0, dtype, shape)


@implements(np.ones_like)
@always_new
def ones_like(x, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """An array of ones of x's shape and dtype (unless given), as numpy.ones_like.

    Example::

        >>> gradtape.ones_like(gradtape.constant([1, 2]))
        Tensor([1, 1], dtype=int64)
    """
    _on_the_cpu("ones_like", device)
    return _filled_like(x, np.ones, 1, dtype, shape)


@fast_path(np.zeros_like)
def _np_zeros_like(args, kwargs):
    return _filled(args[0], np.zeros) if len(args) == 1 and not kwargs else None


@fast_path(np.ones_like)
def _np_ones_like(args, kwargs):
    return _filled(args[0], np.ones) if len(args) == 1 and not kwargs else None
