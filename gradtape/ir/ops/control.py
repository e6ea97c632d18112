"""`cond`: an equation whose params hold one sub-Function per branch.

`cond[branches=(F0, F1, ...)] i xs...` evaluates the single-output
Function F_i on xs, with the int32 scalar i clamped to [0, len(branches) - 1]
(as JAX's switch does). gt.cond(pred, t, f) is branches=(f, t) indexed by
pred. A construct with several outputs is one equation per output leaf,
each with branches that keep only what that output needs (as `call` does).

    { a:i32[] b:f64[3] . c:f64[3] = cond[branches=({ x . y = sin x -> y }, { x . y = cos x -> y })] a b -> c }

Derivatives are conds of the branches' derivatives, so higher orders need
nothing more: the JVP of a cond is a cond of the branches' JVPs, the
cotangent of operand k is a cond of the branches' VJPs (each branch
recomputes the forward values its backward needs). Batching with an
unbatched index is a cond of the batched branches; a batched index
computes every branch and selects per batch element, as JAX does.
"""
from __future__ import annotations

import functools

import numpy as np

from ..adjoint import vjp, zeros
from ..batching import vmap
from ..builder import Builder, Sym, bind
from ..core import Function
from ..errors import ShapeError
from ..inline import inline
from ..interpret import eval_function
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..passes import select_outputs
from ..tangent import jvp
from ..types import TensorType
from .call import _batched_fn, _jvp_part, _vjp_parts, call
from .elementwise import cast, eq, maximum, minimum, where
from .layout import broadcast_to, reshape

__all__ = ["cond_p", "cond", "clamp_index", "checkpoint_p", "checkpoint"]

cond_p = new_op("cond", elementwise=False, can_fail_on_values=False, runs_code=True)

INDEX_DTYPE = np.dtype(np.int32)


def _shape(index, *types, branches):
    if not isinstance(branches, tuple) or not branches:
        raise ShapeError(f"cond: branches must be a nonempty tuple of Functions, got {branches!r}")
    if index.shape != () or index.dtype != INDEX_DTYPE:
        raise ShapeError(f"cond: the branch index must be an int32 scalar, got {index}")
    out = None
    for k, fn in enumerate(branches):
        if len(fn.outvars) != 1:
            raise ShapeError(f"cond: branch {k} must have one output, it has {len(fn.outvars)}")
        want = fn.in_types
        if tuple(types) != want:
            got = ", ".join(map(str, types))
            raise ShapeError(f"cond: operands ({got}) do not match branch {k}'s inputs {want}")
        t = fn.out_types[0]
        if out is None:
            out = t
        elif t != out:
            raise ShapeError(f"cond: branch {k} returns {t} but branch 0 returns {out}")
    return out


def clamp_index(i, n: int) -> int:
    """The branch a (possibly out-of-range) index selects: clamped to [0, n - 1], as in JAX."""
    return int(min(max(int(i), 0), n - 1))


def _impl(index, *xs, branches):
    return eval_function(branches[clamp_index(index, len(branches))], list(xs))[0]


def _zeros_function(in_types, out_type) -> Function:
    b = Builder()
    ins = [b.input(t) for t in in_types]
    return b.build(ins, [zeros(b, out_type)])


@functools.lru_cache(maxsize=1024)
def _vjp_branches(branches, k: int):
    """Per branch, (xs..., ct) -> the cotangent of operand k (zeros where the branch ignores it)."""
    out = []
    for fn in branches:
        joint, connected = vjp(fn, [k])
        part = select_outputs(joint, [1]) if connected[0] else None
        out.append(part or _zeros_function(fn.in_types + fn.out_types, fn.in_types[k]))
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _jvp_branches(branches):
    """Per branch, (xs..., tangent per float operand) -> the output tangent; and those operands."""
    wrt = tuple(i for i, t in enumerate(branches[0].in_types) if t.is_float)
    return tuple(select_outputs(jvp(fn, wrt)[0], [1]) for fn in branches), wrt


def _vjp(ct, out, index, *xs, branches):
    cts = [None]
    for k, x in enumerate(xs):
        cts.append(cond(index, _vjp_branches(branches, k), *xs, ct) if x.type.is_float else None)
    return tuple(cts)


