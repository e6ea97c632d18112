"""NumPy's functions whose result's length depends on the values: unique,
unique_values, intersect1d, union1d, setdiff1d, setxor1d, trim_zeros,
extract.

They need concrete values: on the eager tape the positions are computed
with NumPy from the values and the result gathers the tensor there, so
gradients flow back to the elements chosen (for repeated values, to the
first occurrence NumPy reports). In a staged function the values are
unknown while tracing, so they raise ConcretizationError: there is no
fixed shape to compile (JAX asks for a `size=` for the same reason).
"""
from __future__ import annotations

import numpy as np

from ..tracer.errors import ConcretizationError
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from ._promote import as_tensor
from .shape import concatenate, ravel, take

__all__ = ["unique", "unique_values", "intersect1d", "union1d", "setdiff1d", "setxor1d", "trim_zeros", "extract"]


def _values(name, t):
    if t.is_abstract:
        raise ConcretizationError(
            f"{name}: the result's length depends on the values, which a staged function does not know "
            "while it is traced; call it outside the staged function (on the eager tape it is "
            "differentiable), or keep a fixed-size result (e.g. a mask with gradtape.where)"
        )
    return t.numpy()


def _flat(name, x):
    t = ravel(as_tensor(x))
    return t, _values(name, t)


@implements(np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           sorted=True):
    """The sorted unique values of the flattened ar, as numpy.unique (axis=None only).

    The optional index, inverse and count arrays are int64 tensors.

    Example::

        >>> gradtape.unique(gradtape.constant([3.0, 1.0, 3.0]))
        Tensor([1., 3.], dtype=float64)
    """
    if axis is not None:
        raise TypeError("unique: gradtape supports axis=None only")
    t, v = _flat("unique", ar)
    values, first, inverse, counts = np.unique(v, return_index=True, return_inverse=True, return_counts=True,
                                               equal_nan=equal_nan)
    out = [take(t, first)]
    if return_index:
        out.append(Tensor(first))
    if return_inverse:
        out.append(Tensor(inverse.reshape(np.shape(ar)) if np.ndim(ar) > 1 else inverse))
    if return_counts:
        out.append(Tensor(counts))
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.unique_values)
def unique_values(x):
    """The unique values of x, as numpy.unique_values.

    Example::

        >>> gradtape.unique_values(gradtape.constant([2.0, 2.0, 1.0]))
        Tensor([1., 2.], dtype=float64)
    """
    return unique(x)


def _pick(name, pieces):
    """Concatenate (tensor, positions) pairs, then sort by value as NumPy's set functions do."""
    tensors = [take(t, pos) for t, pos in pieces]
    joined = concatenate(tensors) if len(tensors) > 1 else tensors[0]
    order = np.argsort(_values(name, joined), kind="stable")
    return take(joined, order)


@implements(np.intersect1d)
def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """The sorted values in both ar1 and ar2, taken from ar1, as numpy.intersect1d.

    Example::

        >>> gradtape.intersect1d(gradtape.constant([1.0, 3.0, 4.0]), [3.0, 1.0, 2.0])
        Tensor([1., 3.], dtype=float64)
    """
    t1, v1 = _flat("intersect1d", ar1)
    t2, v2 = _flat("intersect1d", ar2)
    _, i1, i2 = np.intersect1d(v1, v2, assume_unique=assume_unique, return_indices=True)
    out = take(t1, i1)
    return (out, Tensor(i1), Tensor(i2)) if return_indices else out


@implements(np.union1d)
def union1d(ar1, ar2):
    """The sorted unique values of ar1 and ar2 together, as numpy.union1d.

    Example::

        >>> gradtape.union1d(gradtape.constant([3.0, 1.0]), [2.0, 3.0])
        Tensor([1., 2., 3.], dtype=float64)
    """
    t1, _ = _flat("union1d", ar1)
    t2, _ = _flat("union1d", ar2)
    return unique(concatenate([t1, t2]))


@implements(np.setdiff1d)
def setdiff1d(ar1, ar2, assume_unique=False):
    """The sorted unique values of ar1 not in ar2, as numpy.setdiff1d.

    Example::

        >>> gradtape.setdiff1d(gradtape.constant([3.0, 1.0, 2.0]), [2.0])
        Tensor([1., 3.], dtype=float64)
    """
    t1, v1 = _flat("setdiff1d", ar1)
    _, v2 = _flat("setdiff1d", ar2)
    if assume_unique:
        return take(t1, np.flatnonzero(~np.isin(v1, v2)))
    values, first = np.unique(v1, return_index=True)
    return take(t1, first[~np.isin(values, v2)])


@implements(np.setxor1d)
def setxor1d(ar1, ar2, assume_unique=False):
    """The sorted values in exactly one of ar1 and ar2, as numpy.setxor1d.

    Example::

        >>> gradtape.setxor1d(gradtape.constant([1.0, 2.0]), [2.0, 3.0])
        Tensor([1., 3.], dtype=float64)
    """
    t1, v1 = _flat("setxor1d", ar1)
    t2, v2 = _flat("setxor1d", ar2)
    u1, f1 = np.unique(v1, return_index=True)
    u2, f2 = np.unique(v2, return_index=True)
    return _pick("setxor1d", [(t1, f1[~np.isin(u1, u2)]), (t2, f2[~np.isin(u2, u1)])])


@implements(np.trim_zeros)
def trim_zeros(filt, trim="fb", axis=None):
    """filt without its leading ('f') and trailing ('b') zeros, as numpy.trim_zeros (1-D).

    Example::

        >>> gradtape.trim_zeros(gradtape.constant([0.0, 1.0, 2.0, 0.0]))
        Tensor([1., 2.], dtype=float64)
    """
    t = as_tensor(filt)
    if t.ndim != 1:
        raise TypeError(f"trim_zeros: gradtape supports 1-D input, got shape {t.shape}")
    nonzero = np.flatnonzero(_values("trim_zeros", t))
    if nonzero.size == 0:
        return t[0:0]
    start = nonzero[0] if "f" in trim.lower() else 0
    stop = nonzero[-1] + 1 if "b" in trim.lower() else t.shape[0]
    return t[int(start):int(stop)]


@implements(np.extract)
def extract(condition, arr):
    """The elements of the flattened arr where condition holds, as numpy.extract.

    The condition must be concrete (a NumPy array, or a tensor with a value).

    Example::

        >>> x = gradtape.constant([1.0, -2.0, 3.0])
        >>> gradtape.extract(x.numpy() > 0, x)
        Tensor([1., 3.], dtype=float64)
    """
    cond = condition
    if isinstance(cond, Tensor):
        cond = _values("extract", cond)
    return take(ravel(as_tensor(arr)), np.flatnonzero(np.ravel(np.asarray(cond))))
