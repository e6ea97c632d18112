"""Layout and indexing functions: reshape, transpose, concatenate, pad, take,
... and `Tensor.__getitem__`, as in NumPy.

Each normalizes its arguments (negative axes, -1 in shapes, Python slices)
into the normalized params of one IR op (gradtape/ir/ops/layout.py and
indexing.py) and binds it. Indexing lowers to `slice` (ints and slices),
`reshape` (dropping int axes, inserting None axes) and `gather` (integer
arrays); index arrays never get gradients.
"""
from __future__ import annotations

import builtins
import itertools
import math

import numpy as np

from ..ir.ops.indexing import (
    concatenate_p,
    gather_p,
    normalize_slice_params,
    pad_p,
    pad_value,
    slice_p,
)
from ..ir.ops.layout import broadcast_to_p, reshape_p, transpose_p
from ..tracer.dispatch import bind
from ..tracer.basic_index import EXACT_TENSORS, abstract_getitem, basic_binds
from ..tracer.basic_index import getitem as basic_getitem
from ..tracer.basic_index import tensor_getitem
from ..tracer.errors import ConcretizationError
from ..tracer.numpy_dispatch import fast_path, implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from ._promote import as_tensor, convert, normalize_axis, promote
from .fresh import returning_new_objects

__all__ = [
    "reshape", "transpose", "expand_dims", "squeeze", "broadcast_to", "concatenate",
    "stack", "pad", "take", "ravel", "flatten", "moveaxis", "swapaxes",
]


_SEQUENCES = (list, tuple)  # what the joining fast paths take as their list of tensors


def _axis(name, axis, ndim) -> int:
    return normalize_axis(name, int(axis), ndim)[0]