def _jvp(ts, out, index, *xs, branches):
    parts, wrt = _jvp_branches(branches)
    tangents = [ts[1 + i] if ts[1 + i] is not None else zeros(out.builder, xs[i].type) for i in wrt]
    return cond(index, parts, *xs, *tangents)


@functools.lru_cache(maxsize=1024)
def _batched_branches(branches, batched: tuple, axis_size: int):
    return tuple(vmap(fn, [0 if bd else None for bd in batched], axis_size, 0) for fn in branches)


def _batch(axis_size, ins, batched, *, branches):
    index, xs = ins[0], ins[1:]
    fns = _batched_branches(branches, tuple(batched[1:]), axis_size)
    if not batched[0]:
        return cond(index, fns, *xs)
    # A batched index: every branch runs on the whole batch, each element keeps its own.
    # Branches of no operands (a call needs one) are inlined: their vmap returns whole batches.
    b = index.builder
    outs = [call(fn, *xs) if xs else Sym(inline(fn, b, [])[0], b) for fn in fns]
    n = len(branches)
    clamped = minimum(maximum(index, 0), n - 1)
    shape = outs[0].shape
    lanes = broadcast_to(reshape(clamped, (axis_size,) + (1,) * (len(shape) - 1)), shape)
    result = outs[-1]
    for k in range(n - 2, -1, -1):
        result = where(eq(lanes, k), outs[k], result)
    return result


shape_rules[cond_p] = _shape
impls[cond_p] = _impl
vjp_rules[cond_p] = _vjp
jvp_rules[cond_p] = _jvp
batching_rules[cond_p] = _batch


def cond(index: Sym, branches: tuple, *xs: Sym) -> Sym:
    """Emit `cond[branches] index xs` (index an int32 scalar Sym, branches single-output Functions)."""
    if index.dtype != INDEX_DTYPE:
        index = cast(index, INDEX_DTYPE)
    return bind(cond_p, index, *xs, branches=tuple(branches))


def index_type() -> TensorType:
    return TensorType((), INDEX_DTYPE)


# --- checkpoint: a call whose derivatives recompute it -----------------------------------------
#
# `checkpoint[fn=F] xs` is F(xs), like `call`, but code generation does not
# inline it (it is one internal function, called like a branch), and its
# derivatives are checkpoints of F's derivatives, each computing F's
# forward values again inside itself: between the forward and the backward
# pass only F's operands are kept, never its intermediates.

checkpoint_p = new_op("checkpoint", elementwise=False, can_fail_on_values=False, runs_code=True)


def _checkpoint_shape(*types, fn):
    if len(fn.outvars) != 1 or tuple(types) != fn.in_types:
        got = ", ".join(map(str, types))
        raise ShapeError(f"checkpoint: operands ({got}) must match the sub-Function's inputs {fn.in_types} "
                         f"and it must have one output (it has {len(fn.outvars)})")
    return fn.out_types[0]


def _checkpoint_vjp(ct, out, *xs, fn):
    parts = _vjp_parts(fn)
    return tuple(checkpoint(parts[i], *xs, ct) if i in parts else None for i in range(len(xs)))


def _checkpoint_jvp(ts, out, *xs, fn):
    part, wrt = _jvp_part(fn)
    tangents = [ts[i] if ts[i] is not None else zeros(out.builder, xs[i].type) for i in wrt]
    return checkpoint(part, *xs, *tangents)


shape_rules[checkpoint_p] = _checkpoint_shape
impls[checkpoint_p] = lambda *xs, fn: eval_function(fn, list(xs))[0]
vjp_rules[checkpoint_p] = _checkpoint_vjp
jvp_rules[checkpoint_p] = _checkpoint_jvp
batching_rules[checkpoint_p] = lambda axis_size, ins, batched, *, fn: checkpoint(
    _batched_fn(fn, tuple(batched), axis_size), *ins)


def checkpoint(fn, *xs: Sym) -> Sym:
    return bind(checkpoint_p, *xs, fn=fn)
