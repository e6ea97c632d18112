"""Reductions over `axes` (a sorted tuple; the result drops those axes):
reduce_max, reduce_min, reduce_prod; and argmax/argmin over one `axis`
(int64 indices, not differentiable). reduce_sum, the transpose of
broadcast_to, is declared with it in layout.py and exported here too.

Front ends express `keepdims=True` as a reshape after the reduction.

    reduce_max[axes=(1,)] : f64[2,3] -> f64[2]
    argmax[axis=1]        : f64[2,3] -> i64[2]
"""
from __future__ import annotations

import numpy as np

from ..builder import Sym, bind
from ..errors import ShapeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ._helpers import ORDERING_REFUSAL, kept_shape, refuse_complex, reduced_shape, reduction_batch_rule, reduction_shape_rule
from .elementwise import cast, eq, where
from .layout import expand_reduced, reduce_sum, reduce_sum_p, reshape, transpose

__all__ = [
    "reduced_shape",
    "kept_shape",
    "expand_reduced",
    "reduce_sum_p",
    "reduce_sum",
    "reduce_max_p",
    "reduce_max",
    "reduce_min_p",
    "reduce_min",
    "reduce_prod_p",
    "reduce_prod",
    "argmax_p",
    "argmax",
    "argmin_p",
    "argmin",
    "prod_of_others",
]


def _arg_batch_rule(arg):
    return lambda n, ins, batched, *, axis: arg(ins[0], axis + 1)


# --- reduce_max, reduce_min -------------------------------------------------------

def _nonemptyreduction_shape_rule(op, what):
    """Like reduction_shape_rule, but reducing an axis of length 0 is an error (no identity)."""
    base = reduction_shape_rule(op)

    def shape_rule(x, *, axes):
        refuse_complex(op, x, ORDERING_REFUSAL)
        out = base(x, axes=axes)
        empty = [a for a in axes if x.shape[a] == 0]
        if empty:
            raise ShapeError(
                f"{op.name}: cannot take the {what} over axis {empty[0]} of {x}, which "
                "has length 0 (an empty reduction has no identity); reduce a "
                "non-empty array or over other axes"
            )
        return out

    return shape_rule


def _tie_weights(out: Sym, x: Sym, axes) -> Sym:
    """1/count where x equals the extreme of its group, else 0 (ties share equally)."""
    hit = cast(eq(x, expand_reduced(out, x.shape, axes)), x.dtype)
    return hit / expand_reduced(reduce_sum(hit, axes), x.shape, axes)


def _extreme_vjp(ct, out, x, *, axes):
    return (expand_reduced(ct, x.shape, axes) * _tie_weights(out, x, axes),)


def _extreme_jvp(ts, out, x, *, axes):
    return reduce_sum(ts[0] * _tie_weights(out, x, axes), axes)


reduce_max_p = new_op("reduce_max", elementwise=False, can_fail_on_values=False, runs_code=False)
shape_rules[reduce_max_p] = _nonemptyreduction_shape_rule(reduce_max_p, "maximum")
impls[reduce_max_p] = lambda x, *, axes: (np.maximum.reduce(x, axis=axes) if x.__class__ is np.ndarray
                                          else np.max(x, axis=axes))  # np.max's own call
vjp_rules[reduce_max_p] = _extreme_vjp
jvp_rules[reduce_max_p] = _extreme_jvp
batching_rules[reduce_max_p] = reduction_batch_rule(lambda x, axes: reduce_max(x, axes))

reduce_min_p = new_op("reduce_min", elementwise=False, can_fail_on_values=False, runs_code=False)
shape_rules[reduce_min_p] = _nonemptyreduction_shape_rule(reduce_min_p, "minimum")
impls[reduce_min_p] = lambda x, *, axes: np.min(x, axis=axes)
vjp_rules[reduce_min_p] = _extreme_vjp
jvp_rules[reduce_min_p] = _extreme_jvp
batching_rules[reduce_min_p] = reduction_batch_rule(lambda x, axes: reduce_min(x, axes))


def reduce_max(x: Sym, axes) -> Sym:
    axes = tuple(sorted(int(a) for a in axes))
    return x if not axes else bind(reduce_max_p, x, axes=axes)


