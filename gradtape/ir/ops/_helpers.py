"""Shared pieces of shape and batching rules: broadcasting, dtype agreement, axis checks.

Nothing here emits an op, so every op module may import it."""
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


# The elementwise ops defined for complex operands (NumPy's meaning; derivatives by
# JAX's convention, docs/complex.md). Every other elementwise op refuses complex
# operands in its shape rule, so nothing computes a complex value as if it were real.
COMPLEX_OPS: set = set()


# Why ordering ops (lt, maximum, reduce_max, argmax, sort) refuse complex operands.
ORDERING_REFUSAL = (" (NumPy orders complex numbers lexicographically, which has no derivative; "
                    "compare np.real or np.abs instead)")


def refuse_complex(op, t: TensorType, what: str = ""):
    """A DTypeError naming the op, for a complex operand the op does not take."""
    if t.dtype.kind == "c":
        raise DTypeError(
            f"{op.name}: complex operands are not supported{what}, got {t}; "
            "take the real part (numpy.real) or the absolute value (numpy.abs) first"
        )


def require_float(op, t: TensorType):
    if t.dtype.kind == "c" and op in COMPLEX_OPS:
        return
    refuse_complex(op, t)
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


def reduced_shape(shape, axes) -> tuple:
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def kept_shape(shape, axes) -> tuple:
    """The shape with reduced axes kept as 1s (for broadcasting back)."""
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def reduction_shape_rule(op):
    """The shape rule of a reduction over `axes` (the result drops them)."""
    def shape_rule(x, *, axes):
        axes = check_axes(op, axes, x.ndim)
        return x.with_shape(reduced_shape(x.shape, axes))

    return shape_rule


def reduction_batch_rule(reduce):
    """The batch axis leads, so every reduced axis moves one place right."""
    return lambda n, ins, batched, *, axes: reduce(ins[0], tuple(a + 1 for a in axes))
