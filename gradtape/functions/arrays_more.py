"""NumPy's remaining array functions on tensors: append, block, broadcast_arrays,
compress, copy, delete, diagflat, ediff1d, resize, rollaxis, unstack, select,
ix_, matrix_transpose, matvec, vecmat, vecdot, cumulative_sum,
cumulative_prod.

Compositions of gradtape's shape, gather and elementwise functions, so they
differentiate, batch and compile as those do. Indices, counts and shapes
(delete's obj, compress's condition, resize's shape) must be concrete.
"""
from __future__ import annotations

import math

import numpy as np

from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from . import reductions, scans
from .complex_numbers import conj
from ._promote import as_tensor, normalize_axis, promote
from .fresh import fresh
from .rearrange import _count
from .shape import (broadcast_to, concatenate, expand_dims, moveaxis, ravel, reshape, swapaxes, take)


def _numpy(*names):
    """The NumPy functions of these names that the installed NumPy has, for `implements`:
    unstack and cumulative_sum/prod came in NumPy 2.1, matvec and vecmat in 2.2, and NumPy 2.0
    is supported (gradtape's own functions exist on every NumPy)."""
    return tuple(getattr(np, name) for name in names if hasattr(np, name))


__all__ = ["append", "block", "broadcast_arrays", "compress", "copy", "delete", "diagflat", "ediff1d", "resize",
           "rollaxis", "unstack", "select", "ix_", "matrix_transpose", "matvec", "vecmat", "vecdot",
           "cumulative_sum", "cumulative_prod"]


def _concrete_bools(name, what, value):
    if isinstance(value, Tensor):
        if value.is_abstract:
            raise TypeError(f"{name}: `{what}` must be concrete (it sets the result's shape), got an abstract tensor")
        value = value.numpy()
    return np.asarray(value, dtype=bool)


@implements(np.append)
def append(arr, values, axis=None):
    """arr with values appended, as numpy.append (both flattened when axis is None).

    Example::

        >>> gradtape.append(gradtape.constant([1.0, 2.0]), [3.0])
        Tensor([1., 2., 3.], dtype=float64)
    """
    arr, values = promote(arr, values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)])
    return concatenate([arr, values], axis=axis)


@implements(np.block)
def block(arrays):
    """An array assembled from nested lists of blocks, as numpy.block.

    Example::

        >>> gradtape.block([[gradtape.constant([[1.0]]), np.zeros((1, 2))]]).shape
        (1, 3)
    """
    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) else 0

    levels = depth(arrays)
    if levels == 0:
        return as_tensor(arrays)

    def ndim_of(x):
        return max(ndim_of(e) for e in x) if isinstance(x, list) else np.ndim(x)

    ndim = max(ndim_of(arrays), levels)

    def assemble(x, level):
        if not isinstance(x, list):
            t = as_tensor(x)
            return reshape(t, (1,) * (ndim - t.ndim) + t.shape)
        parts = promote(*[assemble(e, level + 1) for e in x])
        return concatenate(list(parts), axis=ndim - levels + level)

    return assemble(arrays, 0)


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    """The arguments broadcast to one shape, as numpy.broadcast_arrays (a tuple).

    Example::

        >>> [t.shape for t in gradtape.broadcast_arrays(gradtape.constant([1.0, 2.0]), np.ones((3, 1)))]
        [(3, 2), (3, 2)]
    """
    tensors = [as_tensor(a) for a in args]
    shape = np.broadcast_shapes(*(t.shape for t in tensors))
    return tuple(broadcast_to(t, shape) for t in tensors)


@implements(np.compress)
def compress(condition, a, axis=None, out=None):
    """The slices of a where condition is True, as numpy.compress (condition concrete).

    Example::

        >>> gradtape.compress([True, False, True], gradtape.constant([1.0, 2.0, 3.0]))
        Tensor([1., 3.], dtype=float64)
    """
    if out is not None:
        raise TypeError("compress: out= is not supported (tensors are immutable)")
    keep = np.flatnonzero(_concrete_bools("compress", "condition", condition))
    a = as_tensor(a)
    if axis is None:
        return take(ravel(a), keep)
    return take(a, keep, axis=axis)


