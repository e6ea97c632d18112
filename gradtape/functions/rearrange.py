"""Functions that rearrange or replicate elements, as in NumPy: flip, roll, rot90,
tril/triu, diagonal, repeat, tile, kron, atleast_1d/2d/3d.

Each is a composition of the layout and gather ops (slices with negative
steps, concatenate, broadcast_to + reshape, gather, where), so it
differentiates, batches and compiles like them: no op of its own. Sizes
and counts (shifts, repeats, reps) must be concrete Python or NumPy
integers, as in NumPy; only the array operands are differentiable.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..ir.ops.indexing import gather_p
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from ._promote import as_tensor, normalize_axis, promote
from .shape import _permute, _slice, broadcast_to, concatenate, ravel, reshape

__all__ = [
    "flip", "fliplr", "flipud", "roll", "rot90", "tril", "triu", "diagonal",
    "repeat", "tile", "kron", "atleast_1d", "atleast_2d", "atleast_3d",
]


def _count(name, what, value) -> int:
    """A concrete integer argument (a shift, a repeat count), else TypeError naming it."""
    if isinstance(value, Tensor):
        if value.is_abstract:
            raise TypeError(
                f"{name}: `{what}` must be a concrete integer, got an abstract tensor; pass it "
                "as a Python int (a staged function's static argument)"
            )
        value = value.numpy()
    value = np.asarray(value)
    if value.size == 0:
        value = value.astype(np.int64)  # [] has no integer dtype of its own
    if value.dtype.kind not in "iub":
        raise TypeError(f"{name}: `{what}` must be integers, got {value!r}")
    return value.astype(np.int64)


# --- flips and rotations ----------------------------------------------------------------

def _reversed(x, axes):
    starts = [x.shape[a] - 1 if a in axes else 0 for a in range(x.ndim)]
    stops = [-1 if a in axes else d for a, d in enumerate(x.shape)]
    steps = [-1 if a in axes else 1 for a in range(x.ndim)]
    return _slice(x, starts, stops, steps)


@implements(np.flip)
def flip(m, axis=None):
    """m with the order of its elements reversed along `axis` (every axis if None).

    Args:
      m: a Tensor or array-like.
      axis: None, an int or a tuple of ints (negatives allowed).

    Returns:
      A Tensor of m's shape.

    Raises:
      AxisError: for an axis out of range.

    Example::

        >>> gradtape.flip(gradtape.constant([1.0, 2.0, 3.0])).numpy()
        array([3., 2., 1.])
    """
    m = as_tensor(m)
    return _reversed(m, normalize_axis("flip", axis, m.ndim))


@implements(np.fliplr)
def fliplr(m):
    """m reversed along axis 1 (left/right), numpy.fliplr.

    Args:
      m: a Tensor or array-like with at least 2 dimensions.

    Returns:
      A Tensor of m's shape.

    Raises:
      ValueError: if m has fewer than 2 dimensions.

    Example::

        >>> gradtape.fliplr(gradtape.constant([[1.0, 2.0]])).numpy()
        array([[2., 1.]])
    """
    m = as_tensor(m)
    if m.ndim < 2:
        raise ValueError(f"fliplr: input must be >= 2-d, got shape {m.shape}")
    return _reversed(m, (1,))


@implements(np.flipud)
def flipud(m):
    """m reversed along axis 0 (up/down), numpy.flipud.

    Args:
      m: a Tensor or array-like with at least 1 dimension.

    Returns:
      A Tensor of m's shape.

    Raises:
      ValueError: if m is 0-d.

    Example::

        >>> gradtape.flipud(gradtape.constant([1.0, 2.0])).numpy()
        array([2., 1.])
    """
    m = as_tensor(m)
    if m.ndim < 1:
        raise ValueError(f"flipud: input must be >= 1-d, got shape {m.shape}")
    return _reversed(m, (0,))


@implements(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    """m rotated by 90 degrees k times, from the first towards the second of `axes`.

    Args:
      m: a Tensor or array-like with at least 2 dimensions.
      k: the number of quarter turns (any integer; negative turns the other way).
      axes: the two axes of the plane of rotation.

    Returns:
      The rotated Tensor (the two axes' lengths swap for odd k).

    Raises:
      ValueError: if `axes` are not two different axes of m.

    Example::

        >>> gradtape.rot90(gradtape.constant([[1.0, 2.0], [3.0, 4.0]])).numpy()
        array([[2., 4.],
               [1., 3.]])
    """
    m = as_tensor(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got axes={axes}")
    if m.ndim < 2:
        raise ValueError(f"rot90: input must be >= 2-d, got shape {m.shape}")
    a, b = (normalize_axis("rot90", int(ax), m.ndim)[0] for ax in axes)
    if a == b:
        raise ValueError(f"rot90: axes must be different, got axes={axes} for shape {m.shape}")
    k = int(_count("rot90", "k", k)) % 4
    if k == 0:
        return m
    if k == 2:
        return _reversed(m, (a, b))
    perm = list(range(m.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    if k == 1:
        return _permute(_reversed(m, (b,)), perm)
    return _reversed(_permute(m, perm), (b,))


# --- roll ----------------------------------------------------------------------------------

@implements(np.roll)
def roll(a, shift, axis=None):
    """a with its elements shifted cyclically by `shift` along `axis` (of the flattened a if None).

    Args:
      a: a Tensor or array-like.
      shift: an int or a tuple of ints (one per axis in `axis`, or broadcast).
      axis: None, an int or a tuple of ints; a repeated axis adds its shifts.

    Returns:
      A Tensor of a's shape.

    Raises:
      ValueError: if `shift` and `axis` do not broadcast together.

    Example::

        >>> gradtape.roll(gradtape.constant([1.0, 2.0, 3.0]), 1).numpy()
        array([3., 1., 2.])
    """
    a = as_tensor(a)
    shifts = _count("roll", "shift", shift)
    if axis is None:
        return reshape(roll(ravel(a), shifts, 0), a.shape)
    axes = np.asarray(axis)
    try:
        shifts, axes = np.broadcast_arrays(shifts, axes)
    except ValueError:
        raise ValueError(
            f"roll: 'shift' {shift!r} and 'axis' {axis!r} should be scalars or 1-d sequences "
            "of the same length"
        ) from None
    total = {}
    for s, ax in zip(shifts.ravel(), axes.ravel()):
        ax = normalize_axis("roll", int(ax), a.ndim)[0]
        total[ax] = total.get(ax, 0) + int(s)
    for ax, s in total.items():
        d = a.shape[ax]
        s = s % d if d else 0
        if s:
            a = concatenate([_part(a, ax, d - s, d), _part(a, ax, 0, d - s)], axis=ax)
    return a


def _part(x, axis, start, stop):
    starts = [start if i == axis else 0 for i in range(x.ndim)]
    stops = [stop if i == axis else d for i, d in enumerate(x.shape)]
    return _slice(x, starts, stops, [1] * x.ndim)


# --- triangles and diagonals ---------------------------------------------------------------

def _triangle(name, m, k, lower):
    m = as_tensor(m)
    if m.ndim < 1:
        raise ValueError(f"{name}: input must be >= 1-d, got shape {m.shape}")
    rows, cols = m.shape[-2:] if m.ndim >= 2 else (m.shape[-1], m.shape[-1])
    k = int(_count(name, "k", k))
    mask = np.tri(rows, cols, k if lower else k - 1, dtype=bool)
    # where (not a multiplication by the mask): inf or NaN outside the triangle become 0.
    return ew.where(mask if lower else ~mask, m, np.zeros((), m.dtype))


@implements(np.tril)
def tril(m, k=0):
    """The lower triangle of m's last two axes: elements above the k-th diagonal set to 0.

    Args:
      m: a Tensor or array-like; a 1-d m is broadcast to a square matrix, as in NumPy.
      k: the diagonal above which to zero (positive: above the main one).

    Returns:
      A Tensor of m's shape (n x n for a 1-d m of length n).

    Example::

        >>> gradtape.tril(gradtape.constant(np.ones((2, 2)))).numpy()
        array([[1., 0.],
               [1., 1.]])
    """
    return _triangle("tril", m, k, lower=True)


@implements(np.triu)
def triu(m, k=0):
    """The upper triangle of m's last two axes: elements below the k-th diagonal set to 0.

    Args:
      m: a Tensor or array-like; a 1-d m is broadcast to a square matrix, as in NumPy.
      k: the diagonal below which to zero (positive: above the main one).

    Returns:
      A Tensor of m's shape (n x n for a 1-d m of length n).

    Example::

        >>> gradtape.triu(gradtape.constant(np.ones((2, 2)))).numpy()
        array([[1., 1.],
               [0., 1.]])
    """
    return _triangle("triu", m, k, lower=False)


@implements(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    """The `offset`-th diagonal of axes `axis1` and `axis2` of a, as the result's last axis.

    A gather of the diagonal's elements (never a product with an identity
    matrix, which would turn an inf off the diagonal into NaN).

    Args:
      a: a Tensor or array-like with at least 2 dimensions.
      offset: which diagonal (positive: above the main one).
      axis1, axis2: the two axes (different).

    Returns:
      A Tensor of a's other axes followed by the diagonal's length.

    Raises:
      ValueError: if a has fewer than 2 dimensions or the axes are the same.

    Example::

        >>> gradtape.diagonal(gradtape.constant([[1.0, 2.0], [3.0, 4.0]])).numpy()
        array([1., 4.])
    """
    a = as_tensor(a)
    if a.ndim < 2:
        raise ValueError(f"diagonal: array must be at least 2-d, got shape {a.shape}")
    p, q = (normalize_axis("diagonal", int(ax), a.ndim)[0] for ax in (axis1, axis2))
    if p == q:
        raise ValueError(f"diagonal: axis1 and axis2 cannot be the same, got {axis1} and {axis2}")
    k = int(_count("diagonal", "offset", offset))
    rest = [i for i in range(a.ndim) if i not in (p, q)]
    n, m = a.shape[p], a.shape[q]
    x = reshape(_permute(a, rest + [p, q]), tuple(a.shape[i] for i in rest) + (n * m,))
    first = builtins.max(0, -k)
    length = builtins.max(0, builtins.min(n - first, m - (first + k)))
    rows = np.arange(first, first + length, dtype=np.int64)
    return bind(gather_p, x, rows * m + rows + k, axis=x.ndim - 1)


# --- replication -----------------------------------------------------------------------------

@implements(np.repeat)
def repeat(a, repeats, axis=None):
    """Each element of a repeated `repeats` times along `axis` (of the flattened a if None).

    Args:
      a: a Tensor or array-like.
      repeats: a non-negative int, or one per element along the axis.
      axis: the axis to repeat along, or None.

    Returns:
      A Tensor whose `axis` has sum(repeats) elements. Gradients of the
      copies add up.

    Raises:
      ValueError: for negative repeats or a `repeats` of the wrong length.

    Example::

        >>> gradtape.repeat(gradtape.constant([1.0, 2.0]), 2).numpy()
        array([1., 1., 2., 2.])
    """
    a = as_tensor(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis("repeat", axis, a.ndim)[0]
    counts = _count("repeat", "repeats", repeats)
    if np.any(counts < 0):
        raise ValueError(f"repeat: repeats may not contain negative values, got {repeats!r}")
    d = a.shape[axis]
    if counts.ndim == 0 or counts.size == 1:  # one count: broadcast a new axis, then merge it
        r = int(counts.reshape(()))
        lifted = reshape(a, a.shape[:axis + 1] + (1,) + a.shape[axis + 1:])
        wide = broadcast_to(lifted, a.shape[:axis + 1] + (r,) + a.shape[axis + 1:])
        return reshape(wide, a.shape[:axis] + (d * r,) + a.shape[axis + 1:])
    if counts.shape != (d,):
        raise ValueError(
            f"repeat: repeats of shape {counts.shape} do not match axis {axis} of length {d} "
            f"(tensor of shape {a.shape}); give one count or {d}"
        )
    return bind(gather_p, a, np.repeat(np.arange(d, dtype=np.int64), counts), axis=axis)


@implements(np.tile)
def tile(A, reps):
    """A repeated `reps[i]` times along each axis i (numpy.tile).

    Args:
      A: a Tensor or array-like.
      reps: an int or a tuple of non-negative ints. If it is longer than
        A.ndim, A gets leading length-1 axes; if shorter, reps gets leading 1s.

    Returns:
      The tiled Tensor, with max(A.ndim, len(reps)) dimensions.

    Raises:
      ValueError: for a negative count.

    Example::

        >>> gradtape.tile(gradtape.constant([1.0, 2.0]), 2).numpy()
        array([1., 2., 1., 2.])
    """
    A = as_tensor(A)
    reps = tuple(int(r) for r in np.atleast_1d(_count("tile", "reps", reps)))
    if builtins.any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}")
    nd = builtins.max(A.ndim, len(reps))
    shape = (1,) * (nd - A.ndim) + A.shape
    reps = (1,) * (nd - len(reps)) + reps
    # (r0, d0, r1, d1, ...) by broadcasting (1, d0, 1, d1, ...), then merged pairwise.
    lifted = reshape(A, tuple(v for d in shape for v in (1, d)))
    wide = broadcast_to(lifted, tuple(v for r, d in zip(reps, shape) for v in (r, d)))
    return reshape(wide, tuple(r * d for r, d in zip(reps, shape)))


@implements(np.kron)
def kron(a, b):
    """The Kronecker product: blocks of b scaled by each element of a (numpy.kron).

    Args:
      a, b: Tensors or array-likes; the one with fewer dimensions gets leading length-1 axes.

    Returns:
      A Tensor of shape (a.shape[i] * b.shape[i] for each axis).

    Example::

        >>> gradtape.kron(gradtape.constant([1.0, 2.0]), np.array([1.0, 10.0])).numpy()
        array([ 1., 10.,  2., 20.])
    """
    a, b = (as_tensor(t) for t in promote(a, b))
    nd = builtins.max(a.ndim, b.ndim)
    sa, sb = (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - b.ndim) + b.shape
    blocks = ew.multiply(
        reshape(a, tuple(v for d in sa for v in (d, 1))),
        reshape(b, tuple(v for d in sb for v in (1, d))),
    )
    return reshape(blocks, tuple(p * q for p, q in zip(sa, sb)))


# --- atleast_nd --------------------------------------------------------------------------------

def _atleast(arys, shape_of_small):
    out = []
    for x in arys:
        x = as_tensor(x)
        out.append(reshape(x, shape_of_small(x.shape)))
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.atleast_1d)
def atleast_1d(*arys):
    """Each argument as a Tensor with at least 1 dimension (a scalar becomes shape (1,)).

    Args:
      *arys: Tensors or array-likes.

    Returns:
      One Tensor for one argument, else a tuple of them.

    Example::

        >>> gradtape.atleast_1d(gradtape.constant(1.0)).shape
        (1,)
    """
    return _atleast(arys, lambda s: s if len(s) >= 1 else (1,))


@implements(np.atleast_2d)
def atleast_2d(*arys):
    """Each argument with at least 2 dimensions: (n,) becomes (1, n), a scalar (1, 1).

    Args:
      *arys: Tensors or array-likes.

    Returns:
      One Tensor for one argument, else a tuple of them.

    Example::

        >>> gradtape.atleast_2d(gradtape.constant([1.0, 2.0])).shape
        (1, 2)
    """
    return _atleast(arys, lambda s: s if len(s) >= 2 else (1,) * (2 - len(s)) + s)


@implements(np.atleast_3d)
def atleast_3d(*arys):
    """Each argument with at least 3 dimensions: (n,) becomes (1, n, 1), (m, n) (m, n, 1).

    Args:
      *arys: Tensors or array-likes.

    Returns:
      One Tensor for one argument, else a tuple of them.

    Example::

        >>> gradtape.atleast_3d(gradtape.constant([1.0, 2.0])).shape
        (1, 2, 1)
    """
    def three(s):
        return {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s), s)

    return _atleast(arys, three)
