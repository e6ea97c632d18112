"""Sorting and searching, as in NumPy: sort, argsort, take_along_axis,
searchsorted and nonzero.

`sort` is differentiable through the permutation: it gathers x at
argsort(x), so the gradient of each sorted element goes back to where it
came from. argsort, searchsorted and nonzero return integer tensors, which
get no gradient.

On concrete values (eager, on the tape) argsort is NumPy's stable sort,
O(n log n), and the permutation is a constant of the recorded gather. In a
staged function the values are abstract, and the permutation is the
`argsort` op (ir/ops/sort.py), which native code computes in O(n log n)
per row (codegen/sort.py) and which batches; NaN sorts last and ties keep
their order, as in NumPy's stable sort.
"""
from __future__ import annotations

import numpy as np

from ..ir.ops.sort import argsort_p
from ..tracer.dispatch import bind
from ..tracer.errors import ConcretizationError
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from . import reductions
from ._promote import as_tensor, normalize_axis
from .complex_numbers import imag, real
from .shape import getitem, moveaxis, ravel, reshape

__all__ = ["sort", "sort_complex", "argsort", "partition", "argpartition", "take_along_axis", "searchsorted", "nonzero"]


def _no_order(name, order):
    if order is not None:
        raise NotImplementedError(f"{name}: order= (structured arrays) is not supported")


