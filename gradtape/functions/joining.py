"""The stack and split families, as in NumPy: vstack, hstack, dstack, column_stack,
and split, array_split, hsplit, vsplit, dsplit.

Stacking is atleast_nd + concatenate; splitting is one slice per piece
(whose VJP places each piece's cotangent back), so neither needs an op of
its own. Split points must be concrete integers.
"""
from __future__ import annotations

import numpy as np

from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from ._promote import as_tensor, normalize_axis
from .rearrange import _count, atleast_1d, atleast_2d, atleast_3d
from .shape import _slice, concatenate, reshape

__all__ = [
    "vstack", "hstack", "dstack", "column_stack",
    "split", "array_split", "hsplit", "vsplit", "dsplit",
]


def _items(name, tup) -> list:
    if isinstance(tup, Tensor):
        return list(tup)  # like NumPy: the rows of the first axis
    items = list(tup)
    if not items:
        raise ValueError(f"{name}: need at least one array to concatenate")
    return items


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@implements(np.vstack)
def vstack(tup, *, dtype=None, casting="same_kind"):
    """Tensors joined along the first axis, 1-d ones first made rows (1, n).

    Args:
      tup: a sequence of Tensors or array-likes.
      dtype: optional result dtype.

    Returns:
      The joined Tensor (at least 2-d).

    Raises:
      ValueError: if the shapes do not match after the first axis.

    Example::

        >>> gradtape.vstack([gradtape.constant([1.0, 2.0]), [3.0, 4.0]]).shape
        (2, 2)
    """
    return concatenate(_as_tuple(atleast_2d(*_items("vstack", tup))), axis=0, dtype=dtype)