def reduce_min(x: Sym, axes) -> Sym:
    axes = tuple(sorted(int(a) for a in axes))
    return x if not axes else bind(reduce_min_p, x, axes=axes)


# --- reduce_prod ----------------------------------------------------------------------

reduce_prod_p = new_op("reduce_prod", elementwise=False, can_fail_on_values=False, runs_code=False)


def prod_of_others(x: Sym, axes) -> Sym:
    """Each element of x replaced by the product of the *other* elements of its group.

    This is d reduce_prod(x) / dx. Dividing the product by x would fail where x
    is 0, so instead the k reduced elements of each group are laid out as a
    k x k matrix whose diagonal is replaced by 1, and each row is multiplied
    out with reduce_prod:

        x:(b, k) -> rows:(b, 1, k) -> where(eye:(k, k), 1, rows):(b, k, k)
                 -> reduce_prod[axes=(2,)]:(b, k)

    That costs O(k^2) per group, but it is exact with any number of zeros and
    is itself made of differentiable ops, so every order of derivative is
    exact too (the next order builds a k x k x k intermediate).
    """
    axes = tuple(axes)
    kept = tuple(i for i in range(x.ndim) if i not in axes)
    perm = kept + axes
    batch = tuple(x.shape[i] for i in kept)
    k = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    rows = reshape(transpose(x, perm), batch + (1, k))
    eye = x.builder.literal(np.eye(k, dtype=np.bool_))
    others = reduce_prod(where(eye, 1.0, rows), (len(batch) + 1,))
    others = reshape(others, tuple(x.shape[p] for p in perm))
    return transpose(others, tuple(int(i) for i in np.argsort(perm)))


shape_rules[reduce_prod_p] = reduction_shape_rule(reduce_prod_p)
impls[reduce_prod_p] = lambda x, *, axes: np.prod(x, axis=axes, dtype=np.asarray(x).dtype)
vjp_rules[reduce_prod_p] = lambda ct, out, x, *, axes: (
    expand_reduced(ct, x.shape, axes) * prod_of_others(x, axes),
)
jvp_rules[reduce_prod_p] = lambda ts, out, x, *, axes: reduce_sum(
    ts[0] * prod_of_others(x, axes), axes
)
batching_rules[reduce_prod_p] = reduction_batch_rule(lambda x, axes: reduce_prod(x, axes))


def reduce_prod(x: Sym, axes) -> Sym:
    axes = tuple(sorted(int(a) for a in axes))
    return x if not axes else bind(reduce_prod_p, x, axes=axes)


# --- argmax, argmin (int64 indices; no derivative) ------------------------------------

def _arg_shape(op, what):
    def shape_rule(x, *, axis):
        refuse_complex(op, x, ORDERING_REFUSAL)
        if not isinstance(axis, (int, np.integer)) or not 0 <= axis < x.ndim:
            raise ShapeError(
                f"{op.name}: axis {axis!r} is not an axis of a rank-{x.ndim} operand {x}"
            )
        if x.shape[axis] == 0:
            raise ShapeError(
                f"{op.name}: cannot take the index of the {what} over axis {axis} of "
                f"{x}, which has length 0"
            )
        shape = x.shape[:axis] + x.shape[axis + 1:]
        return x.with_shape(shape).with_dtype(np.int64)

    return shape_rule


argmax_p = new_op("argmax", elementwise=False, can_fail_on_values=False, runs_code=False,
                  differentiable=False)
shape_rules[argmax_p] = _arg_shape(argmax_p, "maximum")
impls[argmax_p] = lambda x, *, axis: np.argmax(x, axis=axis).astype(np.int64)
batching_rules[argmax_p] = _arg_batch_rule(lambda x, axis: argmax(x, axis))

argmin_p = new_op("argmin", elementwise=False, can_fail_on_values=False, runs_code=False,
                  differentiable=False)
shape_rules[argmin_p] = _arg_shape(argmin_p, "minimum")
impls[argmin_p] = lambda x, *, axis: np.argmin(x, axis=axis).astype(np.int64)
batching_rules[argmin_p] = _arg_batch_rule(lambda x, axis: argmin(x, axis))


def argmax(x: Sym, axis: int) -> Sym:
    return bind(argmax_p, x, axis=int(axis))


def argmin(x: Sym, axis: int) -> Sym:
    return bind(argmin_p, x, axis=int(axis))
