"""Layout ops that move or replicate elements: broadcast_to, reshape, transpose.

All three are linear, so their JVP applies the op to the tangent and their
VJP is another layout op (or a reduce_sum, for broadcast_to).
"""
from __future__ import annotations

import numpy as np

from ..builder import Sym, bind
from ..errors import ShapeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ._helpers import lift_batched


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
    from .reduce import reduce_sum

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
    if int(np.prod(shape, dtype=np.int64)) != x.size or any(d < 0 for d in shape):
        raise ShapeError(f"reshape: cannot reshape {x} into shape {shape}")
    return x.with_shape(shape)


shape_rules[reshape_p] = _reshape_shape
impls[reshape_p] = lambda x, *, shape: np.reshape(x, shape)
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
