"""`scan`: a loop as one equation whose params hold the loop body, a sub-Function.

    finals..., stacked... = scan[body=F, length=n, reverse=r, n_carry=c, n_xs=m] carries... xs... consts...

runs `carries, y = F(carries, xs[i], consts)` for i in 0..n-1 (n-1..0 when
reversed), each xs operand having a leading axis of length n. F returns
the c new carries followed by the per-step outputs ys; the equation has
one output per output of F (an op of several results, ir/op.py
`multiple_results`): the final carries, then each y stacked over the
steps. So a loop with several results is one equation, run once, printed
once. The DCE pass drops the stacked ys nobody reads from the body
(`prune`). gt.scan and gt.fori_loop emit it.

Derivatives are scans again, so higher orders need nothing more:

- JVP: a scan of the body's JVP, whose carries and xs are the primal ones
  followed by their tangents.
- VJP: the values of each step that its VJP reads (the residuals: a
  sin's cosine, the carries entering it, ...; `split_step_vjp`) are stacked
  by a forward scan whose body also returns them; a backward scan, run
  the other way, carries the carries' cotangents and the accumulated
  cotangents of the constants, reads the stacked residuals, xs and the
  outputs' cotangents, and returns the xs' cotangents per step.
- Batching: a scan of the batched body, every carry batched, batched xs
  with the loop axis first.
"""
from __future__ import annotations

import functools

import numpy as np

from ..adjoint import vjp, zeros
from ..batching import move_axis, vmap
from ..builder import Builder, Sym, bind
from ..core import Function, Var
from ..errors import ShapeError
from ..inline import inline
from ..interpret import eval_function
from ..op import batching_rules, impls, jvp_rules, multiple_results, new_op, shape_rules, vjp_rules
from ..passes import dce, prune_rules, select_outputs
from ..tangent import jvp
from ..types import TensorType
from .layout import broadcast_batched

__all__ = ["scan_p", "scan"]

scan_p = new_op("scan", elementwise=False, can_fail_on_values=False, runs_code=True)
multiple_results.add(scan_p)


def _split(seq, n_carry, n_xs):
    seq = list(seq)
    return seq[:n_carry], seq[n_carry:n_carry + n_xs], seq[n_carry + n_xs:]


def stacked(t: TensorType, length: int) -> TensorType:
    return TensorType((length,) + tuple(t.shape), t.dtype)


def _shape(*types, body, length, reverse, n_carry, n_xs):
    ins = body.in_types
    if len(types) != len(ins):
        raise ShapeError(f"scan: the body takes {len(ins)} inputs, the equation has {len(types)} operands")
    carries, xs, consts = _split(types, n_carry, n_xs)
    for k, (t, want) in enumerate(zip(carries, ins[:n_carry])):
        if t != want:
            raise ShapeError(f"scan: carry {k} is {t} but the body takes {want}")
    for k, (t, want) in enumerate(zip(xs, ins[n_carry:n_carry + n_xs])):
        if t != stacked(want, length):
            raise ShapeError(f"scan: xs {k} is {t} but the body takes slices {want} of {length} steps")
    for k, (t, want) in enumerate(zip(consts, ins[n_carry + n_xs:])):
        if t != want:
            raise ShapeError(f"scan: constant {k} is {t} but the body takes {want}")
    for k in range(n_carry):
        if body.out_types[k] != ins[k]:
            raise ShapeError(f"scan: the body changes carry {k} from {ins[k]} to {body.out_types[k]}")
    return tuple(ins[:n_carry]) + tuple(stacked(t, length) for t in body.out_types[n_carry:])


def _all_results(*operands, body, length, reverse, n_carry, n_xs):
    """Every result of the loop, run once: the final carries, then each y stacked over the steps."""
    carries, xs, consts = _split(operands, n_carry, n_xs)
    ys = [np.empty((length,) + tuple(t.shape), t.dtype) for t in body.out_types[n_carry:]]
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        results = eval_function(body, carries + [x[i] for x in xs] + consts)
        carries = list(results[:n_carry])
        for y, r in zip(ys, results[n_carry:]):
            y[i] = r
    return [np.asarray(c) for c in carries] + ys


def _floats(types, indices):
    return [i for i in indices if types[i].is_float]


