"""Scans and differences along an axis, as NumPy: cumsum, cumprod, diff.

The scans are compositions of existing ops, so they are differentiable to
every order, batch and compile natively without a scan op of their own.
A scan of length n is the log-step (Hillis-Steele) form: ceil(log2 n)
rounds of `y = y (+ or *) shift(y, 2**r)`, where the shift is a `slice`
followed by a `pad` with the identity (0 or 1). That is O(n log n) work in
log2 n fused elementwise loops (a triangular-mask matmul would be O(n^2)),
and its derivatives are the same kind of program: the transposes of slice
and pad are pad and slice.

cumprod multiplies pairs of partial products and never divides, so its
gradient is exact where elements are 0 (d/dx_i of a product that contains
x_i is the product of the others, even when one of them is 0). The
summation order differs from NumPy's sequential one, so results agree to
rounding (the log-step error bound, O(log n) ulps, is the smaller one).
"""
from __future__ import annotations

import numpy as np

from ..ir.ops.indexing import pad_p, pad_value, slice_p
from ..ir.ops.layout import reshape_p
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from ._promote import as_tensor, normalize_axis
from .reductions import _accumulated, _no_out
from .shape import broadcast_to, concatenate

__all__ = ["cumsum", "cumprod", "diff"]

_NO_VALUE = np._NoValue


def _part(x, axis, start, stop):
    """x[start:stop] along `axis` (0 <= start <= stop <= length)."""
    if start == 0 and stop == x.shape[axis]:
        return x
    if start == stop:  # the slice op takes an empty range in one (normalized) form only
        start = stop = 0
    starts = tuple(start if i == axis else 0 for i in range(x.ndim))
    stops = tuple(stop if i == axis else d for i, d in enumerate(x.shape))
    return bind(slice_p, x, starts=starts, stops=stops, steps=(1,) * x.ndim)


def _shifted(x, axis, by, identity):
    """x moved `by` places forward along `axis`, the first `by` entries set to `identity`."""
    n = x.shape[axis]
    widths = tuple((by, 0) if i == axis else (0, 0) for i in range(x.ndim))
    return bind(pad_p, _part(x, axis, 0, n - by), pad_width=widths,
                value=pad_value(identity, x.dtype))


def _scan(name, x, axis, dtype, combine, identity):
    x = _accumulated(x, dtype)
    if axis is None:  # over the flattened array, as NumPy
        x = bind(reshape_p, x, shape=(x.size,)) if x.ndim != 1 else x
        axis = 0
    (axis,) = normalize_axis(name, axis, x.ndim)
    n = x.shape[axis]
    by = 1
    while by < n:
        x = combine(x, _shifted(x, axis, by, identity))
        by *= 2
    return x


@implements(np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along an axis, as numpy.cumsum.

    Args:
      a: a Tensor or array-like.
      axis: the axis to scan; None (the default) scans the flattened array.
      dtype: accumulate and return in this dtype (default: a's, with bools and small
        integers widened to int64 as NumPy does).

    Returns:
      A Tensor of a's shape (1-D when axis is None).

    Raises:
      numpy.exceptions.AxisError: the axis is out of range.
      TypeError: out= is given.

    Example::

        >>> gradtape.cumsum(gradtape.constant([[1.0, 2.0], [3.0, 4.0]]), axis=1)
        Tensor([[1., 3.],
                [3., 7.]], dtype=float64)
    """
    _no_out("cumsum", out)
    return _scan("cumsum", a, axis, dtype, ew.add, 0)


@implements(np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along an axis, as numpy.cumprod; exact gradients with zeros.

    Args:
      a: a Tensor or array-like.
      axis: the axis to scan; None (the default) scans the flattened array.
      dtype: accumulate and return in this dtype (default as for cumsum).

    Returns:
      A Tensor of a's shape (1-D when axis is None).

    Raises:
      numpy.exceptions.AxisError: the axis is out of range.
      TypeError: out= is given.

    Example::

        >>> gradtape.cumprod(gradtape.constant([2.0, 0.0, 3.0]))
        Tensor([2., 0., 0.], dtype=float64)
    """
    _no_out("cumprod", out)
    return _scan("cumprod", a, axis, dtype, ew.multiply, 1)


def _edge(value, like: Tensor, axis):
    """prepend/append, ready to join to `like` along `axis`: a scalar becomes one entry
    (like's shape with length 1 along the axis), as numpy.diff does."""
    if (value.ndim if isinstance(value, Tensor) else np.ndim(value)) != 0:
        return value
    shape = tuple(1 if i == axis else d for i, d in enumerate(like.shape))
    return broadcast_to(value if isinstance(value, Tensor) else np.asarray(value), shape)


@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    """The n-th discrete difference along an axis, as numpy.diff: out[i] = a[i+1] - a[i].

    Args:
      a: a Tensor or array-like.
      n: how many times to take the difference (0 returns a).
      axis: the axis (default: the last).
      prepend, append: values joined to a along the axis first; a scalar is one entry.

    Returns:
      A Tensor whose length along `axis` is (that of a, plus prepend/append) - n.
      Booleans give booleans (a[i+1] != a[i]), as in NumPy.

    Raises:
      ValueError: n is negative, or `a` is 0-d.
      numpy.exceptions.AxisError: the axis is out of range.

    Example::

        >>> gradtape.diff(gradtape.constant([1.0, 4.0, 9.0, 16.0]), n=2)
        Tensor([2., 2.], dtype=float64)
    """
    if n == 0:
        return as_tensor(a)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n!r}")
    a = as_tensor(a)
    if a.ndim == 0:
        raise ValueError("diff: requires input that is at least one dimensional, got a 0-d tensor")
    (axis,) = normalize_axis("diff", axis, a.ndim)
    parts = []
    if prepend is not _NO_VALUE:
        parts.append(_edge(prepend, a, axis))
    parts.append(a)
    if append is not _NO_VALUE:
        parts.append(_edge(append, a, axis))
    if len(parts) > 1:
        a = concatenate(parts, axis=axis)
    subtract = ew.not_equal if a.dtype == np.bool_ else ew.subtract
    for _ in range(n):
        length = a.shape[axis]
        if length == 0:
            break
        a = subtract(_part(a, axis, 1, length), _part(a, axis, 0, length - 1))
    return a


Tensor.cumsum = cumsum
Tensor.cumprod = cumprod
