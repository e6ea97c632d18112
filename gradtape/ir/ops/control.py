"""`cond`: one equation whose params hold one sub-Function per branch.

`cond[branches=(F0, F1, ...)] i xs...` evaluates the Function F_i on xs,
with the int32 scalar i clamped to [0, len(branches) - 1] (as JAX's switch
does), and has one output per output of the branches (an op of several
results, ir/op.py `multiple_results`): a construct with several output
leaves is one equation, whose chosen branch runs once for all of them.
gt.cond(pred, t, f) is branches=(f, t) indexed by pred. Any other integer index
is clamped in its own dtype before it is cast to int32 (`narrow_index`).

    { a:i32[] b:f64[3] . c:f64[3], d:f64[] = cond[branches=({ x . y = sin x ; z = sum y -> (y, z) },
                                                   { x . y = cos x ; z = sum y -> (y, z) })] a b -> (c, d) }

Derivatives are conds of the branches' derivatives, so higher orders need
nothing more: the JVP of a cond is one cond of the branches' JVPs giving
every output's tangent; the cotangents of all operands are one cond of the
branches' VJPs (each branch recomputes the forward values its backward
needs), reading the cotangents of the outputs that have one. Batching with
an unbatched index is a cond of the batched branches; a batched index
computes every branch and selects per batch element, as JAX does. The DCE
pass drops the outputs nobody reads from the branches (`prune`).
"""
from __future__ import annotations

import functools

import numpy as np

from ..adjoint import vjp, zeros
from ..batching import vmap
from ..builder import Sym, bind
from ..errors import ShapeError
from ..inline import inline
from ..interpret import eval_function
from ..op import batching_rules, impls, jvp_rules, multiple_results, new_op, shape_rules, vjp_rules
from ..passes import prune_rules, select_outputs
from ..tangent import jvp
from ..types import TensorType
from .call import _batched_fn
from .elementwise import cast, eq, maximum, minimum, where
from .layout import broadcast_to, reshape

__all__ = ["cond_p", "cond", "clamp_index", "checkpoint_p", "checkpoint"]

cond_p = new_op("cond", elementwise=False, can_fail_on_values=False, runs_code=True)
multiple_results.add(cond_p)

INDEX_DTYPE = np.dtype(np.int32)


def _shape(index, *types, branches):
    if not isinstance(branches, tuple) or not branches:
        raise ShapeError(f"cond: branches must be a nonempty tuple of Functions, got {branches!r}")
    if index.shape != () or index.dtype != INDEX_DTYPE:
        raise ShapeError(f"cond: the branch index must be an int32 scalar, got {index}")
    out = None
    for k, fn in enumerate(branches):
        want = fn.in_types
        if tuple(types) != want:
            got = ", ".join(map(str, types))
            raise ShapeError(f"cond: operands ({got}) do not match branch {k}'s inputs {want}")
        t = fn.out_types
        if out is None:
            out = t
        elif t != out:
            raise ShapeError(f"cond: branch {k} returns {', '.join(map(str, t))} but branch 0 returns "
                             f"{', '.join(map(str, out))}")
    return tuple(out)


def clamp_index(i, n: int) -> int:
    """The branch a (possibly out-of-range) index selects: clamped to [0, n - 1], as in JAX."""
    return int(min(max(int(i), 0), n - 1))


def _impl(index, *xs, branches):
    return eval_function(branches[clamp_index(index, len(branches))], list(xs))


@functools.lru_cache(maxsize=1024)
def _vjp_branches(branches, have: tuple, wrt: tuple):
    """Per branch, (xs..., the cotangents of the outputs `have`) -> the cotangents of the
    operands `wrt` (explicit zeros where the branch ignores one)."""
    out = []
    for fn in branches:
        part = select_outputs(fn, list(have))
        joint, _ = vjp(part, list(wrt))
        out.append(select_outputs(joint, list(range(len(have), len(have) + len(wrt)))))
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _jvp_branches(branches):
    """Per branch, (xs..., tangent per float operand) -> the tangents of the float outputs;
    those operands and outputs."""
    wrt = tuple(i for i, t in enumerate(branches[0].in_types) if t.is_float)
    n = len(branches[0].outvars)
    floats = tuple(j for j, t in enumerate(branches[0].out_types) if t.is_float)
    return tuple(select_outputs(jvp(fn, wrt)[0], [n + j for j in floats]) for fn in branches), wrt, floats


