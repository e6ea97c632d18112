"""`call`: an equation whose params hold a sub-Function.

`call[fn=F] xs` evaluates the single-output Function F on xs. A
@differentiable function called on a tape is recorded as calls, one per
output (each F keeps only what its output needs). The derivative of a call
is a call of the sub-Function's derivative, so higher orders need nothing
more; code generation inlines calls.

    { a:f64[3] . b:f64[3] = call[fn={ a:f64[3] . b:f64[3] = sin a -> b }] a -> b }
"""
from __future__ import annotations

import functools

from ..adjoint import vjp, zeros
from ..batching import vmap
from ..builder import Sym, bind
from ..errors import ShapeError
from ..interpret import eval_function
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..passes import select_outputs
from ..tangent import jvp

__all__ = ["call_p", "call"]

call_p = new_op("call", elementwise=False, can_fail_on_values=False, runs_code=True, applies_fn=True)


def _shape(*types, fn):
    if len(fn.outvars) != 1:
        raise ShapeError(f"call: the sub-Function must have one output, it has {len(fn.outvars)}")
    want = tuple(v.type for v in fn.invars)
    if tuple(types) != want:
        got = ", ".join(map(str, types))
        raise ShapeError(f"call: operands ({got}) do not match the sub-Function's inputs {want}")
    return fn.outvars[0].type


def _impl(*xs, fn):
    return eval_function(fn, list(xs))[0]


@functools.lru_cache(maxsize=1024)
def _vjp_parts(fn):
    """One single-output Function per float input: (xs..., ct) -> gradient."""
    wrt = [i for i, v in enumerate(fn.invars) if v.type.is_float]
    joint, connected = vjp(fn, wrt)
    parts = {}
    for k, i in enumerate(wrt):
        if connected[k]:
            parts[i] = select_outputs(joint, [1 + k])
    return parts


@functools.lru_cache(maxsize=1024)
def _jvp_part(fn):
    """(xs..., tangent per float input) -> output tangent, and the float inputs."""
    wrt = tuple(i for i, v in enumerate(fn.invars) if v.type.is_float)
    joint, _ = jvp(fn, wrt)
    return select_outputs(joint, [1]), wrt


def _vjp(ct, out, *xs, fn):
    parts = _vjp_parts(fn)
    return tuple(
        call(parts[i], *xs, ct) if i in parts else None for i in range(len(xs))
    )


def _jvp(ts, out, *xs, fn):
    part, wrt = _jvp_part(fn)
    tangents = [ts[i] if ts[i] is not None else zeros(out.builder, xs[i].type) for i in wrt]
    return call(part, *xs, *tangents)


@functools.lru_cache(maxsize=1024)
def _batched_fn(fn, batched: tuple, axis_size: int):
    """fn vectorized over the leading axis of its batched inputs (the batching pass, recursively)."""
    return vmap(fn, [0 if bd else None for bd in batched], axis_size, 0)


def _batch(axis_size, ins, batched, *, fn):
    return call(_batched_fn(fn, tuple(batched), axis_size), *ins)


shape_rules[call_p] = _shape
impls[call_p] = _impl
vjp_rules[call_p] = _vjp
jvp_rules[call_p] = _jvp
batching_rules[call_p] = _batch


def call(fn, *xs: Sym) -> Sym:
    return bind(call_p, *xs, fn=fn)
