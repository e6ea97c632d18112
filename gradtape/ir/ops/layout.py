"""Layout ops that move or replicate elements: broadcast_to, reshape, transpose;
and reduce_sum, the transpose of broadcast_to.

All are linear, so their JVP applies the op to the tangent and their VJP is
the transposed op: broadcast_to and reduce_sum are each other's VJP, which
is why they are declared in one module. The helpers that batching rules use
to lift and repeat operands along the batch axis live here too, since they
are reshapes and broadcasts.
"""
from __future__ import annotations

import math

import numpy as np

from ..builder import Sym, bind
from ..errors import ShapeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ._helpers import kept_shape, reduction_batch_rule, reduction_shape_rule


def _linear_jvp(fn):
    return lambda ts, out, x, **params: fn(ts[0], **params)


# --- broadcast_to -----------------------------------------------------------------

broadcast_to_p = new_op("broadcast_to", elementwise=False, can_fail_on_values=False, runs_code=False,
                        data_movement=True)


def _broadcast_to_shape(x, *, shape):
    shape = tuple(shape)
    ok = len(shape) >= x.ndim and all(
        d == s or d == 1 for d, s in zip(x.shape[::-1], shape[::-1])
    )
    if not ok:
        raise ShapeError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    return x.with_shape(shape)


shape_rules[broadcast_to_p] = _broadcast_to_shape
impls[broadcast_to_p] = lambda x, *, shape: np.broadcast_to(x, shape)
vjp_rules[broadcast_to_p] = lambda ct, out, x, *, shape: (unbroadcast(ct, x.shape),)
jvp_rules[broadcast_to_p] = _linear_jvp(lambda t, shape: broadcast_to(t, shape))
# The operand's dims are right-aligned with `shape` after its batch axis.
batching_rules[broadcast_to_p] = lambda n, ins, batched, *, shape: broadcast_to(
    lift_batched(ins[0], len(shape)), (n,) + tuple(shape)
)


def broadcast_to(x: Sym, shape) -> Sym:
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return bind(broadcast_to_p, x, shape=shape)


def unbroadcast(ct: Sym, shape) -> Sym:
    """Sum a cotangent of a broadcast result back to the operand's `shape`."""
    shape = tuple(shape)
    if ct.shape == shape:
        return ct
    lead = ct.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and ct.shape[lead + i] != 1
    )
    summed = reduce_sum(ct, axes) if axes else ct
    return reshape(summed, shape)


# --- reshape ------------------------------------------------------------------------

reshape_p = new_op("reshape", elementwise=False, can_fail_on_values=False, runs_code=False,
                   data_movement=True)


def _reshape_shape(x, *, shape):
    shape = tuple(shape)
    # math.prod (exact) for ints: np.prod's dispatch cost more than the rest of the rule
    size = math.prod(shape) if all(d.__class__ is int for d in shape) else int(np.prod(shape, dtype=np.int64))
    if size != x.size or any(d < 0 for d in shape):
        raise ShapeError(f"reshape: cannot reshape {x} into shape {shape}")
    return x.with_shape(shape)


shape_rules[reshape_p] = _reshape_shape
# ndarray.reshape, what np.reshape calls after its dispatch: a long deferred recording runs these one by one
impls[reshape_p] = lambda x, *, shape: x.reshape(shape) if x.__class__ is np.ndarray else np.reshape(x, shape)
vjp_rules[reshape_p] = lambda ct, out, x, *, shape: (reshape(ct, x.shape),)
jvp_rules[reshape_p] = _linear_jvp(lambda t, shape: reshape(t, shape))
batching_rules[reshape_p] = lambda n, ins, batched, *, shape: reshape(ins[0], (n,) + tuple(shape))


def reshape(x: Sym, shape) -> Sym:
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return bind(reshape_p, x, shape=shape)


# --- transpose ----------------------------------------------------------------------

transpose_p = new_op("transpose", elementwise=False, can_fail_on_values=False, runs_code=False,
                     data_movement=True)


def _transpose_shape(x, *, perm):
    if sorted(perm) != list(range(x.ndim)):
        raise ShapeError(f"transpose: perm {perm} is not a permutation of the axes of {x}")
    return x.with_shape([x.shape[p] for p in perm])


shape_rules[transpose_p] = _transpose_shape
impls[transpose_p] = lambda x, *, perm: np.transpose(x, perm)
vjp_rules[transpose_p] = lambda ct, out, x, *, perm: (
    transpose(ct, tuple(int(i) for i in np.argsort(perm))),
)
jvp_rules[transpose_p] = _linear_jvp(lambda t, perm: transpose(t, perm))
batching_rules[transpose_p] = lambda n, ins, batched, *, perm: transpose(
    ins[0], (0,) + tuple(p + 1 for p in perm)
)


def transpose(x: Sym, perm) -> Sym:
    perm = tuple(int(p) for p in perm)
    if perm == tuple(range(x.ndim)):
        return x
    return bind(transpose_p, x, perm=perm)


# --- reduce_sum: the transpose of broadcast_to ---------------------------------------

reduce_sum_p = new_op("reduce_sum", elementwise=False, can_fail_on_values=False, runs_code=False)


shape_rules[reduce_sum_p] = reduction_shape_rule(reduce_sum_p)
impls[reduce_sum_p] = lambda x, *, axes: (np.add.reduce(x, axis=axes, dtype=x.dtype) if x.__class__ is np.ndarray
                                          else np.sum(x, axis=axes, dtype=x.dtype))  # np.sum's own call
vjp_rules[reduce_sum_p] = lambda ct, out, x, *, axes: (expand_reduced(ct, x.shape, axes),)
jvp_rules[reduce_sum_p] = lambda ts, out, x, *, axes: reduce_sum(ts[0], axes)
batching_rules[reduce_sum_p] = reduction_batch_rule(lambda x, axes: reduce_sum(x, axes))


def reduce_sum(x: Sym, axes) -> Sym:
    axes = tuple(sorted(int(a) for a in axes))
    if not axes:
        return x
    return bind(reduce_sum_p, x, axes=axes)


def expand_reduced(r: Sym, shape, axes) -> Sym:
    """Broadcast a reduced value back over the operand's full `shape`."""
    if tuple(axes) != tuple(range(len(axes))):  # NumPy broadcasting adds leading axes only
        r = reshape(r, kept_shape(shape, axes))
    return broadcast_to(r, shape)


# --- operands of batching rules: the batch axis leads (see op.py) ----------------------

def lift_batched(x, rank: int):
    """A batched operand (B, *s) as (B, 1, ..., 1, *s) of batch-element rank `rank`.

    NumPy broadcasting aligns shapes from the right, so once every batched
    operand has the full rank after its batch axis, the unbatched operands
    broadcast against the batch elements as they are, with no copy.
    """
    missing = rank - (x.ndim - 1)
    if missing <= 0:
        return x
    return reshape(x, x.shape[:1] + (1,) * missing + x.shape[1:])


def broadcast_batched(x, axis_size: int):
    """An unbatched operand repeated along a leading batch axis (for ops that do not broadcast)."""
    return broadcast_to(x, (axis_size,) + x.shape)


def all_batched(axis_size: int, ins, batched) -> list:
    """Every operand with a leading batch axis (unbatched ones broadcast)."""
    return [x if bd else broadcast_batched(x, axis_size) for x, bd in zip(ins, batched)]