def _vjp(cts, outs, index, *xs, branches):
    have = tuple(j for j, c in enumerate(cts) if c is not None)
    wrt = tuple(k for k, x in enumerate(xs) if x.type.is_float)
    result = [None] * (1 + len(xs))
    if have and wrt:
        grads = cond(index, _vjp_branches(branches, have, wrt), *xs, *[cts[j] for j in have])
        for k, g in zip(wrt, grads):
            result[1 + k] = g
    return tuple(result)


def _jvp(ts, outs, index, *xs, branches):
    parts, wrt, floats = _jvp_branches(branches)
    if not floats:
        return (None,) * len(outs)
    tangents = [ts[1 + i] if ts[1 + i] is not None else zeros(outs[0].builder, xs[i].type) for i in wrt]
    result = [None] * len(outs)
    for j, t in zip(floats, cond(index, parts, *xs, *tangents)):
        result[j] = t
    return tuple(result)


@functools.lru_cache(maxsize=1024)
def _batched_branches(branches, batched: tuple, axis_size: int):
    return tuple(vmap(fn, [0 if bd else None for bd in batched], axis_size, 0) for fn in branches)


def _batch(axis_size, ins, batched, *, branches):
    index, xs = ins[0], ins[1:]
    fns = _batched_branches(branches, tuple(batched[1:]), axis_size)
    if not batched[0]:
        return cond(index, fns, *xs)
    # A batched index: every branch runs on the whole batch, each element keeps its own.
    b = index.builder
    outs = [[Sym(a, b) for a in inline(fn, b, [x.atom for x in xs])] for fn in fns]
    n = len(branches)
    clamped = minimum(maximum(index, 0), n - 1)
    results = []
    for j in range(len(outs[0])):
        shape = outs[0][j].shape
        lanes = broadcast_to(reshape(clamped, (axis_size,) + (1,) * (len(shape) - 1)), shape)
        result = outs[-1][j]
        for k in range(n - 2, -1, -1):
            result = where(eq(lanes, k), outs[k][j], result)
        results.append(result)
    return tuple(results)


def _prune(eqn, used):
    """eqn computing only the outputs `used` (indices): its branches keep what those need."""
    return {"branches": tuple(select_outputs(fn, list(used)) for fn in eqn.params["branches"])}, used


shape_rules[cond_p] = _shape
impls[cond_p] = _impl
vjp_rules[cond_p] = _vjp
jvp_rules[cond_p] = _jvp
batching_rules[cond_p] = _batch
prune_rules[cond_p] = _prune


def cond(index: Sym, branches: tuple, *xs: Sym) -> tuple:
    """Emit `cond[branches] index xs` (index an integer or bool scalar Sym): one Sym per branch output."""
    return bind(cond_p, narrow_index(index, len(branches)), *xs, branches=tuple(branches))


def narrow_index(index: Sym, n: int) -> Sym:
    """An integer or bool scalar index as cond's int32 one, selecting the branch it selects.

    The index is clamped to [0, n - 1] in its own dtype before the cast:
    casting first wraps, so 2**40 or a uint32 2**31 would select branch 0.
    """
    if index.dtype == INDEX_DTYPE or index.dtype.kind == "b":
        return index if index.dtype == INDEX_DTYPE else cast(index, INDEX_DTYPE)
    info = np.iinfo(index.dtype)
    if info.min < 0:
        index = maximum(index, index.builder.literal(np.zeros((), index.dtype)))
    if info.max > n - 1:
        index = minimum(index, index.builder.literal(np.asarray(n - 1, index.dtype)))
    return cast(index, INDEX_DTYPE)