def _axes_in_order(name, axes, ndim) -> tuple:
    """Axes normalized but kept in the given order (for permutations)."""
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    out = tuple(_axis(name, a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {axes}")
    return out


def _shape_arg(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


# --- reshape and friends ---------------------------------------------------------------

@implements(np.reshape)
def reshape(x, shape=None, order="C", *, newshape=None, copy=None):
    """x with a new shape holding the same elements in C order; one dimension may be -1.

    Args:
      x: a Tensor or array-like.
      shape: an int or tuple of ints; a single -1 is inferred from the size.

    Returns:
      A Tensor of that shape.

    Raises:
      ValueError: if the sizes do not match (or more than one -1 is given).

    Example::

        >>> gradtape.reshape(gradtape.constant(np.arange(6.0)), (2, -1)).shape
        (2, 3)
    """
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("reshape: missing the new shape")
    if order != "C":
        raise NotImplementedError(f"reshape: only order='C' is supported, got order={order!r}")
    x = as_tensor(x)
    want = _shape_arg(shape)
    shape = want
    unknown = [i for i, d in enumerate(shape) if d == -1]
    # math.prod: exact ints, where np.prod's dispatch cost more than the rest of an eager reshape
    known = math.prod(d for d in shape if d != -1)
    bad = len(unknown) > 1 or any(d < -1 for d in shape)
    if not bad and unknown:
        bad = known == 0 or x.size % known != 0
        if not bad:
            shape = tuple(x.size // known if d == -1 else d for d in shape)
    if bad or math.prod(shape) != x.size:
        raise ValueError(
            f"reshape: cannot reshape a tensor of shape {x.shape} (size {x.size}) into "
            f"shape {want}"
            + ("; at most one dimension can be -1" if len(unknown) > 1 else "")
        )
    if shape == x.shape:
        return x
    return bind(reshape_p, x, shape=shape)


@implements(np.ravel)
def ravel(x, order="C"):
    """x as a 1-d Tensor (C order).

    Args:
      x: a Tensor or array-like.
      order: only "C" is supported.

    Returns:
      A Tensor of shape (x.size,).

    Example::

        >>> gradtape.ravel(gradtape.constant([[1.0, 2.0], [3.0, 4.0]])).shape
        (4,)
    """
    if order != "C":
        raise NotImplementedError(f"ravel: only order='C' is supported, got order={order!r}")
    x = as_tensor(x)
    return reshape(x, (x.size,))


def flatten(x):
    """x as a 1-d Tensor (C order), like ndarray.flatten (tensors are immutable: no copy).

    Args:
      x: a Tensor or array-like.

    Returns:
      A Tensor of shape (x.size,).

    Example::

        >>> gradtape.flatten(gradtape.constant(np.ones((2, 3)))).shape
        (6,)
    """
    return ravel(x)


@implements(np.expand_dims)
def expand_dims(x, axis):
    """x with length-1 axes inserted so that they sit at positions `axis` of the result.

    Args:
      x: a Tensor or array-like.
      axis: an int or tuple of ints, positions in the result (negatives allowed).

    Returns:
      A Tensor with x.ndim + len(axis) dimensions.

    Example::

        >>> gradtape.expand_dims(gradtape.constant([1.0, 2.0]), (0, -1)).shape
        (1, 2, 1)
    """
    x = as_tensor(x)
    n = 1 if isinstance(axis, (int, np.integer)) else len(tuple(axis))
    axes = normalize_axis("expand_dims", axis, x.ndim + n)
    dims = iter(x.shape)
    return reshape(x, tuple(1 if i in axes else next(dims) for i in range(x.ndim + n)))


@implements(np.squeeze)
def squeeze(x, axis=None):
    """x without length-1 axes (all of them, or those in `axis`).

    Args:
      x: a Tensor or array-like.
      axis: None (every length-1 axis), an int or a tuple of ints.

    Returns:
      A Tensor with those axes removed.

    Raises:
      ValueError: if an axis in `axis` does not have length 1.

    Example::

        >>> gradtape.squeeze(gradtape.constant(np.ones((1, 3, 1))), axis=0).shape
        (3, 1)
    """
    x = as_tensor(x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = normalize_axis("squeeze", axis, x.ndim)
        for a in axes:
            if x.shape[a] != 1:
                raise ValueError(
                    f"squeeze: cannot select an axis to squeeze out which has size not equal "
                    f"to one: axis {a} of shape {x.shape} has size {x.shape[a]}"
                )
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


@implements(np.broadcast_to)
def broadcast_to(x, shape, subok=False):
    """x broadcast (replicated, NumPy's rules) to `shape`.

    Args:
      x: a Tensor or array-like.
      shape: an int or tuple of ints. Gradients are summed back over the
        broadcast axes.

    Returns:
      A Tensor of shape `shape`.

    Raises:
      ValueError: if x's shape does not broadcast to `shape`.

    Example::

        >>> gradtape.broadcast_to(gradtape.constant([1.0, 2.0]), (3, 2)).shape
        (3, 2)
    """
    x = as_tensor(x)
    shape = _shape_arg(shape)
    ok = len(shape) >= x.ndim and builtins.all(d >= 0 for d in shape) and builtins.all(
        d == s or d == 1 for d, s in zip(x.shape[::-1], shape[::-1])
    )
    if not ok:
        raise ValueError(f"broadcast_to: cannot broadcast a tensor of shape {x.shape} to shape {shape}")
    if shape == x.shape:
        return x
    return bind(broadcast_to_p, x, shape=shape)


# --- permutations ---------------------------------------------------------------------------

@implements(np.transpose)
def transpose(x, axes=None):
    """x with its axes permuted: result axis i is x's axis `axes[i]` (reversed if None).

    Args:
      x: a Tensor or array-like.
      axes: None, or a permutation of the axes (negatives allowed).

    Returns:
      The transposed Tensor.

    Raises:
      ValueError: if `axes` is not a permutation of x's axes.

    Example::

        >>> gradtape.transpose(gradtape.constant(np.ones((2, 3, 4))), (1, 0, 2)).shape
        (3, 2, 4)
    """
    x = as_tensor(x)
    if axes is None:
        perm = tuple(range(x.ndim))[::-1]
    else:
        axes = tuple(axes)
        if len(axes) != x.ndim:
            raise ValueError(f"transpose: axes {axes} don't match a tensor of shape {x.shape}")
        perm = _axes_in_order("transpose", axes, x.ndim)
    return _permute(x, perm)


def _permute(x, perm):
    perm = tuple(int(p) for p in perm)
    if perm == tuple(range(x.ndim)):
        return x
    return bind(transpose_p, x, perm=perm)


@implements(np.moveaxis)
def moveaxis(x, source, destination):
    """x with axes `source` moved to positions `destination`; the others keep their order.

    Args:
      x: a Tensor or array-like.
      source, destination: ints or equally long sequences of ints.

    Returns:
      The transposed Tensor.

    Example::

        >>> gradtape.moveaxis(gradtape.constant(np.ones((2, 3, 4))), 0, -1).shape
        (3, 4, 2)
    """
    x = as_tensor(x)
    source = _axes_in_order("moveaxis", source, x.ndim)
    destination = _axes_in_order("moveaxis", destination, x.ndim)
    if len(source) != len(destination):
        raise ValueError(
            "moveaxis: `source` and `destination` arguments must have the same number of elements"
        )
    order = [a for a in range(x.ndim) if a not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return _permute(x, order)


@implements(np.swapaxes)
def swapaxes(x, axis1, axis2):
    """x with axes `axis1` and `axis2` interchanged.

    Args:
      x: a Tensor or array-like.
      axis1, axis2: the two axes (negatives allowed).

    Returns:
      The transposed Tensor.

    Example::

        >>> gradtape.swapaxes(gradtape.constant(np.ones((2, 3))), 0, 1).shape
        (3, 2)
    """
    x = as_tensor(x)
    a, b = _axis("swapaxes", axis1, x.ndim), _axis("swapaxes", axis2, x.ndim)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return _permute(x, perm)


# --- joining ---------------------------------------------------------------------------------

@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """Join tensors along an existing axis (flattened first if axis is None).

    Args:
      arrays: a sequence of Tensors or array-likes, equal in shape except along `axis`.
      axis: the axis to join along.
      dtype: optional result dtype; otherwise NumPy's promotion of the inputs.

    Returns:
      The joined Tensor.

    Raises:
      ValueError: if the shapes differ outside `axis` or a tensor is 0-d.

    Example::

        >>> x, y = gradtape.constant(np.ones((2, 3))), np.zeros((2, 1))
        >>> gradtape.concatenate([x, y], axis=1).shape
        (2, 4)
    """
    if out is not None:
        raise TypeError("concatenate: out= is not supported (tensors are immutable)")
    if dtype is None:
        fast = _concatenate_tensors(arrays, axis)
        if fast is not None:
            return fast
    arrays = _joined(arrays, dtype, "concatenate")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    if builtins.any(a.ndim == 0 for a in arrays):
        raise ValueError("concatenate: zero-dimensional tensors cannot be concatenated")
    axis = _axis("concatenate", axis, arrays[0].ndim)
    first = arrays[0]
    for a in arrays[1:]:
        if a.ndim != first.ndim or builtins.any(
            p != q for i, (p, q) in enumerate(zip(a.shape, first.shape)) if i != axis
        ):
            shapes = ", ".join(str(t.shape) for t in arrays)
            raise ValueError(
                f"concatenate: all input shapes must match except along axis {axis}, got {shapes}"
            )
    if len(arrays) == 1:
        return arrays[0]
    return bind(concatenate_p, *arrays, axis=axis)


def _concatenate_tensors(arrays, axis):
    """concatenate's common case, or None: a list or tuple of two or more tensors of one dtype
    and rank, equal but along an int `axis`. What the general path would bind, without
    its conversions (an LSTM's step concatenates its input and state on every step; ADBench's
    GMM each column of its triangular factors)."""
    if axis.__class__ is not int or arrays.__class__ not in _SEQUENCES or len(arrays) < 2:
        return None
    dtype = None
    for a in arrays:
        if a.__class__ not in EXACT_TENSORS:
            return None
        shape = a.shape
        if dtype is None:  # the first
            dtype, rank = a.dtype, len(shape)
            if not -rank <= axis < rank:
                return None
            axis %= rank
            before, after = shape[:axis], shape[axis + 1:]
            continue
        other = a.dtype
        if other is not dtype and other != dtype:
            return None
        if len(shape) != rank or rank > 1 and (shape[:axis] != before or shape[axis + 1:] != after):
            return None
    return bind(concatenate_p, *arrays, axis=axis)


@fast_path(np.concatenate)
def _np_concatenate(args, kwargs):
    """np.concatenate(arrays) or (arrays, axis), axis positional or keyword, of tensors."""
    axis = _axis_argument(args, kwargs)
    return None if axis is None else _concatenate_tensors(args[0], axis)


def _axis_argument(args, kwargs):
    """The axis of a call `f(arrays)`, `f(arrays, axis)` or `f(arrays, axis=axis)` (0 if
    not given); None for a call with any other argument, left to the general path."""
    n = len(args)
    if kwargs:
        if n != 1 or len(kwargs) != 1:
            return None
        return kwargs.get("axis")
    if n == 1:
        return 0
    return args[1] if n == 2 else None


def _joined(arrays, dtype, name) -> list:
    if isinstance(arrays, Tensor):
        arrays = [arrays[i] for i in range(len(arrays))]  # like NumPy: split the first axis
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{name}: need at least one array to {name}")
    if dtype is None:
        arrays = promote(*[a if isinstance(a, Tensor) else np.asarray(a) for a in arrays])
    else:
        arrays = [convert(a if isinstance(a, Tensor) else np.asarray(a), dtype) for a in arrays]
    return [as_tensor(a) for a in arrays]


@implements(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Join equal-shaped tensors along a new axis at position `axis` of the result.

    Args:
      arrays: a sequence of equal-shaped Tensors or array-likes.
      axis: the position of the new axis in the result.
      dtype: optional result dtype.

    Returns:
      A Tensor with one more dimension, of length len(arrays) at `axis`.

    Raises:
      ValueError: if the shapes differ.

    Example::

        >>> x = gradtape.constant(np.ones((2, 3)))
        >>> gradtape.stack([x, x, x], axis=-1).shape
        (2, 3, 3)
    """
    if out is not None:
        raise TypeError("stack: out= is not supported (tensors are immutable)")
    if dtype is None:
        fast = _stack_tensors(arrays, axis)
        if fast is not None:
            return fast
    arrays = _joined(arrays, dtype, "stack")
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(
            "stack: all input tensors must have the same shape, got "
            + ", ".join(str(a.shape) for a in arrays)
        )
    axis = _axis("stack", axis, arrays[0].ndim + 1)
    rows = [expand_dims(a, axis) for a in arrays]
    # concatenate's promotion and checks hold already: equal shapes, one dtype
    return rows[0] if len(rows) == 1 else bind(concatenate_p, *rows, axis=axis)


def _stack_tensors(arrays, axis):
    """stack's common case, or None: a list or tuple of tensors of one dtype and shape, and
    an int `axis`. What the general path binds (each tensor reshaped to have the new axis,
    then one concatenate), with its checks made once for the whole list, without its
    conversions (ADBench's GMM stacks the columns of each triangular factor)."""
    if axis.__class__ is not int or arrays.__class__ not in _SEQUENCES or not arrays:
        return None
    first = arrays[0]
    if first.__class__ not in EXACT_TENSORS:
        return None
    dtype, shape = first.dtype, first.shape
    for a in arrays:
        if a.__class__ not in EXACT_TENSORS:
            return None
        other = a.dtype
        if (other is not dtype and other != dtype) or a.shape != shape:
            return None
    rank = len(shape) + 1
    if not -rank <= axis < rank:
        return None
    axis %= rank
    row = shape[:axis] + (1,) + shape[axis:]
    rows = [bind(reshape_p, a, shape=row) for a in arrays]
    return rows[0] if len(rows) == 1 else bind(concatenate_p, *rows, axis=axis)


@fast_path(np.stack)
def _np_stack(args, kwargs):
    """np.stack(arrays) or (arrays, axis), axis positional or keyword, of tensors."""
    axis = _axis_argument(args, kwargs)
    return None if axis is None else _stack_tensors(args[0], axis)


# --- pad ---------------------------------------------------------------------------------------

_GATHERED_PAD_MODES = ("edge", "reflect", "symmetric", "wrap")


@implements(np.pad)
def pad(x, pad_width, mode="constant", constant_values=0, *, reflect_type="even"):
    """x padded: `pad_width` entries before and after each axis, with a constant or
    copies of x's own elements.

    Args:
      x: a Tensor or array-like.
      pad_width: as in numpy.pad: an int, a (before, after) pair, or one pair per axis.
      mode: "constant", or "edge", "reflect", "symmetric", "wrap" (copies of
        x's elements, as in numpy.pad; their gradients add up).
      constant_values: the padding value of mode "constant": a number, or a
        scalar Tensor (then the result is differentiable with respect to it too).
      reflect_type: only "even".

    Returns:
      The padded Tensor.

    Raises:
      ValueError: for negative widths, or a copying mode on an empty axis.
      NotImplementedError: for another mode, or per-axis constant values.

    Example::

        >>> gradtape.pad(gradtape.constant([1.0, 2.0]), (1, 2)).numpy()
        array([0., 1., 2., 0., 0.])
        >>> gradtape.pad(gradtape.constant([1.0, 2.0, 3.0]), 2, mode="reflect").numpy()
        array([3., 2., 1., 2., 3., 2., 1.])
    """
    if mode != "constant" and mode not in _GATHERED_PAD_MODES:
        raise NotImplementedError(
            f"pad: mode={mode!r} is not supported; the modes are 'constant', "
            + ", ".join(repr(m) for m in _GATHERED_PAD_MODES)
        )
    if reflect_type != "even":
        raise NotImplementedError(f"pad: only reflect_type='even' is supported, got {reflect_type!r}")
    x = as_tensor(x)
    try:
        widths = np.broadcast_to(np.asarray(pad_width), (x.ndim, 2))
    except ValueError:
        raise ValueError(
            f"pad: pad_width {pad_width!r} does not give (before, after) for each axis of a "
            f"tensor of shape {x.shape}"
        ) from None
    if widths.dtype.kind not in "iu" and widths.size:
        raise TypeError(f"pad: pad_width must be integers, got {pad_width!r}")
    widths = tuple((int(lo), int(hi)) for lo, hi in widths)
    if builtins.any(w < 0 for pair in widths for w in pair):
        raise ValueError(
            f"pad: pad_width must be non-negative, got {pad_width!r} for a tensor of shape {x.shape}"
        )
    if mode != "constant":
        return _pad_by_copies(x, widths, mode)
    if isinstance(constant_values, Tensor):
        if constant_values.ndim != 0:
            raise NotImplementedError("pad: constant_values must be a scalar")
        mask = np.pad(np.ones(x.shape, bool), widths)  # where the input lands
        return ew.where(mask, pad(x, widths), constant_values)
    if np.ndim(constant_values) != 0:
        raise NotImplementedError(
            f"pad: constant_values must be a scalar, got {constant_values!r}; per-axis values "
            "are not supported"
        )
    if builtins.all(p == (0, 0) for p in widths):
        return x
    return bind(pad_p, x, pad_width=widths, value=pad_value(constant_values, x.dtype))


def _pad_by_copies(x, widths, mode):
    """Each padded axis as a gather of x's own elements: np.pad of the positions 0..d-1
    with the same mode says which element every padded position copies."""
    for axis, (lo, hi) in enumerate(widths):
        if lo == hi == 0:
            continue
        d = x.shape[axis]
        if d == 0:
            raise ValueError(
                f"pad: can't extend the empty axis {axis} of a tensor of shape {x.shape} with "
                f"mode={mode!r}; only mode='constant' pads an empty axis"
            )
        source = np.pad(np.arange(d, dtype=np.int64), (lo, hi), mode=mode)
        x = bind(gather_p, x, source, axis=axis)
    return x


# --- integer-array indexing ---------------------------------------------------------------

@implements(np.take)
def take(x, indices, axis=None, out=None, mode="raise"):
    """Elements of x at integer `indices` along `axis` (of the flattened x if None).

    The result has shape `x.shape[:axis] + indices.shape + x.shape[axis + 1:]`.
    Repeated indices are allowed; their gradients add up.

    Args:
      x: a Tensor or array-like.
      indices: integers (array-like or integer Tensor); negatives count from the end.
      axis: the axis to take along; None flattens x first.
      mode: "raise" (default), or for concrete indices "clip" or "wrap", as in NumPy.

    Returns:
      The gathered Tensor.

    Raises:
      IndexError: for an index out of range (mode="raise").

    Example::

        >>> gradtape.take(gradtape.constant([1.0, 2.0, 3.0]), [2, 0, 0]).numpy()
        array([3., 1., 1.])
    """
    if out is not None:
        raise TypeError("take: out= is not supported (tensors are immutable)")
    x = as_tensor(x)
    if axis is None:
        x, axis = ravel(x), 0
    axis = _axis("take", axis, x.ndim)
    idx = _index_array(indices, "take")
    d = x.shape[axis]
    if mode in ("clip", "wrap"):
        if isinstance(idx, Tensor):
            raise NotImplementedError(
                f"take: mode={mode!r} needs concrete indices; got an abstract index tensor"
            )
        if d == 0 and idx.size:
            raise IndexError("take: cannot do a non-empty take from an empty axis")
        idx = np.clip(idx, 0, d - 1) if mode == "clip" else np.mod(idx, d)
    elif mode != "raise":
        raise ValueError(f"take: mode must be 'raise', 'clip' or 'wrap', got {mode!r}")
    return bind(gather_p, x, _wrap_negative(idx, d, axis), axis=axis)


def _index_array(index, what):
    """An integer index array: a NumPy array, or an integer Tensor while tracing."""
    if isinstance(index, Tensor):
        if index.is_abstract:
            if index.dtype.kind not in "iu":
                raise IndexError(
                    f"{what}: arrays used as indices must be of integer (or boolean) type, "
                    f"got {index.dtype}"
                )
            return index
        index = index.numpy()
    if isinstance(index, list) and not index:
        index = np.zeros(0, np.intp)  # [] is an empty integer index, as in NumPy
    index = np.asarray(index)
    if index.dtype.kind not in "iu":
        raise IndexError(
            f"{what}: arrays used as indices must be of integer (or boolean) type, got {index.dtype}"
        )
    return index.astype(np.int64)


def _wrap_negative(idx, size, axis):
    """Negative indices counted from the end; out-of-range ones raise IndexError."""
    if isinstance(idx, Tensor):  # unknown while tracing: gather's reference checks the range
        return ew.where(ew.less(idx, 0), ew.add(idx, size), idx)
    bad = (idx < -size) | (idx >= size)
    if np.any(bad):
        raise IndexError(
            f"index {idx[bad].flat[0]} is out of bounds for axis {axis} with size {size}"
        )
    return np.where(idx < 0, idx + size, idx)


# --- Tensor.__getitem__ ---------------------------------------------------------------------

_VALID_INDICES = (
    "only integers, slices (`:`), ellipsis (`...`), None (`numpy.newaxis`) and integer or "
    "boolean arrays are valid indices"
)


def getitem(x, index):
    """x[index] with NumPy's semantics for basic and advanced indexing.

    Supports ints, slices (any step, negative too), None, Ellipsis, integer
    arrays/lists/Tensors (broadcast together when there are several), and
    boolean masks with a concrete value. A boolean mask of an abstract
    (traced) tensor has a data-dependent shape and raises ConcretizationError.
    """
    fast = basic_getitem(x, index)  # ints and slices on a concrete tensor (tracer/basic_index.py)
    if fast is NotImplemented:
        fast = abstract_getitem(x, index)  # the same on a traced one
    if fast is not NotImplemented:
        return fast
    fast = _new_axes_getitem(x, index)
    if fast is not None:
        return fast
    entries = _expand_index(x, index if isinstance(index, tuple) else (index,))
    # The axis of the original x each entry indexes (for error messages).
    original_axis = [n - 1 for n in itertools.accumulate(e is not None for e in entries)]
    # None adds a length-1 axis: insert them all first, then treat them as `:`.
    if builtins.any(e is None for e in entries):
        dims = iter(x.shape)
        x = reshape(x, tuple(1 if e is None else next(dims) for e in entries))
        entries = [builtins.slice(None) if e is None else e for e in entries]
    arrays = [i for i, e in enumerate(entries) if _is_array(e)]
    ints = [i for i, e in enumerate(entries) if isinstance(e, int)]
    # NumPy puts the indexed dimensions first unless all advanced indices
    # (integer scalars count once there is an array) are next to each other.
    advanced = sorted(arrays + ints) if arrays else []
    front = bool(advanced) and advanced != list(range(advanced[0], advanced[-1] + 1))

    starts, stops, steps = [], [], []
    for axis, (e, d) in enumerate(zip(entries, x.shape)):
        if isinstance(e, int):
            if not -d <= e < d:
                raise IndexError(
                    f"index {e} is out of bounds for axis {original_axis[axis]} with size {d}"
                )
            r = range(e % d, e % d + 1)
        elif isinstance(e, builtins.slice):
            r = range(*e.indices(d))
        else:
            r = range(d)
        starts.append(r.start), stops.append(r.stop), steps.append(r.step)
    x = _slice(x, starts, stops, steps)
    if ints:
        x = reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in ints))
    if not arrays:
        return x

    kept = [i for i in range(len(entries)) if i not in ints]
    positions = [kept.index(i) for i in arrays]
    idx = [
        _wrap_negative(entries[i], x.shape[p], int(original_axis[i]))
        for i, p in zip(arrays, positions)
    ]
    idx = _broadcast_indices(idx)
    nb = idx[0].ndim
    if len(arrays) == 1:
        p = positions[0]
        out = bind(gather_p, x, idx[0], axis=p)
        if front and p:
            out = _permute(out, list(range(p, p + nb)) + list(range(p)) + list(range(p + nb, out.ndim)))
        return out
    if front:  # move the indexed axes to the front, in order
        rest = [i for i in range(x.ndim) if i not in positions]
        x = _permute(x, positions + rest)
        positions = list(range(len(positions)))
    p, k = positions[0], len(positions)
    dims = x.shape[p:p + k]
    x = reshape(x, x.shape[:p] + (int(np.prod(dims, dtype=np.int64)),) + x.shape[p + k:])
    return bind(gather_p, x, _linear_index(idx, dims), axis=p)


def _new_axes_getitem(x, index):
    """x[index] for a basic index with None entries (`means[None, :, :]`, `x[:, None]`), or
    None: ints in range, slices of ints and Nones with a nonzero step, and Nones, no Ellipsis,
    on a tensor whose dimensions are ints. What the general path binds (the reshape inserting
    the new axes, then the basic index with `:` in their place: tracer/basic_index.py's
    binds), without its index expansion."""
    if x.__class__ not in EXACT_TENSORS or index.__class__ is not tuple and index is not None:
        return None
    shape = x.shape
    entries = index if index.__class__ is tuple else (index,)
    new_shape, basic, axis, rank = [], [], 0, len(shape)
    for e in entries:
        if e is None:
            new_shape.append(1)
            basic.append(_EVERYTHING)
            continue
        if axis == rank:
            return None  # too many indices: the general path's error
        d = shape[axis]
        if d.__class__ is not int:
            return None  # a traced dimension
        if e.__class__ is int:
            if not -d <= e < d:
                return None
        elif e.__class__ is not builtins.slice or e.step == 0 or not (
                _int_or_none(e.start) and _int_or_none(e.stop) and _int_or_none(e.step)):
            return None
        new_shape.append(d)
        basic.append(e)
        axis += 1
    for d in shape[axis:]:
        if d.__class__ is not int:
            return None
        new_shape.append(d)
    if len(new_shape) == rank:
        return None  # no None: not an index this path is for
    y, basic = bind(reshape_p, x, shape=tuple(new_shape)), tuple(basic)
    out = basic_getitem(y, basic)  # in C, for a concrete y
    return basic_binds(y, basic) if out is NotImplemented else out


_EVERYTHING = builtins.slice(None)


def _int_or_none(v) -> bool:
    return v is None or v.__class__ is int


def _expand_index(x, index) -> list:
    """Index entries with Ellipsis expanded and boolean masks turned into integer arrays,
    each entry consuming one axis of x (or none, for None)."""
    entries, consumed, ellipsis = [], 0, None
    for e in index:
        if e is Ellipsis:
            if ellipsis is not None:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis = len(entries)
            continue
        if e is None or isinstance(e, builtins.slice):
            entries.append(e)
            consumed += e is not None
            continue
        if isinstance(e, (bool, np.bool_)):
            raise IndexError(
                f"indexing with a scalar boolean ({e}) is not supported; use gradtape.where "
                "or expand_dims instead"
            )
        if isinstance(e, (int, np.integer)):
            entries.append(int(e))
            consumed += 1
            continue
        if isinstance(e, Tensor) and e.dtype == np.bool_ and e.is_abstract:
            raise ConcretizationError(
                f"boolean mask indexing needs the concrete value of an abstract mask "
                f"{e.dtype}{list(e.shape)}, because the result's shape depends on it; use "
                "gradtape.where(mask, x, 0.0) to select values instead"
            )
        if isinstance(e, (list, tuple)) and any(isinstance(v, Tensor) and v.is_abstract for v in e):
            e = stack(e)  # a list holding traced integers (a staged function's list argument)
        if isinstance(e, (Tensor, np.ndarray, list, tuple, range)):
            value = e.numpy() if isinstance(e, Tensor) and not e.is_abstract else e
            if not isinstance(value, Tensor) and np.asarray(value).dtype == np.bool_:
                mask = np.asarray(value)
                if mask.ndim == 0:
                    raise IndexError("indexing with a 0-d boolean mask is not supported")
                dims = x.shape[consumed:consumed + mask.ndim]
                if mask.ndim > len(dims):
                    raise IndexError(
                        f"too many indices: a boolean mask of shape {mask.shape} indexes "
                        f"{mask.ndim} axes, but only {len(dims)} are left of shape {x.shape}"
                    )
                for k, (dm, dx) in enumerate(zip(mask.shape, dims)):
                    if dm != dx:
                        raise IndexError(
                            f"boolean index did not match indexed tensor along axis "
                            f"{consumed + k}; size of axis is {dx} but size of corresponding "
                            f"boolean axis is {dm}"
                        )
                entries.extend(np.nonzero(mask))
                consumed += mask.ndim
                continue
            value = _index_array(value, "index")
            entries.append(int(value) if _is_array(value) and not isinstance(value, Tensor)
                           and value.ndim == 0 else value)
            consumed += 1
            continue
        raise IndexError(f"{_VALID_INDICES}; got {type(e).__name__}")
    if consumed > x.ndim:
        raise IndexError(
            f"too many indices for tensor: tensor is {x.ndim}-dimensional, but {consumed} "
            "were indexed"
        )
    fill = [builtins.slice(None)] * (x.ndim - consumed)
    at = len(entries) if ellipsis is None else ellipsis
    return entries[:at] + fill + entries[at:]


def _is_array(e) -> bool:
    return isinstance(e, (np.ndarray, Tensor))


def _slice(x, starts, stops, steps):
    starts, stops, steps = normalize_slice_params(starts, stops, steps)
    full = builtins.all(
        len(range(a, b, c)) == d and (d <= 1 or c == 1)
        for d, a, b, c in zip(x.shape, starts, stops, steps)
    )
    if full:
        return x
    return bind(slice_p, x, starts=starts, stops=stops, steps=steps)


def _broadcast_indices(idx) -> list:
    """Broadcast integer index arrays (NumPy arrays or traced Tensors) together."""
    shapes = [np.shape(i) if not isinstance(i, Tensor) else i.shape for i in idx]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(
            "shape mismatch: indexing arrays could not be broadcast together with shapes "
            + " ".join(str(s) for s in shapes)
        ) from None
    return [
        broadcast_to(i, shape) if isinstance(i, Tensor) else np.broadcast_to(i, shape)
        for i in idx
    ]


def _linear_index(idx, dims):
    """The flat (C order) index into `dims` of the index arrays `idx`."""
    strides = [int(np.prod(dims[k + 1:], dtype=np.int64)) for k in range(len(dims))]
    if not builtins.any(isinstance(i, Tensor) for i in idx):
        return builtins.sum(i * s for i, s in zip(idx, strides)).astype(np.int64)
    total = None
    for i, s in zip(idx, strides):
        term = ew.multiply(convert(i, np.int64), s)
        total = term if total is None else ew.add(total, term)
    return total


# --- Tensor methods ---------------------------------------------------------------------------

def _method_shape(args):
    """NumPy methods take a shape as one tuple or as varargs."""
    if len(args) == 1 and (args[0] is None or not isinstance(args[0], (int, np.integer))):
        return args[0]
    return args


def _iter(self):
    for i in range(len(self)):  # len() of a 0-d tensor raises TypeError, as in NumPy
        yield self[i]


# ints and slices in C when it is built; a result is never x itself (fresh.py)
Tensor.__getitem__ = tensor_getitem(returning_new_objects(getitem))
Tensor.__iter__ = _iter
Tensor.reshape = lambda self, *shape, order="C": reshape(self, _method_shape(shape), order)
Tensor.transpose = lambda self, *axes: transpose(self, _method_shape(axes) if axes else None)
Tensor.T = property(lambda self: transpose(self))
Tensor.squeeze = lambda self, axis=None: squeeze(self, axis)
Tensor.flatten = lambda self: flatten(self)
Tensor.ravel = lambda self: ravel(self)
Tensor.swapaxes = lambda self, axis1, axis2: swapaxes(self, axis1, axis2)
