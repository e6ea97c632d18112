"""NumPy functions that run the caller's Python functions over a tensor, or
pick elements among tensors: apply_along_axis, piecewise, choose, insert,
and NumPy 2.1's astype.

Compositions of gradtape's shape, gather and elementwise functions (the
caller's functions run on tensors, so they trace): they differentiate,
batch and compile as those do. Shapes and the number of pieces must be
concrete. Reached through NumPy (np.choose(t, ...)); not exported.
"""
from __future__ import annotations

import numpy as np

from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from ._promote import as_tensor, normalize_axis
from .arrays_more import broadcast_arrays
from .arrays_more import copy as _copy
from .elementwise_division import remainder
from .nn import clip
from .shape import concatenate, moveaxis, ravel, reshape, stack, take
from .sorting import take_along_axis

__all__: list = []


@implements(np.apply_along_axis)
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d of each 1-D slice of arr along `axis`, stacked where that axis was (numpy.apply_along_axis).

    func1d runs once per slice, in Python: a staged function traces each call.

    Example::

        >>> x = gradtape.constant([[1.0, 2.0], [3.0, 4.0]])
        >>> np.apply_along_axis(lambda v: v[0] * v[1], 0, x)
        Tensor([3., 8.], dtype=float64)
    """
    arr = as_tensor(arr)
    (axis,) = normalize_axis("apply_along_axis", axis, arr.ndim)
    moved = moveaxis(arr, axis, -1)
    outer = moved.shape[:-1]
    if 0 in outer:
        raise ValueError("apply_along_axis: cannot apply_along_axis when any iteration dimensions are 0")
    results = [as_tensor(func1d(moved[index], *args, **kwargs)) for index in np.ndindex(*outer)]
    inner = results[0].shape
    out = reshape(stack(results), outer + inner)
    # NumPy puts func1d's own axes where `axis` was
    ours = list(range(len(outer), len(outer) + len(inner)))
    return moveaxis(out, ours, [axis + k for k in range(len(inner))]) if inner else out


@implements(np.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    """funclist[i](x) where condlist[i] holds (a later condition wins), else 0 or the extra last
    piece, as numpy.piecewise; a piece may be a constant instead of a function.

    Each function runs on all of x (NumPy runs it on x[cond] only) and `where` picks: a piece
    that is NaN or infinite outside its condition still gives the right values, but its
    derivative there is a NaN in the gradient (write it with a safe argument, as for `where`).

    Example::

        >>> x = gradtape.constant([-2.0, 0.5, 3.0])
        >>> np.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * v, 7.0])
        Tensor([2., 7., 9.], dtype=float64)
    """
    x = as_tensor(x)
    first = None if np.isscalar(condlist) else condlist[0]
    if first is None or not (isinstance(first, (list, np.ndarray)) or isinstance(first, Tensor) and first.ndim):
        if x.ndim or first is None:  # one condition, NumPy's reading of a scalar or an array of bools
            condlist = [condlist]
    n = len(condlist)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"piecewise: with {n} condition(s), either {n} or {n + 1} functions are expected")

    def piece(f):
        return f(x, *args, **kw) if callable(f) else f

    if len(funclist) == n + 1:  # the default piece: where no condition holds
        out = ew.where(_none_of(condlist), piece(funclist[-1]), 0.0)
    else:
        out = ew.multiply(x, 0.0)
    for cond, f in zip(condlist, funclist):
        out = ew.where(cond, piece(f), out)
    return ew.cast(out, x.dtype) if out.dtype != x.dtype else out


def _none_of(condlist):
    anything = condlist[0]
    for cond in condlist[1:]:
        anything = ew.logical_or(anything, cond)
    return ew.logical_not(anything)


@implements(np.choose)
def choose(a, choices, out=None, mode="raise"):
    """choices[a[i]][i] for each i, a and the choices broadcast together (numpy.choose).

    mode: "raise" (an index outside range(len(choices)) is an error, when a is concrete),
    "wrap" (taken modulo the count) or "clip".

    Example::

        >>> np.choose(np.array([1, 0, 1]), [gradtape.constant([1.0, 2.0, 3.0]), gradtape.constant(9.0)])
        Tensor([9., 2., 9.], dtype=float64)
    """
    if out is not None:
        raise TypeError("choose: out= is not supported on tensors (they are immutable)")
    n = len(choices)
    index = a if isinstance(a, Tensor) else np.asarray(a)
    if index.dtype.kind not in "iub":
        raise TypeError(f"choose: the indices must be integers, got {index.dtype}")
    if mode == "wrap":
        index = remainder(index, n)
    elif mode == "clip":
        index = clip(index, 0, n - 1)
    elif mode == "raise":
        known = index if not isinstance(index, Tensor) else (None if index.is_abstract else index.numpy())
        if known is not None and np.size(known) and (np.min(known) < 0 or np.max(known) >= n):
            raise ValueError("choose: invalid entry in choice array")
    else:
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    *arrays, index = broadcast_arrays(*[as_tensor(c) for c in choices], index)
    return take_along_axis(stack(arrays), reshape(index, (1,) + tuple(index.shape)), axis=0)[0]


@implements(np.insert)
def insert(arr, obj, values, axis=None):
    """arr with values inserted before the indices obj along axis (flattened if None), as numpy.insert.

    NumPy's own insert, run on the element numbers of arr and values, says where each element
    of the result comes from (every form of obj and values' broadcasting, exactly as NumPy
    does them); the result gathers them. obj and the shapes must be concrete.

    Example::

        >>> np.insert(gradtape.constant([[1.0, 2.0], [3.0, 4.0]]), 1, gradtape.constant(9.0), axis=1)
        Tensor([[1., 9., 2.],
                [3., 9., 4.]], dtype=float64)
    """
    arr = as_tensor(arr)
    values = as_tensor(values)
    if isinstance(obj, Tensor):
        if obj.is_abstract:
            raise TypeError("insert: the indices obj must be concrete (they set the result's shape)")
        obj = obj.numpy()
    ours = np.arange(arr.size).reshape(arr.shape)
    theirs = -1 - np.arange(values.size).reshape(values.shape)  # negative: an element of values
    source = np.insert(ours, obj, theirs, axis=axis)
    source = np.where(source >= 0, source, arr.size - 1 - source)
    pool = concatenate([ravel(arr), ravel(ew.cast(values, arr.dtype) if values.dtype != arr.dtype else values)])
    return reshape(take(pool, source.ravel()), source.shape)


if hasattr(np, "astype"):  # NumPy 2.1
    @implements(np.astype)
    def astype(x, dtype, /, *, copy=True, device=None):
        """x as `dtype`, as numpy.astype (x.astype's function form): a float-to-float cast keeps
        the derivative, a cast to an integer dtype has none.

        Example::

            >>> np.astype(gradtape.constant([1.5, -2.5]), np.int32)
            Tensor([ 1, -2], dtype=int32)
        """
        if device not in (None, "cpu"):
            raise ValueError(f"astype: tensors live on the CPU, got device={device!r}")
        x = as_tensor(x)
        dtype = np.dtype(dtype)
        if x.dtype == dtype:
            return _copy(x) if copy else x
        return ew.cast(x, dtype)
