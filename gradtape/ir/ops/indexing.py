"""Ops that select, place or join elements: slice/unslice, gather/scatter_add,
concatenate and pad.

All are linear in their array operand and come in transpose pairs, so the
VJP of one is the other and derivatives of every order stay in this op set:

    slice        <->  unslice        (basic slicing; steps may be negative)
    gather       <->  scatter_add    (np.take along one axis / np.add.at)
    concatenate   ->  slice          (one slice per operand)
    pad           ->  slice

Slice params are normalized: one `(start, stop, step)` per axis with Python
`range` semantics (not slice semantics), written in a unique form:

    empty axis:          (0, 0, 1)
    one element i:       (i, i + 1, 1)
    otherwise:           start = first index (0 <= start < dim),
                         stop  = last index + 1 for step > 0,
                                 last index - 1 for step < 0 (so -1 means
                                 "down to index 0"), step != 0

so `x[::-2]` of a length-5 axis is `(4, -1, -2)` and `x[1:5:2]` is
`(1, 4, 2)`. `slice(x, starts, stops, steps)` normalizes any range-semantics
triple; front ends map a Python slice `s` to `range(*s.indices(dim))`.

Index operands of gather/scatter_add are integer arrays whose entries lie in
0..dim-1 (front ends wrap negative indices); the reference raises IndexError
otherwise, since out-of-range indices must never wrap silently. They get no
gradient.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..builder import Sym, bind
from ..errors import DTypeError, ShapeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..types import TensorType
from ._helpers import same_dtype
from .elementwise import add, cast, maximum, minimum
from .layout import all_batched, broadcast_batched, broadcast_to, reshape

__all__ = [
    "slice_p", "unslice_p", "gather_p", "scatter_add_p", "concatenate_p", "pad_p",
    "slice", "unslice", "gather", "scatter_add", "concatenate", "pad",
]


def _zeros(like: Sym, type: TensorType) -> Sym:
    return broadcast_to(like.builder.literal(0, type.dtype), type.shape)


# --- slice params ------------------------------------------------------------------

def normalize_range(start: int, stop: int, step: int) -> tuple:
    """The normalized (start, stop, step) of `range(start, stop, step)` (see module doc)."""
    r = range(int(start), int(stop), int(step))
    n = len(r)
    if n == 0:
        return (0, 0, 1)
    if n == 1:
        return (r[0], r[0] + 1, 1)
    return (r[0], r[-1] + (1 if r.step > 0 else -1), r.step)


def normalize_slice_params(starts, stops, steps) -> tuple:
    """(starts, stops, steps) tuples, each axis normalized by `normalize_range`."""
    triples = [normalize_range(a, b, c) for a, b, c in zip(starts, stops, steps)]
    return tuple(tuple(t[k] for t in triples) for k in range(3))


def _sliced_shape(op, x: TensorType, shape, starts, stops, steps) -> tuple:
    """The shape `range`s select from `shape`; checks they are normalized and in bounds."""
    if not len(starts) == len(stops) == len(steps) == len(shape):
        raise ShapeError(
            f"{op.name}: needs one (start, stop, step) per axis of shape {tuple(shape)}, "
            f"got starts={starts}, stops={stops}, steps={steps}"
        )
    out = []
    for axis, (d, a, b, c) in enumerate(zip(shape, starts, stops, steps)):
        if c == 0:
            raise ShapeError(f"{op.name}: step of axis {axis} is 0 (operand {x})")
        n = len(range(a, b, c))
        if (a, b, c) != normalize_range(a, b, c):
            raise ShapeError(
                f"{op.name}: axis {axis} has (start, stop, step)=({a}, {b}, {c}), which is "
                f"not normalized; use {normalize_range(a, b, c)} (emit with ir.ops.{op.name})"
            )
        if n and not (0 <= a < d and 0 <= a + (n - 1) * c < d):
            raise ShapeError(
                f"{op.name}: range({a}, {b}, {c}) of axis {axis} selects indices outside "
                f"0..{d - 1} of shape {tuple(shape)}"
            )
        out.append(n)
    return tuple(out)


def _index(starts, stops, steps) -> tuple:
    # Range semantics -> Python slices: a negative stop means "through index 0".
    return tuple(
        builtins.slice(a, b if b >= 0 else None, c) for a, b, c in zip(starts, stops, steps)
    )


# --- slice --------------------------------------------------------------------------

slice_p = new_op("slice", elementwise=False, can_fail_on_values=False, runs_code=False, data_movement=True)


def _slice_shape(x, *, starts, stops, steps):
    return x.with_shape(_sliced_shape(slice_p, x, x.shape, starts, stops, steps))


shape_rules[slice_p] = _slice_shape
_indices: dict = {}  # (starts, stops, steps) -> _index's answer: a loop slices alike every step


def _slice_impl(x, *, starts, stops, steps):
    key = (starts, stops, steps)
    index = _indices.get(key)
    if index is None:
        index = _index(starts, stops, steps)
        if len(_indices) < 4096:
            _indices[key] = index
    return (x if x.__class__ is np.ndarray else np.asarray(x))[index]


impls[slice_p] = _slice_impl
vjp_rules[slice_p] = lambda ct, out, x, *, starts, stops, steps: (
    unslice(ct, x.shape, starts, stops, steps),
)
jvp_rules[slice_p] = lambda ts, out, x, *, starts, stops, steps: slice(ts[0], starts, stops, steps)
# Every batch element takes the same slice: the batch axis is taken whole.
batching_rules[slice_p] = lambda n, ins, batched, *, starts, stops, steps: slice(
    ins[0], (0,) + starts, (n,) + stops, (1,) + steps
)


# --- unslice: the transpose of slice --------------------------------------------------

unslice_p = new_op("unslice", elementwise=False, can_fail_on_values=False, runs_code=False,
                   data_movement=True)


def _unslice_shape(x, *, shape, starts, stops, steps):
    if any(d < 0 for d in shape):
        raise ShapeError(f"unslice: negative dimension in shape {shape}")
    want = _sliced_shape(unslice_p, x, shape, starts, stops, steps)
    if x.shape != want:
        raise ShapeError(
            f"unslice: operand {x} does not fit the slice of shape {tuple(shape)} with "
            f"starts={starts}, stops={stops}, steps={steps}, which has shape {want}"
        )
    return x.with_shape(shape)


def _unslice_impl(x, *, shape, starts, stops, steps):
    x = np.asarray(x)
    out = np.zeros(shape, x.dtype)
    out[_index(starts, stops, steps)] = x
    return out


shape_rules[unslice_p] = _unslice_shape
impls[unslice_p] = _unslice_impl
vjp_rules[unslice_p] = lambda ct, out, x, *, shape, starts, stops, steps: (
    slice(ct, starts, stops, steps),
)
jvp_rules[unslice_p] = lambda ts, out, x, *, shape, starts, stops, steps: unslice(
    ts[0], shape, starts, stops, steps
)
batching_rules[unslice_p] = lambda n, ins, batched, *, shape, starts, stops, steps: unslice(
    ins[0], (n,) + tuple(shape), (0,) + starts, (n,) + stops, (1,) + steps
)


# --- gather: np.take(x, idx, axis) ---------------------------------------------------

def _require_indices(op, idx: TensorType):
    if idx.dtype.kind not in "iu":
        raise DTypeError(f"{op.name}: indices must be an integer array, got {idx}")


def _require_room(op, size, idx, axis):
    """An empty axis has no edge to clamp to: indexing it with any index is refused when traced."""
    if size == 0 and idx.size > 0:
        raise IndexError(
            f"{op.name}: cannot index axis {axis} of size 0 with {idx.size} indices ({idx}); "
            "an empty axis has no element to read or write"
        )


def clamp_indices(idx, size):
    """Indices clamped into 0..size-1: the rule of gather and scatter_add everywhere.

    Front ends (take, getitem) check indices they know while tracing and
    raise IndexError as NumPy does; an index that is a traced value (an
    argument of a staged function) is clamped to the edge, in the
    interpreter and in compiled code alike (codegen's Gather and
    ScatterAdd), and its gradient goes to the element it read.
    """
    return np.clip(np.asarray(idx), 0, max(size - 1, 0))


# Indices are values: one out of range raises in the reference (never wraps).
gather_p = new_op("gather", elementwise=False, can_fail_on_values=True, runs_code=False)


def _gather_shape(x, idx, *, axis):
    _require_indices(gather_p, idx)
    if not 0 <= axis < x.ndim:
        raise ShapeError(f"gather: axis {axis} is out of range for an operand {x} (indices {idx})")
    _require_room(gather_p, x.shape[axis], idx, axis)
    return x.with_shape(x.shape[:axis] + idx.shape + x.shape[axis + 1:])


def _gather_impl(x, idx, *, axis):
    x = np.asarray(x)
    return np.take(x, clamp_indices(idx, x.shape[axis]), axis=axis)


def _gather_jvp(ts, out, x, idx, *, axis):
    return None if ts[0] is None else gather(ts[0], idx, axis)


shape_rules[gather_p] = _gather_shape
impls[gather_p] = _gather_impl
vjp_rules[gather_p] = lambda ct, out, x, idx, *, axis: (
    scatter_add(ct, idx, axis, x.shape[axis]),
    None,
)
jvp_rules[gather_p] = _gather_jvp


def _prod(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def flat_indices(idx, lead: tuple, stride: int):
    """Batched indices (B, *I) into x's axes `lead + (indexed axis,)` flattened into one.

    `lead` is (B, *pre) when x is batched, or (1, *pre) when it is shared.
    The result, of shape (B, *pre, *I), is idx[b] plus the offset of row
    (b, *p) of the flattened axis, (flat index of (b, *p)) * stride, so a
    gather/scatter over that one axis stays within each (b, *p). Indices
    are widened to int64 when their dtype cannot hold the largest offset.
    Each index is first clamped into 0..stride-1, as an unbatched gather or
    scatter_add clamps it (clamp_indices), so none reaches a neighbouring row.
    """
    zero, last = (idx.builder.literal(np.array(v, idx.dtype)) for v in (0, max(stride - 1, 0)))
    idx = minimum(maximum(idx, zero), last)
    n, pre, k = idx.shape[0], lead[1:], idx.ndim - 1
    count = int(np.prod(lead, dtype=np.int64))
    if count * stride > 0 and np.iinfo(idx.dtype).max < count * stride - 1:
        idx = cast(idx, np.int64)
    offsets = (np.arange(count, dtype=idx.dtype) * stride).reshape(lead + (1,) * k)
    lifted = reshape(idx, (n,) + (1,) * len(pre) + idx.shape[1:])
    return add(lifted, idx.builder.literal(offsets))


def _gather_batch(n, ins, batched, *, axis):
    """take(x[b], idx[b], axis) for each b, as one gather and no transposes.

    Shared indices gather along the shifted axis. Batched indices gather
    from x with its leading axes ((batch,) *pre and the gathered one, which
    are adjacent) reshaped into one, each index offset to its row of that
    axis (`flat_indices`); the result comes out as (B, *pre, *I, *post),
    the batched layout itself (indices clamped first, see flat_indices).
    """
    x, idx = ins
    x_batched, idx_batched = batched
    if not idx_batched:
        return gather(x, idx, axis + 1)
    if not x_batched and axis == 0:
        return gather(x, idx, 0)  # (B, *I, *post) already
    at = axis + int(x_batched)  # the gathered axis of x as it arrives
    lead = x.shape[:at] if x_batched else (1,) + x.shape[:at]
    flat = reshape(x, (_prod(x.shape[:at + 1]),) + x.shape[at + 1:])
    return gather(flat, flat_indices(idx, lead, x.shape[at]), 0)


batching_rules[gather_p] = _gather_batch


# --- scatter_add: the transpose of gather (np.add.at into zeros) -----------------------

scatter_add_p = new_op("scatter_add", elementwise=False, can_fail_on_values=True, runs_code=False)


def _scatter_add_shape(x, idx, *, axis, size):
    _require_indices(scatter_add_p, idx)
    k = idx.ndim
    if not (0 <= axis <= x.ndim - k) or x.shape[axis:axis + k] != idx.shape or size < 0:
        raise ShapeError(
            f"scatter_add: operand {x} must have the index shape {idx.shape} at axis {axis} "
            f"(and size={size} must be >= 0)"
        )
    _require_room(scatter_add_p, size, idx, axis)
    return x.with_shape(x.shape[:axis] + (size,) + x.shape[axis + k:])


def _scatter_add_impl(x, idx, *, axis, size):
    x = np.asarray(x)
    idx = clamp_indices(idx, size)
    out = np.zeros(x.shape[:axis] + (size,) + x.shape[axis + idx.ndim:], x.dtype)
    np.add.at(out, (builtins.slice(None),) * axis + (idx,), x)
    return out


def _scatter_add_jvp(ts, out, x, idx, *, axis, size):
    return None if ts[0] is None else scatter_add(ts[0], idx, axis, size)


shape_rules[scatter_add_p] = _scatter_add_shape
impls[scatter_add_p] = _scatter_add_impl
vjp_rules[scatter_add_p] = lambda ct, out, x, idx, *, axis, size: (gather(ct, idx, axis), None)
jvp_rules[scatter_add_p] = _scatter_add_jvp


def _scatter_add_batch(n, ins, batched, *, axis, size):
    """scatter_add(x[b], idx[b], axis, size) for each b, as one scatter and no transposes.

    Shared indices scatter along the shifted axis. Batched indices scatter
    x, seen as (B, *pre, *I, *post), into one axis of length B * P * size
    (P = prod(pre)), each index offset to its row (`flat_indices`), and
    that axis is then reshaped into (B, *pre, size). A shared x is first
    repeated along the batch axis: every batch element adds it anew.

    Indices are clamped into 0..size-1 first (flat_indices), as unbatched.
    """
    x, idx = ins
    x_batched, idx_batched = batched
    if not idx_batched:
        return scatter_add(x, idx, axis + 1, size)
    if not x_batched:
        x = broadcast_batched(x, n)
    lead = x.shape[:axis + 1]  # (B, *pre)
    rows = _prod(lead) * size
    out = scatter_add(x, flat_indices(idx, lead, size), 0, rows)  # (B * P * size, *post)
    return reshape(out, lead + (size,) + out.shape[1:])


batching_rules[scatter_add_p] = _scatter_add_batch


# --- concatenate -------------------------------------------------------------------------

concatenate_p = new_op("concatenate", elementwise=False, can_fail_on_values=False, runs_code=False,
                       data_movement=True)


def _concatenate_shape(*xs, axis):
    if not xs:
        raise ShapeError("concatenate: needs at least one operand")
    dtype = same_dtype(concatenate_p, xs)
    first = xs[0]
    got = ", ".join(str(x) for x in xs)
    if not 0 <= axis < first.ndim:
        raise ShapeError(f"concatenate: axis {axis} is out of range for operands {got}")
    for x in xs:
        if x.ndim != first.ndim or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != axis
        ):
            raise ShapeError(
                f"concatenate: operand shapes must agree except along axis {axis}, got {got}"
            )
    total = builtins.sum(x.shape[axis] for x in xs)
    return TensorType(first.shape[:axis] + (total,) + first.shape[axis + 1:], dtype)


def _concatenate_vjp(ct, out, *xs, axis):
    cts, offset = [], 0
    for x in xs:
        d = x.shape[axis]
        starts = tuple(offset if i == axis else 0 for i in range(ct.ndim))
        stops = tuple(offset + d if i == axis else n for i, n in enumerate(ct.shape))
        cts.append(slice(ct, starts, stops, (1,) * ct.ndim))
        offset += d
    return tuple(cts)


def _concatenate_jvp(ts, out, *xs, axis):
    return concatenate([_zeros(out, x.type) if t is None else t for t, x in zip(ts, xs)], axis)


shape_rules[concatenate_p] = _concatenate_shape
impls[concatenate_p] = lambda *xs, axis: np.concatenate(xs, axis=axis)
vjp_rules[concatenate_p] = _concatenate_vjp
jvp_rules[concatenate_p] = _concatenate_jvp
# Shared operands are repeated along the batch axis: the joined axis must line up.
batching_rules[concatenate_p] = lambda n, ins, batched, *, axis: concatenate(
    all_batched(n, ins, batched), axis + 1
)


# --- pad: constant padding -------------------------------------------------------------

pad_p = new_op("pad", elementwise=False, can_fail_on_values=False, runs_code=False, data_movement=True)


def _pad_shape(x, *, pad_width, value):
    ok = len(pad_width) == x.ndim and all(
        len(p) == 2 and p[0] >= 0 and p[1] >= 0 for p in pad_width
    )
    if not ok:
        raise ShapeError(
            f"pad: pad_width must hold one (before, after) pair of non-negative ints per "
            f"axis of {x}, got {pad_width}"
        )
    return x.with_shape(tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, pad_width)))


def _pad_vjp(ct, out, x, *, pad_width, value):
    starts = tuple(lo for lo, _ in pad_width)
    stops = tuple(lo + d for (lo, _), d in zip(pad_width, x.shape))
    return (slice(ct, starts, stops, (1,) * x.ndim),)


shape_rules[pad_p] = _pad_shape
impls[pad_p] = lambda x, *, pad_width, value: np.pad(x, pad_width, constant_values=value)
vjp_rules[pad_p] = _pad_vjp
jvp_rules[pad_p] = lambda ts, out, x, *, pad_width, value: pad(ts[0], pad_width, 0)
batching_rules[pad_p] = lambda n, ins, batched, *, pad_width, value: pad(
    ins[0], ((0, 0),) + tuple(pad_width), value
)


# --- the functions rules and passes call ------------------------------------------------

def slice(x: Sym, starts, stops, steps=None) -> Sym:
    """x[start:stop:step, ...] per axis, given with `range` semantics (normalized here)."""
    steps = (1,) * x.ndim if steps is None else steps
    starts, stops, steps = normalize_slice_params(starts, stops, steps)
    if _is_full(x.shape, starts, stops, steps):
        return x
    return bind(slice_p, x, starts=starts, stops=stops, steps=steps)


def unslice(x: Sym, shape, starts, stops, steps=None) -> Sym:
    """Zeros of `shape` with x placed at the slice (the transpose of `slice`)."""
    shape = tuple(int(d) for d in shape)
    steps = (1,) * len(shape) if steps is None else steps
    starts, stops, steps = normalize_slice_params(starts, stops, steps)
    if _is_full(shape, starts, stops, steps):
        return x
    return bind(unslice_p, x, shape=shape, starts=starts, stops=stops, steps=steps)


def _is_full(shape, starts, stops, steps) -> bool:
    return all(
        len(range(a, b, c)) == d and (d <= 1 or c == 1)
        for d, a, b, c in zip(shape, starts, stops, steps)
    )


def gather(x: Sym, idx: Sym, axis: int) -> Sym:
    """np.take(x, idx, axis) for indices in 0..dim-1."""
    return bind(gather_p, x, idx, axis=int(axis))


def scatter_add(x: Sym, idx: Sym, axis: int, size: int) -> Sym:
    """Zeros with `size` entries along `axis`, x's rows added at idx (np.add.at)."""
    return bind(scatter_add_p, x, idx, axis=int(axis), size=int(size))


def concatenate(xs, axis: int) -> Sym:
    xs = list(xs)
    if len(xs) == 1:
        return xs[0]
    return bind(concatenate_p, *xs, axis=int(axis))


def pad(x: Sym, pad_width, value=0) -> Sym:
    """x with `pad_width[i] = (before, after)` entries of `value` around axis i."""
    pad_width = tuple((int(lo), int(hi)) for lo, hi in pad_width)
    if all(p == (0, 0) for p in pad_width):
        return x
    return bind(pad_p, x, pad_width=pad_width, value=pad_value(value, x.dtype))


def pad_value(value, dtype):
    """The padding constant as a hashable Python scalar of `dtype`'s kind."""
    return np.asarray(value).astype(dtype).item()