@functools.lru_cache(maxsize=1024)
def _jvp_body(body, n_carry: int, n_xs: int):
    """The body's JVP as a scan body: carries, then float carries' tangents; the same for xs,
    constants and outputs. Returns it with the float carries, xs, constants and ys."""
    ins, n_in, n_out = body.in_types, len(body.invars), len(body.outvars)
    wrt = tuple(_floats(ins, range(n_in)))
    joint, _ = jvp(body, wrt)
    t_of = dict(zip(wrt, joint.invars[n_in:]))
    fc = _floats(ins, range(n_carry))
    fx = _floats(ins, range(n_carry, n_carry + n_xs))
    fk = _floats(ins, range(n_carry + n_xs, n_in))
    fy = _floats(body.out_types, range(n_carry, n_out))
    v = joint.invars
    invars = (list(v[:n_carry]) + [t_of[k] for k in fc] + list(v[n_carry:n_carry + n_xs])
              + [t_of[i] for i in fx] + list(v[n_carry + n_xs:n_in]) + [t_of[i] for i in fk])
    o = joint.outvars
    outvars = (list(o[:n_carry]) + [o[n_out + k] for k in fc] + list(o[n_carry:n_out])
               + [o[n_out + j] for j in fy])
    return Function(invars, joint.eqns, outvars), fc, fx, fk, fy


def _jvp(ts, outs, *operands, body, length, reverse, n_carry, n_xs):
    """Every output's tangent, from one scan of the body's JVP."""
    fn, fc, fx, fk, fy = _jvp_body(body, n_carry, n_xs)
    if not fc and not fy:
        return (None,) * len(outs)
    b = outs[0].builder

    def tangent(i):
        return ts[i] if ts[i] is not None else zeros(b, operands[i].type)

    carries, xs, consts = _split(operands, n_carry, n_xs)
    n_y = len(body.outvars) - n_carry
    results = scan(fn, length, reverse, n_carry + len(fc), n_xs + len(fx),
                   *carries, *[tangent(k) for k in fc], *xs, *[tangent(i) for i in fx],
                   *consts, *[tangent(i) for i in fk])
    tangents = [None] * len(outs)
    for n, k in enumerate(fc):
        tangents[k] = results[n_carry + n]
    for n, j in enumerate(fy):
        tangents[j] = results[n_carry + len(fc) + n_y + n]
    return tuple(tangents)


@functools.lru_cache(maxsize=1024)
def split_step_vjp(body, n_carry: int, n_xs: int):
    """The body's VJP split at the cotangents (ir/partial_eval.py's idea, for one loop step):

      forward: (carries, x, consts) -> (the body's outputs, residuals...)
      backward: (ct_carries, acc_consts), (residuals..., x, ct_ys), consts
                  -> (ct of carries_in, acc_consts + ct of consts), ct of x

    over the float carries (fc), xs (fx), constants (fk) and ys (fy).

    The residuals are the values of a step that the backward step reads and that depend on
    the step's carries or x: the forward scan stacks them (the carries entering the step among
    them, when read), so the backward step does not compute the step again: a sin's cosine
    is computed once, forward, as JAX does. Values of the constants alone are recomputed by
    the backward step instead of stored per step. The forward body holds the body's own
    Eqn objects, so loop_merge.py merges it with the primal scan: one forward loop.
    Returns (forward, backward, n_residuals, fc, fx, fk, fy)."""
    ins, outs, n_in, n_out = body.in_types, body.out_types, len(body.invars), len(body.outvars)
    wrt = _floats(ins, range(n_in))
    joint, _ = vjp(body, wrt)
    fc = _floats(ins, range(n_carry))
    fx = _floats(ins, range(n_carry, n_carry + n_xs))
    fk = _floats(ins, range(n_carry + n_xs, n_in))
    fy = _floats(outs, range(n_carry, n_out))
    late = set(joint.invars[n_in:])  # the cotangents, and what depends on them
    per_step = set(joint.invars[:n_carry + n_xs])  # what depends on the carries or x
    for eqn in joint.eqns:
        if any(a in late for a in eqn.inputs if isinstance(a, Var)):
            late.update(eqn.outvars)
        elif any(a in per_step for a in eqn.inputs if isinstance(a, Var)):
            per_step.update(eqn.outvars)
    grads = list(joint.outvars[n_out:])
    stored = per_step - late - set(joint.invars[n_carry:n_carry + n_xs])  # x: read from xs instead
    back_eqns = [e for e in joint.eqns if not stored.issuperset(e.outvars)]
    back = dce(Function(list(joint.invars), back_eqns, grads))
    residuals, seen = [], set()
    for a in [a for e in back.eqns for a in e.inputs] + grads:
        if isinstance(a, Var) and a in stored and a not in seen:
            seen.add(a)
            residuals.append(a)
    forward = dce(Function(list(body.invars), [e for e in joint.eqns if e.outvars[0] not in late],
                           list(body.outvars) + residuals))
    # the carries entering the step depend on the step: the backward reads them as residuals
    later = Function(residuals + list(joint.invars[n_carry:]), back.eqns, grads)

    b = Builder()
    ct_c = [b.input(ins[k]) for k in fc]
    acc = [b.input(ins[i]) for i in fk]
    res = [b.input(v.type) for v in residuals]
    x = [b.input(t) for t in ins[n_carry:n_carry + n_xs]]
    ct_y = [b.input(outs[j]) for j in fy]
    consts = [b.input(t) for t in ins[n_carry + n_xs:]]
    ct_out = []
    for j in range(n_out):
        if j in fc:
            ct_out.append(ct_c[fc.index(j)])
        elif j in fy:
            ct_out.append(ct_y[fy.index(j)])
        else:
            ct_out.append(zeros(b, outs[j]))
    results = inline(later, b, [s.atom for s in res + x + consts + ct_out])
    g = dict(zip(wrt, (Sym(a, b) for a in results)))
    new_acc = [a + g[i] for a, i in zip(acc, fk)]
    fn = b.build(ct_c + acc + res + x + ct_y + consts, [g[k] for k in fc] + new_acc + [g[i] for i in fx])
    return forward, fn, len(residuals), fc, fx, fk, fy