def index_type() -> TensorType:
    return TensorType((), INDEX_DTYPE)


# --- checkpoint: a call whose derivatives recompute it -----------------------------------------
#
# `outs... = checkpoint[fn=F] xs` is F(xs), like `call`, but code generation does
# not inline it (it is one internal function, called like a branch), and its
# derivatives are checkpoints of F's derivatives, each computing F's forward
# values again inside itself: between the forward and the backward pass only
# F's operands are kept, never its intermediates. One equation with one output
# per output of F (an op of several results): F runs once for all of them, and
# its VJP is one checkpoint giving every operand's cotangent.

checkpoint_p = new_op("checkpoint", elementwise=False, can_fail_on_values=False, runs_code=True)
multiple_results.add(checkpoint_p)


def _checkpoint_shape(*types, fn):
    if tuple(types) != fn.in_types:
        got = ", ".join(map(str, types))
        raise ShapeError(f"checkpoint: operands ({got}) must match the sub-Function's inputs {fn.in_types}")
    return tuple(fn.out_types)


@functools.lru_cache(maxsize=1024)
def _checkpoint_vjp_part(fn, have: tuple):
    """(xs..., the cotangents of the outputs `have`) -> the cotangents of the connected float
    inputs; and those inputs."""
    wrt = [i for i, v in enumerate(fn.invars) if v.type.is_float]
    part = select_outputs(fn, list(have))
    joint, connected = vjp(part, wrt)
    kept = [k for k in range(len(wrt)) if connected[k]]
    return select_outputs(joint, [len(have) + k for k in kept]), tuple(wrt[k] for k in kept)


def _checkpoint_vjp(cts, outs, *xs, fn):
    have = tuple(j for j, c in enumerate(cts) if c is not None)
    part, wrt = _checkpoint_vjp_part(fn, have)
    result = [None] * len(xs)
    if wrt:
        for i, g in zip(wrt, checkpoint(part, *xs, *[cts[j] for j in have])):
            result[i] = g
    return tuple(result)


@functools.lru_cache(maxsize=1024)
def _checkpoint_jvp_part(fn):
    """(xs..., tangent per float input) -> the tangents of the float outputs; the float inputs
    and outputs."""
    wrt = tuple(i for i, v in enumerate(fn.invars) if v.type.is_float)
    floats = tuple(j for j, t in enumerate(fn.out_types) if t.is_float)
    n = len(fn.outvars)
    return select_outputs(jvp(fn, wrt)[0], [n + j for j in floats]), wrt, floats


def _checkpoint_jvp(ts, outs, *xs, fn):
    part, wrt, floats = _checkpoint_jvp_part(fn)
    if not floats:
        return (None,) * len(outs)
    tangents = [ts[i] if ts[i] is not None else zeros(outs[0].builder, xs[i].type) for i in wrt]
    result = [None] * len(outs)
    for j, t in zip(floats, checkpoint(part, *xs, *tangents)):
        result[j] = t
    return tuple(result)


shape_rules[checkpoint_p] = _checkpoint_shape
impls[checkpoint_p] = lambda *xs, fn: eval_function(fn, list(xs))
vjp_rules[checkpoint_p] = _checkpoint_vjp
jvp_rules[checkpoint_p] = _checkpoint_jvp
batching_rules[checkpoint_p] = lambda axis_size, ins, batched, *, fn: checkpoint(
    _batched_fn(fn, tuple(batched), axis_size), *ins)
prune_rules[checkpoint_p] = lambda eqn, used: ({"fn": select_outputs(eqn.params["fn"], list(used))}, used)


def checkpoint(fn, *xs: Sym) -> tuple:
    """Emit `checkpoint[fn] xs`: one Sym per output of fn."""
    return bind(checkpoint_p, *xs, fn=fn)
