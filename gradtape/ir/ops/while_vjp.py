"""Reverse mode through `while`: one equation that runs the loop forward, pushing the
carries entering each step on a stack that grows at run time, then pops them
applying the body's VJP.

    gs... = while_vjp[cond=C, body=B, n_carry=c] carries... consts... cts...

`cts` are the cotangents of the loop's final float carries (positions fc,
in order); the outputs are the cotangents of the float carries and then
of the float constants (positions fc + fk): one equation of several
results (ir/op.py `multiple_results`), run once.

The gradient is exact whatever the trip count n (0, 1 or data-dependent),
and costs n body evaluations forward and n body VJPs backward; memory
grows with n, as a Python list of the carries would in the reference and
malloc'd blocks of each step's residuals (the values its VJP reads,
ir/ops/loops.py split_step_vjp) does in native code
(codegen/control_stack.py, which also runs the forward loop once for a
`while` and its `while_vjp` compiled together).

Its own derivatives are loops again, so higher orders need nothing more.
Write r(x, ct) = F'(x)^T ct for the loop F: x -> final carries, and G for
the loop's JVP (x, dx) -> (F(x), F'(x) dx) (a `while` equation):

- JVP: dr = F'(x)^T dct + (F''(x)[dx])^T ct, which is the x-part of
  while_vjp of G at (x, dx) with cotangents (dct, ct).
- VJP, given w: the cotangent of ct is F'(x) w, the tangent output of G at
  (x, w); that of x is (F''(x)[w])^T ct, the x-part of while_vjp of G at
  (x, w) with cotangents (0, ct).
- Batching: while_vjp of the batched loop (lanes that stop keep their
  carries, so their cotangents pass unchanged), every operand batched so
  that each lane gets its own constants' cotangents.
"""
from __future__ import annotations

import functools

import numpy as np

from ..adjoint import vjp, zeros
from ..builder import Builder, Sym, bind
from ..core import Function
from ..errors import ShapeError
from ..inline import inline
from ..interpret import eval_function
from ..op import batching_rules, impls, jvp_rules, multiple_results, new_op, shape_rules, vjp_rules
from .layout import broadcast_batched
from .while_loop import _batched_loop, _floats, _jvp_loop, while_loop, while_p

__all__ = ["while_vjp_p", "while_vjp", "out_of_memory"]

while_vjp_p = new_op("while_vjp", elementwise=False, can_fail_on_values=False, runs_code=True)
multiple_results.add(while_vjp_p)


def float_positions(body, n_carry: int):
    """The float carries (fc) and float constants (fk) of a loop body, by operand position."""
    ins = body.in_types
    return _floats(ins, range(n_carry)), _floats(ins, range(n_carry, len(ins)))


def _shape(*types, cond, body, n_carry):
    fc, fk = float_positions(body, n_carry)
    n_in = len(body.invars)
    if tuple(types[:n_in]) != body.in_types or tuple(types[:n_in]) != cond.in_types:
        raise ShapeError(f"while_vjp: operands {tuple(types[:n_in])} do not match the loop's inputs {body.in_types}")
    want = tuple(body.in_types[k] for k in fc)
    if tuple(types[n_in:]) != want:
        raise ShapeError(f"while_vjp: cotangents {tuple(types[n_in:])} must match the float carries {want}")
    return tuple(body.in_types[p] for p in fc + fk)


@functools.lru_cache(maxsize=1024)
def step_vjp(body, n_carry: int) -> Function:
    """One backward step: (carries, consts, ct of float carries, acc of float consts)
    -> (ct of the float carries entering the step, acc + ct of the float consts)."""
    fc, fk = float_positions(body, n_carry)
    ins, n_in = body.in_types, len(body.invars)
    joint, _ = vjp(body, fc + fk)
    b = Builder()
    xs = [b.input(t) for t in ins]
    ct = [b.input(ins[k]) for k in fc]
    acc = [b.input(ins[i]) for i in fk]
    ct_out = [ct[fc.index(j)] if j in fc else zeros(b, ins[j]) for j in range(n_carry)]
    results = [Sym(a, b) for a in inline(joint, b, [s.atom for s in xs + ct_out])]
    g = results[n_carry:]
    return b.build(xs + ct + acc, g[:len(fc)] + [a + r for a, r in zip(acc, g[len(fc):])])


def out_of_memory(steps: int, held: int, asked: int | None = None) -> MemoryError:
    """The error when the carries of `steps` iterations (`held` bytes) are all memory allows (here, and in
    native code through codegen/failures.py, which also knows the `asked` size that failed)."""
    growing = f"; growing it to {asked:,} bytes failed" if asked else ""
    return MemoryError(
        f"while_loop: out of memory after {steps:,} iterations: reverse mode keeps values of every iteration "
        f"for the backward pass ({held:,} bytes held{growing}); bound the number of iterations, make the "
        "carry smaller, or differentiate in forward mode (gt.jvp), which keeps no stack")


