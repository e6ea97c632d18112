"""`while`: a loop whose trip count depends on values, as one equation.

    finals... = while[cond=C, body=B, n_carry=c] carries... consts...

runs `carries = B(carries, consts)` while `C(carries, consts)` (a bool
scalar) holds; its outputs are the final carries (an op of several
results, ir/op.py `multiple_results`: one equation, one loop). C and B
take the same inputs.

- JVP: a while loop of the body's JVP, carrying the float carries'
  tangents beside them; the condition reads the primal carries only.
- Batching: lanes stop at different steps, so the batched loop runs while
  any lane's condition holds, and a lane whose condition is false keeps
  its carries (a select per lane): each lane ends with its own result.
- VJP: exact, by a `while_vjp` equation (while_vjp.py, which registers
  the rule): the loop runs forward pushing the carries entering each step
  on a stack that grows at run time, then pops them applying the body's
  VJP; n steps cost n body evaluations and n body VJPs.
"""
from __future__ import annotations

import functools

import numpy as np

from ..adjoint import zeros
from ..batching import vmap
from ..builder import Builder, Sym, bind
from ..core import Function, Var
from ..errors import ShapeError
from ..inline import inline
from ..interpret import eval_function
from ..op import batching_rules, impls, jvp_rules, multiple_results, new_op, shape_rules
from ..tangent import jvp
from ..types import TensorType
from .elementwise import cast, gt, where
from .layout import broadcast_batched, broadcast_to, reduce_sum, reshape

__all__ = ["while_p", "while_loop"]

while_p = new_op("while", elementwise=False, can_fail_on_values=False, runs_code=True)
multiple_results.add(while_p)

BOOL = np.dtype(bool)
COUNT = np.dtype(np.int64)


def _shape(*types, cond, body, n_carry):
    if tuple(types) != cond.in_types or tuple(types) != body.in_types:
        got = ", ".join(map(str, types))
        raise ShapeError(f"while: operands ({got}) do not match the inputs of cond {cond.in_types} "
                         f"and body {body.in_types}")
    if cond.out_types != (TensorType((), BOOL),):
        raise ShapeError(f"while: cond must return one bool scalar, it returns {cond.out_types}")
    if body.out_types != tuple(types[:n_carry]):
        raise ShapeError(f"while: the body returns {body.out_types}, the carries are {tuple(types[:n_carry])}")
    return tuple(types[:n_carry])


def _all_results(*operands, cond, body, n_carry):
    carries, consts = list(operands[:n_carry]), list(operands[n_carry:])
    while bool(eval_function(cond, carries + consts)[0]):
        carries = list(eval_function(body, carries + consts))
    return [np.asarray(c) for c in carries]


def _floats(types, indices):
    return [i for i in indices if types[i].is_float]


def _with_inputs(fn: Function, invars) -> Function:
    """fn reading `invars`, a superset of its own inputs (the others are ignored)."""
    return Function(invars, fn.eqns, fn.outvars)


@functools.lru_cache(maxsize=1024)
def _jvp_loop(cond, body, n_carry: int):
    ins, n_in = body.in_types, len(body.invars)
    wrt = tuple(_floats(ins, range(n_in)))
    joint, _ = jvp(body, wrt)
    t_of = dict(zip(wrt, joint.invars[n_in:]))
    fc = _floats(ins, range(n_carry))
    fk = _floats(ins, range(n_carry, n_in))
    v = joint.invars
    invars = list(v[:n_carry]) + [t_of[k] for k in fc] + list(v[n_carry:n_in]) + [t_of[i] for i in fk]
    outvars = list(joint.outvars[:n_carry]) + [joint.outvars[n_carry + k] for k in fc]
    new_body = Function(invars, joint.eqns, outvars)
    c_ins = [Var(t) for t in new_body.in_types]
    # cond reads the primal carries and constants, at their new positions
    primal = c_ins[:n_carry] + c_ins[n_carry + len(fc):n_carry + len(fc) + n_in - n_carry]
    b = Builder()
    (pred,) = inline(cond, b, primal)
    new_cond = b.build(c_ins, [pred])
    return new_cond, new_body, fc, fk


def _jvp(ts, outs, *operands, cond, body, n_carry):
    """Every final carry's tangent, from one loop of the body's JVP."""
    new_cond, new_body, fc, fk = _jvp_loop(cond, body, n_carry)
    if not fc:
        return (None,) * len(outs)
    b = outs[0].builder

    def tangent(i):
        return ts[i] if ts[i] is not None else zeros(b, operands[i].type)

    carries, consts = operands[:n_carry], operands[n_carry:]
    results = while_loop(new_cond, new_body, n_carry + len(fc),
                         *carries, *[tangent(k) for k in fc], *consts, *[tangent(i) for i in fk])
    tangents = [None] * len(outs)
    for n, k in enumerate(fc):
        tangents[k] = results[n_carry + n]
    return tuple(tangents)


@functools.lru_cache(maxsize=1024)
def _batched_loop(cond, body, n_carry: int, const_batched: tuple, axis_size: int):
    in_axes = [0] * n_carry + [0 if bd else None for bd in const_batched]
    lanes_cond = vmap(cond, in_axes, axis_size, 0)
    lanes_body = vmap(body, in_axes, axis_size, 0)
    c = Builder()
    c_ins = [c.input(t) for t in lanes_cond.in_types]
    (lanes,) = [Sym(a, c) for a in inline(lanes_cond, c, [s.atom for s in c_ins])]
    any_lane = gt(reduce_sum(cast(lanes, COUNT), (0,)), 0)
    new_cond = c.build(c_ins, [any_lane])
    b = Builder()
    ins = [b.input(t) for t in lanes_body.in_types]
    (lanes,) = [Sym(a, b) for a in inline(lanes_cond, b, [s.atom for s in ins])]
    new = [Sym(a, b) for a in inline(lanes_body, b, [s.atom for s in ins])]
    kept = []
    for old, nv in zip(ins[:n_carry], new):
        mask = broadcast_to(reshape(lanes, (axis_size,) + (1,) * (old.ndim - 1)), old.shape)
        kept.append(where(mask, nv, old))
    return new_cond, b.build(ins, kept)


def _batch(axis_size, ins, batched, *, cond, body, n_carry):
    carries = [c if bd else broadcast_batched(c, axis_size) for c, bd in zip(ins[:n_carry], batched)]
    new_cond, new_body = _batched_loop(cond, body, n_carry, tuple(batched[n_carry:]), axis_size)
    return while_loop(new_cond, new_body, n_carry, *carries, *ins[n_carry:])


shape_rules[while_p] = _shape
impls[while_p] = _all_results
jvp_rules[while_p] = _jvp
batching_rules[while_p] = _batch


def while_loop(cond, body, n_carry: int, *operands: Sym) -> tuple:
    """Emit `while[cond, body, n_carry] operands` (see the module docstring): the final carries."""
    return bind(while_p, *operands, cond=cond, body=body, n_carry=int(n_carry))
