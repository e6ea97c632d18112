"""The array API's functions, as gradtape's own (so each differentiates and stages like them).

Most of the standard's functions are NumPy 2's, which gradtape already
implements under the same names: they are re-exported by `__init__.py`.
This module holds the rest: the standard's other names (acos for arccos,
concat, permute_dims, pow) and the functions whose signature or semantics
differ from NumPy's (sort with `descending`, the unique_* family,
`diff`'s optional prepend/append, signbit, nextafter).
"""
from __future__ import annotations

import collections

import numpy as np

from .. import functions as gt
from ..functions._promote import as_tensor
from ..tracer.tensor import Tensor

acos, acosh, asin, asinh = gt.arccos, gt.arccosh, gt.arcsin, gt.arcsinh
atan, atan2, atanh = gt.arctan, gt.arctan2, gt.arctanh
pow = gt.power  # noqa: A001  (the standard's name)


def concat(arrays, /, *, axis=0):
    """Join tensors along an existing axis (axis=None: flattened first), as numpy.concat."""
    if axis is None:
        return gt.concatenate([gt.reshape(a, (-1,)) for a in arrays], axis=0)
    return gt.concatenate(list(arrays), axis=axis)


def permute_dims(x, /, axes):
    """x with its axes in the order `axes` (numpy.permute_dims)."""
    return gt.transpose(x, tuple(axes))


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """x sorted along `axis`; descending=True keeps ties in their order, as the standard asks."""
    if not descending:
        return gt.sort(x, axis=axis, stable=True)
    return gt.take_along_axis(x, argsort(x, axis=axis, descending=True), axis=axis)


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """The indices that sort x along `axis` (stable: ties keep their order, descending too)."""
    if not descending:
        return gt.argsort(x, axis=axis, stable=True)
    # the stable ascending order of x reversed along the axis, read back to front
    n = as_tensor(x).shape[axis] if as_tensor(x).ndim else 1
    reversed_order = gt.argsort(gt.flip(x, axis=axis), axis=axis, stable=True)
    return (n - 1) - gt.flip(reversed_order, axis=axis)


UniqueAllResult = collections.namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = collections.namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = collections.namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _unique(x, **returns):
    x = as_tensor(x)
    out = gt.unique(x, **returns, equal_nan=False)  # the standard: every NaN is its own value
    return (out,) if isinstance(out, Tensor) else tuple(out)


def unique_all(x, /):
    """Distinct values of x, the index of each one's first occurrence, x's values as indices
    into them (x's shape) and their counts."""
    values, indices, inverse, counts = _unique(x, return_index=True, return_inverse=True, return_counts=True)
    return UniqueAllResult(values, indices, gt.reshape(inverse, as_tensor(x).shape), counts)


def unique_counts(x, /):
    """Distinct values of x and how often each occurs."""
    values, counts = _unique(x, return_counts=True)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /):
    """Distinct values of x and x's values as indices into them (x's shape)."""
    values, inverse = _unique(x, return_inverse=True)
    return UniqueInverseResult(values, gt.reshape(inverse, as_tensor(x).shape))


def unique_values(x, /):
    """Distinct values of x, sorted (every NaN kept)."""
    return _unique(x)[0]


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The n-th differences along `axis`, after joining `prepend` and `append` (None: nothing)."""
    extra = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return gt.diff(x, n=n, axis=axis, **extra)


def signbit(x, /):
    """Whether each element's sign bit is set (-0.0 and NaNs with the sign bit included)."""
    x = as_tensor(x)
    if x.dtype.kind == "f":
        return gt.less(gt.copysign(1.0, x), 0.0)
    return gt.less(x, 0)


def nextafter(x1, x2, /):
    """The next float after x1 towards x2 (no derivative; eager only: NumPy computes it)."""
    if any(isinstance(x, Tensor) and x._sym is not None for x in (x1, x2)):
        raise NotImplementedError("nextafter has no staged form in gradtape: call it outside the staged function")
    # A Python scalar stays one, so that NumPy promotes it weakly (nextafter(float32, 1.0) is float32).
    x1, x2 = (x.numpy() if isinstance(x, Tensor) else x for x in (x1, x2))
    return as_tensor(np.nextafter(x1, x2))


def clip(x, /, min=None, max=None):  # noqa: A002  (the standard's names)
    """x limited to [min, max] (either may be None)."""
    x = as_tensor(x)
    if min is None and max is None:
        return gt.copy(x)
    return gt.clip(x, min=min, max=max)


def repeat(x, repeats, /, *, axis=None):
    """Each element of x repeated `repeats` times (a count per element if a tensor)."""
    if isinstance(repeats, Tensor):
        repeats = repeats.numpy()  # counts shape the result: they must be known
    return gt.repeat(x, repeats, axis=axis)


def unstack(x, /, *, axis=0):
    """The slices of x along `axis`, as a tuple."""
    return tuple(gt.unstack(x, axis=axis))


def broadcast_arrays(*arrays):
    """The tensors broadcast to one shape (a list)."""
    return list(gt.broadcast_arrays(*arrays))


def nonzero(x, /):
    """The indices of x's nonzero elements, one tensor per axis (refused for a 0-d x, as the standard says)."""
    if as_tensor(x).ndim == 0:
        raise ValueError("nonzero of a 0-d tensor is undefined in the array API standard")
    return tuple(gt.nonzero(x))


def take(x, indices, /, *, axis=None):
    """Elements of x at `indices` along `axis` (x 1-d if axis is None)."""
    if axis is None:
        if as_tensor(x).ndim != 1:
            raise ValueError("take: axis is required unless x is 1-d")
        axis = 0
    return gt.take(x, indices, axis=axis)


def tile(x, repetitions, /):
    """x repeated along each axis as `repetitions` says."""
    return gt.tile(x, tuple(repetitions))


def reshape(x, /, shape, *, copy=None):
    """x with a new shape (copy=False is refused: gradtape's reshape makes a new tensor)."""
    if copy is False:
        raise ValueError("reshape: copy=False cannot be honoured: every gradtape reshape is a new tensor")
    return gt.reshape(x, tuple(shape))


def vecdot(x1, x2, /, *, axis=-1):
    """Dot products of x1 and x2 along `axis`, broadcasting the others."""
    return gt.vecdot(x1, x2, axis=axis)


def tensordot(x1, x2, /, *, axes=2):
    """Sums of products over `axes` (a count, or two sequences of axes)."""
    return gt.tensordot(x1, x2, axes=axes)