def _all_results(*operands, cond, body, n_carry):
    n_in = len(body.invars)
    carries, consts, ct = list(operands[:n_carry]), list(operands[n_carry:n_in]), list(operands[n_in:])
    stack = []
    try:
        while bool(eval_function(cond, carries + consts)[0]):
            stack.append(carries)
            carries = list(eval_function(body, carries + consts))
    except MemoryError:
        steps, frame = len(stack), sum(np.asarray(c).nbytes for c in carries)
        stack = None  # freed before the error is made
        raise out_of_memory(steps, steps * frame) from None
    fc, fk = float_positions(body, n_carry)
    acc = [np.zeros(body.in_types[i].shape, body.in_types[i].dtype) for i in fk]
    back = step_vjp(body, n_carry)
    while stack:
        results = eval_function(back, stack.pop() + consts + ct + acc)
        ct, acc = list(results[:len(fc)]), list(results[len(fc):])
    return [np.asarray(v) for v in ct + acc]


def _emit(cond, body, n_carry: int, operands, cts) -> list:
    """The cotangents of the float operands (fc + fk), from one equation."""
    return list(while_vjp(cond, body, n_carry, *operands, *cts))


def _tangent_loop_cts(cond, body, n_carry, operands, tangents, primal_ct, tangent_ct):
    """The x-part of while_vjp of the JVP loop G at (x, dx) with cotangents (primal_ct, tangent_ct)
    for its float carries (primal ones, then tangents): one per float operand of the loop."""
    g_cond, g_body, fc, fk = _jvp_loop(cond, body, n_carry)
    n_in = len(body.invars)
    carries, consts = operands[:n_carry], operands[n_carry:n_in]
    t_c, t_k = tangents[:len(fc)], tangents[len(fc):]
    g_operands = [*carries, *t_c, *consts, *t_k]
    g_fc, _ = float_positions(g_body, n_carry + len(fc))
    # G's float carries: the primal float carries (fc, in order), then every tangent
    assert len(g_fc) == 2 * len(fc)
    results = _emit(g_cond, g_body, n_carry + len(fc), g_operands, [*primal_ct, *tangent_ct])
    # G's float operands, in order: fc primal, fc tangents, fk primal, fk tangents
    return results[:len(fc)] + results[2 * len(fc):2 * len(fc) + len(fk)]


def _jvp(ts, outs, *operands, cond, body, n_carry):
    b = outs[0].builder
    fc, fk = float_positions(body, n_carry)
    n_in = len(body.invars)

    def tangent(i):
        return ts[i] if ts[i] is not None else zeros(b, operands[i].type)

    dx = [tangent(k) for k in fc] + [tangent(i) for i in fk]
    dct = [tangent(n_in + j) for j in range(len(fc))]
    ct = operands[n_in:]
    return tuple(_tangent_loop_cts(cond, body, n_carry, operands[:n_in], dx, dct, ct))


def _vjp(ws, outs, *operands, cond, body, n_carry):
    """The cotangents of (carries, consts, cts) given w = the cotangents of the outputs."""
    b = operands[0].builder
    fc, fk = float_positions(body, n_carry)
    n_in = len(body.invars)
    ins = body.in_types
    w = [ws[j] if ws[j] is not None else zeros(b, ins[p]) for j, p in enumerate(fc + fk)]
    g_cond, g_body, _, _ = _jvp_loop(cond, body, n_carry)
    carries, consts = operands[:n_carry], operands[n_carry:n_in]
    g_operands = [*carries, *w[:len(fc)], *consts, *w[len(fc):]]
    # the cotangent of ct is F'(x) w: G's tangent carries
    ct_of_ct = while_loop(g_cond, g_body, n_carry + len(fc), *g_operands)[n_carry:n_carry + len(fc)]
    ct = operands[n_in:]
    zero = [zeros(b, ins[k]) for k in fc]
    x_part = _tangent_loop_cts(cond, body, n_carry, operands[:n_in], w, zero, ct)
    out = [None] * len(operands)
    for j, p in enumerate(fc + fk):
        out[p] = x_part[j]
    for j in range(len(fc)):
        out[n_in + j] = ct_of_ct[j]
    return tuple(out)


def _batch(axis_size, ins, batched, *, cond, body, n_carry):
    n_in = len(body.invars)
    ins = [x if bd else broadcast_batched(x, axis_size) for x, bd in zip(ins, batched)]
    b_cond, b_body = _batched_loop(cond, body, n_carry, (True,) * (n_in - n_carry), axis_size)
    return while_vjp(b_cond, b_body, n_carry, *ins)


shape_rules[while_vjp_p] = _shape
impls[while_vjp_p] = _all_results
jvp_rules[while_vjp_p] = _jvp
vjp_rules[while_vjp_p] = _vjp
batching_rules[while_vjp_p] = _batch


def while_vjp(cond, body, n_carry: int, *operands: Sym) -> tuple:
    """Emit `while_vjp[cond, body, n_carry] carries consts cts` (see the module docstring)."""
    return bind(while_vjp_p, *operands, cond=cond, body=body, n_carry=int(n_carry))


# --- reverse mode through `while` --------------------------------------------------------------

def _while_vjp(cts, outs, *operands, cond, body, n_carry):
    """The cotangents of a while loop's operands given those of its final carries."""
    b = operands[0].builder
    fc, fk = float_positions(body, n_carry)
    ct = [cts[k] if cts[k] is not None else zeros(b, operands[k].type) for k in fc]
    results = _emit(cond, body, n_carry, operands, ct)
    out = [None] * len(operands)
    for r, p in zip(results, fc + fk):
        out[p] = r
    return tuple(out)


vjp_rules[while_p] = _while_vjp
