"""`scan`: a loop as one equation whose params hold the loop body, a sub-Function.

    scan[body=F, length=n, reverse=r, n_carry=c, n_xs=m, out=j] carries... xs... consts...

runs `carries, y = F(carries, xs[i], consts)` for i in 0..n-1 (n-1..0 when
reversed), each xs operand having a leading axis of length n. F returns
the c new carries followed by the per-step outputs ys; the equation's
value is F's output j: the final carry j (j < c) or output j stacked over
the steps (j >= c). A loop with several results is one equation per
result, all alike but for `out`: the interpreter and code generation run
such a group as one loop (ir/result_groups.py). gt.scan and gt.fori_loop
emit it.

Derivatives are scans again, so higher orders need nothing more:

- JVP: a scan of the body's JVP, whose carries and xs are the primal ones
  followed by their tangents.
- VJP: the carries entering each step (the residuals) are stacked by a
  forward scan whose body also returns its input carries; a backward scan,
  run the other way, carries the carries' cotangents and the accumulated
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
from ..core import Function
from ..errors import ShapeError
from ..inline import inline
from ..interpret import eval_function
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..result_groups import all_results, group_vjp_rules
from ..tangent import jvp
from ..types import TensorType
from .layout import broadcast_batched

__all__ = ["scan_p", "scan"]

scan_p = new_op("scan", elementwise=False, can_fail_on_values=False, runs_code=True)


def _split(seq, n_carry, n_xs):
    seq = list(seq)
    return seq[:n_carry], seq[n_carry:n_carry + n_xs], seq[n_carry + n_xs:]


def stacked(t: TensorType, length: int) -> TensorType:
    return TensorType((length,) + tuple(t.shape), t.dtype)


def _shape(*types, body, length, reverse, n_carry, n_xs, out):
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
    if not 0 <= out < len(body.outvars):
        raise ShapeError(f"scan: out={out} but the body has {len(body.outvars)} outputs")
    return ins[out] if out < n_carry else stacked(body.out_types[out], length)


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


def _impl(*operands, out, **params):
    return _all_results(*operands, **params)[out]


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


def _jvp(ts, out_sym, *operands, body, length, reverse, n_carry, n_xs, out):
    if not body.out_types[out].is_float:
        return None
    fn, fc, fx, fk, fy = _jvp_body(body, n_carry, n_xs)
    b = out_sym.builder

    def tangent(i):
        return ts[i] if ts[i] is not None else zeros(b, operands[i].type)

    carries, xs, consts = _split(operands, n_carry, n_xs)
    n_y = len(body.outvars) - n_carry
    new_out = n_carry + fc.index(out) if out < n_carry else n_carry + len(fc) + n_y + fy.index(out)
    return scan(fn, length, reverse, n_carry + len(fc), n_xs + len(fx), new_out,
                *carries, *[tangent(k) for k in fc], *xs, *[tangent(i) for i in fx],
                *consts, *[tangent(i) for i in fk])


@functools.lru_cache(maxsize=1024)
def _residual_body(body, n_carry: int):
    """The body returning, after its own outputs, the carries it was given."""
    return Function(body.invars, body.eqns, list(body.outvars) + list(body.invars[:n_carry]))


@functools.lru_cache(maxsize=1024)
def _vjp_body(body, n_carry: int, n_xs: int):
    """The backward scan's body:

        (ct_carries, acc_consts), (carries_in, x, ct_ys), consts
            -> (ct of carries_in, acc_consts + ct of consts), ct of x

    over the float carries (fc), xs (fx), constants (fk) and ys (fy)."""
    ins, outs, n_in, n_out = body.in_types, body.out_types, len(body.invars), len(body.outvars)
    wrt = _floats(ins, range(n_in))
    joint, _ = vjp(body, wrt)
    fc = _floats(ins, range(n_carry))
    fx = _floats(ins, range(n_carry, n_carry + n_xs))
    fk = _floats(ins, range(n_carry + n_xs, n_in))
    fy = _floats(outs, range(n_carry, n_out))
    b = Builder()
    ct_c = [b.input(ins[k]) for k in fc]
    acc = [b.input(ins[i]) for i in fk]
    c_in = [b.input(t) for t in ins[:n_carry]]
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
    results = inline(joint, b, [s.atom for s in c_in + x + consts + ct_out])
    g = dict(zip(wrt, (Sym(a, b) for a in results[n_out:])))
    new_acc = [a + g[i] for a, i in zip(acc, fk)]
    fn = b.build(ct_c + acc + c_in + x + ct_y + consts, [g[k] for k in fc] + new_acc + [g[i] for i in fx])
    return fn, fc, fx, fk, fy


def _group_vjp(cts, *operands, body, length, reverse, n_carry, n_xs):
    """The cotangents of the operands given those of the loop's results ({out: Sym}): one
    loop stacking the residuals and one backward loop, however many results have one."""
    fn, fc, fx, fk, fy = _vjp_body(body, n_carry, n_xs)
    b = operands[0].builder
    carries, xs, consts = _split(operands, n_carry, n_xs)
    n_out = len(body.outvars)
    aug = _residual_body(body, n_carry)
    residuals = [scan(aug, length, reverse, n_carry, n_xs, n_out + k, *operands) for k in range(n_carry)]
    ct_c = [cts[k] if k in cts else zeros(b, carries[k].type) for k in fc]
    ct_ys = [cts[j] if j in cts else zeros(b, stacked(body.out_types[j], length)) for j in fy]
    acc = [zeros(b, consts[i - n_carry - n_xs].type) for i in fk]
    bwd = (*ct_c, *acc, *residuals, *xs, *ct_ys, *consts)
    n_bc, n_bx = len(fc) + len(fk), n_carry + n_xs + len(fy)

    def backward(j):
        return scan(fn, length, not reverse, n_bc, n_bx, j, *bwd)

    out = [None] * len(operands)
    for k in fc:
        out[k] = backward(fc.index(k))
    for i in fk:
        out[i] = backward(len(fc) + fk.index(i))
    for i in fx:
        out[i] = backward(n_bc + fx.index(i))
    return tuple(out)


def _vjp(ct, out_sym, *operands, out, **params):
    return _group_vjp({out: ct}, *operands, **params)


@functools.lru_cache(maxsize=1024)
def _batched_body(body, in_axes: tuple, axis_size: int):
    return vmap(body, list(in_axes), axis_size, 0)


def _batch(axis_size, ins, batched, *, body, length, reverse, n_carry, n_xs, out):
    carries, xs, consts = _split(ins, n_carry, n_xs)
    _, xb, kb = _split(batched, n_carry, n_xs)
    carries = [c if bd else broadcast_batched(c, axis_size) for c, bd in zip(carries, batched)]
    xs = [move_axis(x, 0, 1) if bd else x for x, bd in zip(xs, xb)]
    in_axes = (0,) * n_carry + tuple(0 if bd else None for bd in xb) + tuple(0 if bd else None for bd in kb)
    fn = _batched_body(body, in_axes, axis_size)
    r = scan(fn, length, reverse, n_carry, n_xs, out, *carries, *xs, *consts)
    return r if out < n_carry else move_axis(r, 1, 0)


shape_rules[scan_p] = _shape
impls[scan_p] = _impl
all_results[scan_p] = _all_results
group_vjp_rules[scan_p] = _group_vjp
vjp_rules[scan_p] = _vjp
jvp_rules[scan_p] = _jvp
batching_rules[scan_p] = _batch


def scan(body, length: int, reverse: bool, n_carry: int, n_xs: int, out: int, *operands: Sym) -> Sym:
    """Emit `scan[...] operands` (see the module docstring)."""
    return bind(scan_p, *operands, body=body, length=int(length), reverse=bool(reverse),
                n_carry=int(n_carry), n_xs=int(n_xs), out=int(out))
