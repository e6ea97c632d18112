"""Shared pieces of shape rules: broadcasting, dtype agreement, axis checks."""
from __future__ import annotations

import numpy as np

from ..errors import DTypeError, ShapeError
from ..types import TensorType


def broadcast_shapes(op, types) -> tuple:
    """NumPy's broadcast of the operands' shapes (pure Python: it runs per recorded op)."""
    shapes = [t.shape for t in types]
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            if d != out[i]:
                if out[i] == 1:
                    out[i] = d
                elif d != 1:
                    joined = " and ".join(str(s) for s in shapes)
                    raise ShapeError(
                        f"{op.name}: operands could not be broadcast together with shapes {joined}"
                    )
    return tuple(out)


def same_dtype(op, types):
    dtype = types[0].dtype
    for t in types[1:]:
        if t.dtype != dtype:
            got = ", ".join(str(t) for t in types)
            raise DTypeError(
                f"{op.name}: operands must have one dtype, got {got}; "
                "cast one of them (gradtape.cast or .astype) first"
            )
    return dtype


def require_float(op, t: TensorType):
    if t.dtype.kind != "f":
        raise DTypeError(
            f"{op.name}: expected a floating-point operand, got {t}; "
            "cast it with gradtape.cast(x, 'float64') first"
        )


def require_bool(op, t: TensorType, what="operand"):
    if t.dtype != np.bool_:
        raise DTypeError(f"{op.name}: expected a bool {what}, got {t}")


def check_axes(op, axes, ndim) -> tuple:
    """Axes must be sorted, unique and within 0..ndim-1 (front ends normalize them)."""
    axes = tuple(axes)
    if any(not (0 <= a < ndim) for a in axes) or list(axes) != sorted(set(axes)):
        raise ShapeError(
            f"{op.name}: axes {axes} are not sorted unique axes of a rank-{ndim} operand"
        )
    return axes


# --- batching rules: operands arrive with the batch axis leading (see op.py) ----------

def batched_rank(ins, batched) -> int:
    """The largest rank of the operands as one batch element sees them."""
    return max(x.ndim - int(bd) for x, bd in zip(ins, batched))


def lift_batched(x, rank: int):
    """A batched operand (B, *s) as (B, 1, ..., 1, *s) of batch-element rank `rank`.

    NumPy broadcasting aligns shapes from the right, so once every batched
    operand has the full rank after its batch axis, the unbatched operands
    broadcast against the batch elements as they are, with no copy.
    """
    from .layout import reshape

    missing = rank - (x.ndim - 1)
    if missing <= 0:
        return x
    return reshape(x, x.shape[:1] + (1,) * missing + x.shape[1:])


def broadcast_batched(x, axis_size: int):
    """An unbatched operand repeated along a leading batch axis (for ops that do not broadcast)."""
    from .layout import broadcast_to

    return broadcast_to(x, (axis_size,) + x.shape)


def all_batched(axis_size: int, ins, batched) -> list:
    """Every operand with a leading batch axis (unbatched ones broadcast)."""
    return [x if bd else broadcast_batched(x, axis_size) for x, bd in zip(ins, batched)]


def flat_indices(idx, lead: tuple, stride: int):
    """Batched indices (B, *I) into x's axes `lead + (indexed axis,)` flattened into one.

    `lead` is (B, *pre) when x is batched, or (1, *pre) when it is shared.
    The result, of shape (B, *pre, *I), is idx[b] plus the offset of row
    (b, *p) of the flattened axis, (flat index of (b, *p)) * stride, so a
    gather/scatter over that one axis stays within each (b, *p). Indices
    are widened to int64 when their dtype cannot hold the largest offset.
    """
    from .elementwise import add, cast
    from .layout import reshape

    n, pre, k = idx.shape[0], lead[1:], idx.ndim - 1
    count = int(np.prod(lead, dtype=np.int64))
    if count * stride > 0 and np.iinfo(idx.dtype).max < count * stride - 1:
        idx = cast(idx, np.int64)
    offsets = (np.arange(count, dtype=idx.dtype) * stride).reshape(lead + (1,) * k)
    lifted = reshape(idx, (n,) + (1,) * len(pre) + idx.shape[1:])
    return add(lifted, idx.builder.literal(offsets))