@implements(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    """Tensors joined along the second axis (the first, for 1-d ones).

    Args:
      tup: a sequence of Tensors or array-likes.
      dtype: optional result dtype.

    Returns:
      The joined Tensor.

    Raises:
      ValueError: if the shapes do not match outside the joined axis.

    Example::

        >>> gradtape.hstack([gradtape.constant([1.0]), [2.0, 3.0]]).shape
        (3,)
    """
    arrays = _as_tuple(atleast_1d(*_items("hstack", tup)))
    return concatenate(arrays, axis=0 if arrays[0].ndim == 1 else 1, dtype=dtype)


@implements(np.dstack)
def dstack(tup):
    """Tensors joined along the third axis, after atleast_3d ((n,) -> (1, n, 1), (m, n) -> (m, n, 1)).

    Args:
      tup: a sequence of Tensors or array-likes.

    Returns:
      The joined Tensor (at least 3-d).

    Example::

        >>> gradtape.dstack([gradtape.constant([1.0, 2.0]), [3.0, 4.0]]).shape
        (1, 2, 2)
    """
    return concatenate(_as_tuple(atleast_3d(*_items("dstack", tup))), axis=2)


@implements(np.column_stack)
def column_stack(tup):
    """1-d Tensors as the columns of a 2-d Tensor; 2-d ones joined along axis 1.

    Args:
      tup: a sequence of Tensors or array-likes.

    Returns:
      The joined 2-d (or higher) Tensor.

    Example::

        >>> gradtape.column_stack([gradtape.constant([1.0, 2.0]), [3.0, 4.0]]).shape
        (2, 2)
    """
    columns = []
    for x in _items("column_stack", tup):
        x = as_tensor(x)
        columns.append(reshape(x, (x.size, 1)) if x.ndim < 2 else x)
    return concatenate(columns, axis=1)


# --- splitting ---------------------------------------------------------------------------------

def _pieces(ary, bounds, axis) -> list:
    """ary[start:stop] along `axis` for each (start, stop), with Python slice semantics."""
    out = []
    d = ary.shape[axis]
    for start, stop in bounds:
        r = range(*slice(start, stop).indices(d))
        starts = [r.start if i == axis else 0 for i in range(ary.ndim)]
        stops = [r.stop if i == axis else n for i, n in enumerate(ary.shape)]
        out.append(_slice(ary, starts, stops, [1] * ary.ndim))
    return out


def _split(name, ary, indices_or_sections, axis, equal) -> list:
    ary = as_tensor(ary)
    if ary.ndim == 0:
        raise ValueError(f"{name}: cannot split a 0-d tensor")
    axis = normalize_axis(name, axis, ary.ndim)[0]
    d = ary.shape[axis]
    points = _count(name, "indices_or_sections", indices_or_sections)
    if points.ndim == 0:
        sections = int(points)
        if sections <= 0:
            raise ValueError(f"{name}: number of sections must be larger than 0, got {sections}")
        if equal and d % sections:
            raise ValueError(
                f"{name}: array split does not result in an equal division: axis {axis} of "
                f"shape {ary.shape} has length {d}, which {sections} sections do not divide; "
                "use array_split for unequal sections"
            )
        each, extra = divmod(d, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        edges = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        edges = [0] + [int(p) for p in points.ravel()] + [d]
    return _pieces(ary, zip(edges[:-1], edges[1:]), axis)


@implements(np.split)
def split(ary, indices_or_sections, axis=0):
    """ary cut along `axis` into equal sections, or at the given indices.

    Args:
      ary: a Tensor or array-like.
      indices_or_sections: a number of equal sections, or a sorted sequence of
        split points (slices between them, with Python's clipping).
      axis: the axis to split.

    Returns:
      A list of Tensors.

    Raises:
      ValueError: if a number of sections does not divide the axis length.

    Example::

        >>> [t.shape for t in gradtape.split(gradtape.constant(np.ones((4, 2))), 2)]
        [(2, 2), (2, 2)]
    """
    return _split("split", ary, indices_or_sections, axis, equal=True)


@implements(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    """Like split, but n sections of an axis of length l need not be equal:
    the first l % n have one element more.

    Args:
      ary: a Tensor or array-like.
      indices_or_sections: a number of sections, or a sequence of split points.
      axis: the axis to split.

    Returns:
      A list of Tensors.

    Raises:
      ValueError: for a number of sections below 1.

    Example::

        >>> [t.shape for t in gradtape.array_split(gradtape.constant(np.ones(5)), 2)]
        [(3,), (2,)]
    """
    return _split("array_split", ary, indices_or_sections, axis, equal=False)


def _split_min_dims(name, ary, ndim, axis, indices_or_sections):
    ary = as_tensor(ary)
    if ary.ndim < ndim:
        raise ValueError(
            f"{name} only works on arrays of {ndim} or more dimensions, got shape {ary.shape}"
        )
    return _split(name, ary, indices_or_sections, axis, equal=True)


@implements(np.hsplit)
def hsplit(ary, indices_or_sections):
    """split along axis 1 (axis 0 for a 1-d ary).

    Args:
      ary: a Tensor or array-like with at least 1 dimension.
      indices_or_sections: as in split.

    Returns:
      A list of Tensors.

    Raises:
      ValueError: for a 0-d ary or sections that do not divide the axis.

    Example::

        >>> len(gradtape.hsplit(gradtape.constant(np.ones((2, 4))), 2))
        2
    """
    ary = as_tensor(ary)
    return _split_min_dims("hsplit", ary, 1, 1 if ary.ndim > 1 else 0, indices_or_sections)


@implements(np.vsplit)
def vsplit(ary, indices_or_sections):
    """split along axis 0 of an at least 2-d ary.

    Args:
      ary: a Tensor or array-like with at least 2 dimensions.
      indices_or_sections: as in split.

    Returns:
      A list of Tensors.

    Raises:
      ValueError: for fewer than 2 dimensions or sections that do not divide the axis.

    Example::

        >>> len(gradtape.vsplit(gradtape.constant(np.ones((4, 2))), [1]))
        2
    """
    return _split_min_dims("vsplit", ary, 2, 0, indices_or_sections)


@implements(np.dsplit)
def dsplit(ary, indices_or_sections):
    """split along axis 2 of an at least 3-d ary.

    Args:
      ary: a Tensor or array-like with at least 3 dimensions.
      indices_or_sections: as in split.

    Returns:
      A list of Tensors.

    Raises:
      ValueError: for fewer than 3 dimensions or sections that do not divide the axis.

    Example::

        >>> len(gradtape.dsplit(gradtape.constant(np.ones((1, 1, 4))), 4))
        4
    """
    return _split_min_dims("dsplit", ary, 3, 2, indices_or_sections)
