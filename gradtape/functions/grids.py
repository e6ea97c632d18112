"""Grids, as in NumPy: linspace with tensor end points, meshgrid.

linspace is start + t * (stop - start) for the fixed fractions t, so it is
differentiable in both end points; meshgrid is reshape + broadcast_to.
"""
from __future__ import annotations

import numpy as np

from ..tracer.numpy_dispatch import implements
from . import elementwise as ew
from ._promote import as_tensor, convert, normalize_axis, promote_float
from .shape import broadcast_to, moveaxis, reshape

__all__ = ["linspace", "meshgrid"]


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """`num` evenly spaced values from start to stop (stop included if endpoint),
    differentiable in start and stop.

    Args:
      start, stop: scalars or Tensors (arrays broadcast together: the values
        run along a new axis `axis`).
      num: the number of values (>= 0).
      endpoint: whether stop is the last value.
      retstep: also return the step (stop - start) / (num - 1 or num).
      dtype: the result's dtype (float64, or the end points' float dtype, by default).
      axis: where the new axis goes in the result.

    Returns:
      A Tensor of shape broadcast(start, stop).shape with `num` inserted at
      `axis`; with retstep, (values, step).

    Raises:
      ValueError: for a negative num.

    Example::

        >>> gradtape.linspace(gradtape.constant(0.0), 1.0, 5).numpy()
        array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    num = int(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    start, stop = (as_tensor(t) for t in promote_float(start, stop))
    div = (num - 1 if endpoint else num) or 1
    delta = ew.subtract(stop, start)
    shape = delta.shape
    fractions = (np.arange(num, dtype=np.float64) / div).reshape((num,) + (1,) * len(shape))
    values = ew.add(start, ew.multiply(fractions.astype(delta.dtype), delta))
    if endpoint and num > 1:  # the last value is stop exactly, as in NumPy
        last = (np.arange(num) == num - 1).reshape(fractions.shape)
        values = ew.where(last, stop, values)
    values = broadcast_to(values, (num,) + shape)
    if dtype is not None:
        values = convert(values, dtype)
    values = moveaxis(values, 0, normalize_axis("linspace", axis, len(shape) + 1)[0])
    if retstep:
        step = ew.divide(delta, float(div)) if num > 1 or not endpoint else ew.multiply(delta, np.nan)
        return values, step
    return values


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate grids from 1-d coordinate vectors (numpy.meshgrid).

    Args:
      *xi: 1-d Tensors or array-likes (others are flattened, as in NumPy).
      sparse: return broadcastable length-1-padded vectors instead of full grids.
      indexing: "xy" (Cartesian: the first two axes swapped) or "ij" (matrix).

    Returns:
      A tuple of Tensors, one per input.

    Raises:
      ValueError: for another `indexing`.

    Example::

        >>> gx, gy = gradtape.meshgrid(gradtape.constant([1.0, 2.0, 3.0]), [4.0, 5.0])
        >>> gx.shape
        (2, 3)
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: valid values for `indexing` are 'xy' and 'ij', got {indexing!r}")
    xs = [reshape(t, (t.size,)) for t in (as_tensor(x) for x in xi)]
    n = len(xs)
    shapes = []
    for i, x in enumerate(xs):
        s = [1] * n
        s[i] = x.size
        shapes.append(s)
    if indexing == "xy" and n > 1:
        for s in shapes:
            s[0], s[1] = s[1], s[0]
    out = [reshape(x, tuple(s)) for x, s in zip(xs, shapes)]
    if not sparse:
        full = tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
        out = [broadcast_to(x, full) for x in out]
    return tuple(out)