def _vjp(cts, outs, *operands, body, length, reverse, n_carry, n_xs):
    """The cotangents of the operands given those of the loop's outputs (None for none): one
    loop stacking the residuals and one backward loop."""
    forward, fn, n_res, fc, fx, fk, fy = split_step_vjp(body, n_carry, n_xs)
    b = operands[0].builder
    carries, xs, consts = _split(operands, n_carry, n_xs)
    n_out = len(body.outvars)
    residuals = scan(forward, length, reverse, n_carry, n_xs, *operands)[n_out:n_out + n_res]
    ct_c = [cts[k] if cts[k] is not None else zeros(b, carries[k].type) for k in fc]
    ct_ys = [cts[j] if cts[j] is not None else zeros(b, stacked(body.out_types[j], length)) for j in fy]
    acc = [zeros(b, consts[i - n_carry - n_xs].type) for i in fk]
    bwd = (*ct_c, *acc, *residuals, *xs, *ct_ys, *consts)
    n_bc, n_bx = len(fc) + len(fk), n_res + n_xs + len(fy)
    back = scan(fn, length, not reverse, n_bc, n_bx, *bwd)
    out = [None] * len(operands)
    for k in fc:
        out[k] = back[fc.index(k)]
    for i in fk:
        out[i] = back[len(fc) + fk.index(i)]
    for i in fx:
        out[i] = back[n_bc + fx.index(i)]
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _batched_body(body, in_axes: tuple, axis_size: int):
    return vmap(body, list(in_axes), axis_size, 0)


def _batch(axis_size, ins, batched, *, body, length, reverse, n_carry, n_xs):
    carries, xs, consts = _split(ins, n_carry, n_xs)
    _, xb, kb = _split(batched, n_carry, n_xs)
    carries = [c if bd else broadcast_batched(c, axis_size) for c, bd in zip(carries, batched)]
    xs = [move_axis(x, 0, 1) if bd else x for x, bd in zip(xs, xb)]
    in_axes = (0,) * n_carry + tuple(0 if bd else None for bd in xb) + tuple(0 if bd else None for bd in kb)
    fn = _batched_body(body, in_axes, axis_size)
    r = scan(fn, length, reverse, n_carry, n_xs, *carries, *xs, *consts)
    return tuple(r[:n_carry]) + tuple(move_axis(y, 1, 0) for y in r[n_carry:])


def _prune(eqn, used):
    """eqn with only the stacked ys in `used` (every final carry stays: the loop needs them)."""
    n_carry = eqn.params["n_carry"]
    kept = list(range(n_carry)) + [j for j in used if j >= n_carry]
    return dict(eqn.params, body=select_outputs(eqn.params["body"], kept)), kept


shape_rules[scan_p] = _shape
impls[scan_p] = _all_results
prune_rules[scan_p] = _prune
vjp_rules[scan_p] = _vjp
jvp_rules[scan_p] = _jvp
batching_rules[scan_p] = _batch


def scan(body, length: int, reverse: bool, n_carry: int, n_xs: int, *operands: Sym) -> tuple:
    """Emit `scan[...] operands` (see the module docstring): one Sym per output."""
    return bind(scan_p, *operands, body=body, length=int(length), reverse=bool(reverse),
                n_carry=int(n_carry), n_xs=int(n_xs))