@implements(np.copy)
def copy(a, order="K", subok=False):
    """A new tensor with a's values, as numpy.copy: `t[i] = v` on one never changes the other.
    No data is copied (a tensor's array is never written); it is also the method `t.copy()`.

    Example::

        >>> gradtape.copy(gradtape.constant([1.0]))
        Tensor([1.], dtype=float64)
    """
    return fresh(as_tensor(a))


Tensor.copy = lambda self, order="K": copy(self, order)


@implements(np.delete)
def delete(arr, obj, axis=None):
    """arr without the entries obj (concrete indices, a slice or a mask) along axis, as numpy.delete.

    Example::

        >>> gradtape.delete(gradtape.constant([1.0, 2.0, 3.0]), 1)
        Tensor([1., 3.], dtype=float64)
    """
    arr = as_tensor(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis("delete", axis, arr.ndim)[0]
    keep = np.delete(np.arange(arr.shape[axis]), obj if isinstance(obj, slice) else _count("delete", "obj", obj))
    return take(arr, keep, axis=axis)


@implements(np.diagflat)
def diagflat(v, k=0):
    """A 2-D array with the flattened v on diagonal k, as numpy.diagflat.

    Example::

        >>> gradtape.diagflat(gradtape.constant([[1.0, 2.0]]))
        Tensor([[1., 0.],
                [0., 2.]], dtype=float64)
    """
    return np.diag(ravel(as_tensor(v)), k)  # through NumPy's dispatch to gradtape's diag


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened ary, with optional ends, as numpy.ediff1d.

    Example::

        >>> gradtape.ediff1d(gradtape.constant([1.0, 4.0, 9.0]), to_begin=0.0)
        Tensor([0., 3., 5.], dtype=float64)
    """
    flat = ravel(as_tensor(ary))
    parts = [ew.subtract(flat[1:], flat[:-1])]
    if to_begin is not None:
        parts.insert(0, ravel(as_tensor(to_begin, flat.dtype)))
    if to_end is not None:
        parts.append(ravel(as_tensor(to_end, flat.dtype)))
    return concatenate(parts) if len(parts) > 1 else parts[0]


@implements(np.resize)
def resize(a, new_shape):
    """a's flattened entries repeated (or cut) to fill new_shape, as numpy.resize.

    Example::

        >>> gradtape.resize(gradtape.constant([1.0, 2.0, 3.0]), (2, 2))
        Tensor([[1., 2.],
                [3., 1.]], dtype=float64)
    """
    shape = (int(new_shape),) if np.ndim(new_shape) == 0 else tuple(int(n) for n in new_shape)
    flat = ravel(as_tensor(a))
    total = math.prod(shape)
    if flat.shape[0] == 0:  # NumPy fills from an empty array with zeros
        return Tensor(np.zeros(shape, flat.dtype))
    return reshape(take(flat, np.arange(total) % flat.shape[0]), shape)


@implements(np.rollaxis)
def rollaxis(a, axis, start=0):
    """a with `axis` moved to just before position `start`, as numpy.rollaxis.

    Example::

        >>> gradtape.rollaxis(gradtape.constant(np.ones((2, 3, 4))), 2).shape
        (4, 2, 3)
    """
    a = as_tensor(a)
    n = a.ndim
    axis = normalize_axis("rollaxis", axis, n)[0]
    if start < 0:
        start += n
    if not 0 <= start <= n:
        raise np.exceptions.AxisError(f"rollaxis: start {start} is out of bounds for an array of dimension {n}")
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


@implements(*_numpy("unstack"))
def unstack(x, /, *, axis=0):
    """The slices of x along axis, as a tuple, as numpy.unstack.

    Example::

        >>> len(gradtape.unstack(gradtape.constant(np.ones((3, 2)))))
        3
    """
    x = moveaxis(as_tensor(x), axis, 0)
    return tuple(x[i] for i in range(x.shape[0]))


@implements(np.select)
def select(condlist, choicelist, default=0):
    """The choice of the first true condition, elementwise, else default, as numpy.select.

    Example::

        >>> x = gradtape.constant([-1.0, 0.5, 2.0])
        >>> gradtape.select([x < 0, x > 1], [-x, x * 10], default=x)
        Tensor([ 1. ,  0.5, 20. ], dtype=float64)
    """
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: list of cases must be same length as list of conditions, "
                         f"got {len(condlist)} conditions and {len(choicelist)} choices")
    out = as_tensor(default)
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        out = ew.where(cond, choice, out)
    return out


@implements(np.ix_)
def ix_(*args):
    """Open-mesh reshapes of 1-D sequences, as ``numpy.ix_`` (each gets its own axis).

    Example::

        >>> [t.shape for t in gradtape.ix_(gradtape.constant([1.0, 2.0]), np.arange(3.0))]
        [(2, 1), (1, 3)]
    """
    n = len(args)
    out = []
    for i, a in enumerate(args):
        t = as_tensor(a)
        if t.ndim != 1:
            raise ValueError(f"ix_: cross index must be 1 dimensional, got shape {t.shape}")
        out.append(reshape(t, (1,) * i + (t.shape[0],) + (1,) * (n - i - 1)))
    return tuple(out)


@implements(np.matrix_transpose, np.linalg.matrix_transpose)
def matrix_transpose(x, /):
    """x with its last two axes swapped, as numpy.matrix_transpose.

    Example::

        >>> gradtape.matrix_transpose(gradtape.constant(np.ones((2, 3, 4)))).shape
        (2, 4, 3)
    """
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: input array must be at least 2-dimensional, got shape {x.shape}")
    return swapaxes(x, -1, -2)


@implements(*_numpy("matvec"))
def matvec(x1, x2, /):
    """Matrix-vector products over the last axes, broadcasting the others, as numpy.matvec.

    Example::

        >>> gradtape.matvec(gradtape.constant(np.eye(2)), [1.0, 2.0])
        Tensor([1., 2.], dtype=float64)
    """
    x1, x2 = promote(x1, x2)
    return reductions.sum(ew.multiply(x1, expand_dims(x2, -2)), axis=-1)


@implements(*_numpy("vecmat"))
def vecmat(x1, x2, /):
    """Vector-matrix products over the last axes (x1 conjugated when complex), as numpy.vecmat.

    Example::

        >>> gradtape.vecmat(gradtape.constant([1.0, 2.0]), np.eye(2))
        Tensor([1., 2.], dtype=float64)
    """
    x1, x2 = _conjugated_first(*promote(x1, x2))
    return reductions.sum(ew.multiply(expand_dims(x1, -1), x2), axis=-2)


@implements(np.vecdot, np.linalg.vecdot)
def vecdot(x1, x2, /, *, axis=-1):
    """Dot products of vectors along axis (x1 conjugated when complex), broadcasting the others, as numpy.vecdot.

    Example::

        >>> gradtape.vecdot(gradtape.constant([[1.0, 2.0]]), [3.0, 4.0])
        Tensor([11.], dtype=float64)
    """
    x1, x2 = _conjugated_first(*promote(x1, x2))
    return reductions.sum(ew.multiply(x1, x2), axis=axis)


def _conjugated_first(x1, x2):
    """(conj(x1), x2): NumPy's vector products conjugate their first operand."""
    return (conj(as_tensor(x1)) if np.dtype(x1.dtype).kind == "c" else x1), x2


def _cumulative(name, scan, x, axis, dtype, include_initial, initial):
    x = as_tensor(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis must be given for arrays with more than one dimension, got shape {x.shape}")
        axis = 0
    out = scan(x, axis=axis, dtype=dtype)
    if not include_initial:
        return out
    axis = normalize_axis(name, axis, out.ndim)[0]
    shape = list(out.shape)
    shape[axis] = 1
    first = ew.add(ew.multiply(take(out, [0], axis=axis) if out.shape[axis] else
                               broadcast_to(as_tensor(0, out.dtype), shape), 0), initial)
    return concatenate([broadcast_to(first, shape), out], axis=axis)


@implements(*_numpy("cumulative_sum"))
def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """Running sums along axis, optionally starting with 0, as numpy.cumulative_sum.

    Example::

        >>> gradtape.cumulative_sum(gradtape.constant([1.0, 2.0]), include_initial=True)
        Tensor([0., 1., 3.], dtype=float64)
    """
    return _cumulative("cumulative_sum", scans.cumsum, x, axis, dtype, include_initial, 0)


@implements(*_numpy("cumulative_prod"))
def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """Running products along axis, optionally starting with 1, as numpy.cumulative_prod.

    Example::

        >>> gradtape.cumulative_prod(gradtape.constant([2.0, 3.0]), include_initial=True)
        Tensor([1., 2., 6.], dtype=float64)
    """
    return _cumulative("cumulative_prod", scans.cumprod, x, axis, dtype, include_initial, 1)