def _sorts_before(b, a):
    """b sorts strictly before a: b < a, with NaN after every number."""
    return ew.logical_or(ew.less(b, a), ew.logical_and(ew.not_equal(a, a), ew.equal(b, b)))


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """The indices that sort a along `axis` (stable: equal elements keep their order).

    Args:
      a: a Tensor or array-like.
      axis: the axis to sort along, or None for the flattened a.
      kind, stable: accepted; the sort is always stable.

    Returns:
      An int64 Tensor of a's shape (no gradient).

    Example::

        >>> gradtape.argsort(gradtape.constant([3.0, 1.0, 2.0])).numpy()
        array([1, 2, 0])
    """
    _no_order("argsort", order)
    a = as_tensor(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis("argsort", axis, a.ndim)[0]
    if not a.is_abstract:
        return Tensor(np.argsort(a.numpy(), axis=axis, kind="stable").astype(np.int64))
    if a.shape[axis] == 0:
        return Tensor(np.zeros(a.shape, np.int64))
    if a.dtype.kind not in "biuf":
        raise TypeError(f"argsort: cannot sort a tensor of dtype {a.dtype} (shape {a.shape}); "
                        "gradtape sorts bool, integer and real floating-point tensors")
    return bind(argsort_p, a, axis=axis)


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """a sorted along `axis` (NaN last), differentiable: each sorted element's gradient
    goes to the element it came from.

    Args:
      a: a Tensor or array-like.
      axis: the axis to sort along, or None for the flattened a.
      kind, stable: accepted; the sort is always stable.

    Returns:
      A Tensor of a's shape (flattened if axis is None).

    Example::

        >>> gradtape.sort(gradtape.constant([3.0, 1.0, 2.0])).numpy()
        array([1., 2., 3.])
    """
    _no_order("sort", order)
    a = as_tensor(a)
    if axis is None:
        a, axis = ravel(a), 0
    if a.ndim == 0:
        raise np.exceptions.AxisError(f"sort: axis {axis} is out of bounds for a 0-d tensor")
    return take_along_axis(a, argsort(a, axis), axis)


def _check_kth(name, a, kth, axis):
    a = as_tensor(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(name, axis, a.ndim)[0]
    d = a.shape[axis]
    for k in np.atleast_1d(np.asarray(kth)).ravel():
        if not -d <= int(k) < d:
            raise ValueError(f"{name}: kth(={int(k)}) out of bounds ({d}) for axis {axis} of shape {a.shape}")
    return a, axis


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """a rearranged so that the element at each `kth` position is the one a sorted a has
    there, smaller ones before it and larger ones after it; differentiable like sort.

    gradtape returns the fully sorted a, which is such a rearrangement: the
    values at `kth`, and the sets of values on either side, are NumPy's (their
    order within each side may differ from numpy.partition's, which NumPy
    leaves unspecified).

    Args:
      a: a Tensor or array-like.
      kth: an int or a sequence of ints (positions along `axis`).
      axis: the axis, or None for the flattened a.

    Returns:
      A Tensor of a's shape (flattened if axis is None).

    Raises:
      ValueError: for a kth outside the axis.

    Example::

        >>> float(gradtape.partition(gradtape.constant([3.0, 1.0, 2.0]), 1).numpy()[1])
        2.0
    """
    _no_order("partition", order)
    a, axis = _check_kth("partition", a, kth, axis)
    return sort(a, axis)


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """Indices that partition a (see partition): gradtape's are those that sort it.

    Args:
      a: a Tensor or array-like.
      kth: an int or a sequence of ints.
      axis: the axis, or None for the flattened a.

    Returns:
      An int64 Tensor (no gradient).

    Raises:
      ValueError: for a kth outside the axis.

    Example::

        >>> int(gradtape.argpartition(gradtape.constant([3.0, 1.0, 2.0]), 0).numpy()[0])
        1
    """
    _no_order("argpartition", order)
    a, axis = _check_kth("argpartition", a, kth, axis)
    return argsort(a, axis)


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    """arr's elements at `indices` along `axis`, the other axes matched up (as with argsort's output).

    Args:
      arr: a Tensor or array-like.
      indices: integers of arr's number of dimensions (broadcast against arr
        outside `axis`), or a 1-d array if axis is None.
      axis: the axis to take along, or None for the flattened arr.

    Returns:
      The gathered Tensor; gradients of repeated indices add up.

    Raises:
      ValueError: if indices and arr differ in their number of dimensions.
      IndexError: for non-integer or out-of-range indices.

    Example::

        >>> x = gradtape.constant([[3.0, 1.0], [0.0, 2.0]])
        >>> gradtape.take_along_axis(x, np.array([[1], [0]]), axis=1).numpy()
        array([[1.],
               [0.]])
    """
    arr = as_tensor(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
    if indices.ndim != arr.ndim:
        raise ValueError(
            f"take_along_axis: `indices` and `arr` must have the same number of dimensions, "
            f"got indices of shape {indices.shape} and arr of shape {arr.shape}"
        )
    axis = normalize_axis("take_along_axis", axis, arr.ndim)[0]
    index = []
    for i, d in enumerate(arr.shape):
        if i == axis:
            index.append(indices)
        else:  # the position along axis i itself, broadcast against the others
            index.append(np.arange(d).reshape((d,) + (1,) * (arr.ndim - 1 - i)))
    return getitem(arr, tuple(index))


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    """Where each v would go in the sorted 1-d a to keep it sorted (integer, no gradient).

    Args:
      a: a sorted 1-d Tensor or array-like (or sorted by `sorter`).
      v: values to place, any shape.
      side: "left" (the first such place) or "right" (the last).
      sorter: optional indices that sort a.

    Returns:
      An int64 Tensor of v's shape.

    Raises:
      ValueError: if a is not 1-d or `side` is neither "left" nor "right".

    Example::

        >>> gradtape.searchsorted(gradtape.constant([1.0, 2.0, 3.0]), 2.5).numpy()
        array(2)
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a, v = as_tensor(a), as_tensor(v)
    if a.ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-d, got shape {a.shape}")
    if sorter is not None:
        a = take_along_axis(a, sorter if isinstance(sorter, Tensor) else np.asarray(sorter), 0)
    if not (a.is_abstract or v.is_abstract):
        return Tensor(np.asarray(np.searchsorted(a.numpy(), v.numpy(), side)).astype(np.int64))
    placed = reshape(v, v.shape + (1,))
    left = _sorts_before(a, placed) if side == "left" else ew.logical_not(_sorts_before(placed, a))
    return reductions.sum(left, axis=-1)


@implements(np.nonzero)
def nonzero(a):
    """The indices of a's non-zero elements, one int64 Tensor per axis (no gradient).

    Args:
      a: a Tensor or array-like with a concrete value.

    Returns:
      A tuple of a.ndim 1-d int64 Tensors.

    Raises:
      ConcretizationError: for an abstract (traced) a: the result's length depends on its values.

    Example::

        >>> gradtape.nonzero(gradtape.constant([0.0, 2.0, 3.0]))
        (Tensor([1, 2], dtype=int64),)
    """
    a = as_tensor(a)
    if a.is_abstract:
        raise ConcretizationError(
            f"nonzero: the number of non-zero elements of an abstract tensor {a.dtype}"
            f"{list(a.shape)} is not known while tracing, and the result's shape depends on it; "
            "use gradtape.where(a != 0, x, 0.0) to select values instead"
        )
    return tuple(Tensor(i.astype(np.int64)) for i in np.nonzero(a.numpy()))


@implements(np.sort_complex)
def sort_complex(a):
    """a sorted along its last axis, real part first and imaginary part second (numpy.sort_complex).

    Differentiable as sort is (a permutation): the permutation sorts by the
    imaginary parts and then, stably, by the real parts, so it is NumPy's
    lexicographic order, NaN last. The result is complex: real input becomes
    complex128 (complex64 for 8- and 16-bit integers), as in NumPy.

    Example::

        >>> gradtape.sort_complex(gradtape.constant([1 + 2j, 1 - 1j, 0 + 5j])).numpy()
        array([0.+5.j, 1.-1.j, 1.+2.j])
    """
    a = as_tensor(a)
    if a.dtype.kind != "c":
        return ew.cast(sort(a, axis=-1), np.complex64 if a.dtype.char in "bhBH" else np.complex128)
    by_imag = argsort(imag(a), -1)
    by_real = argsort(take_along_axis(real(a), by_imag, -1), -1)
    return take_along_axis(a, take_along_axis(by_imag, by_real, -1), -1)
