"""The adjoint (reverse-mode) pass: Function -> joint forward+backward Function.

    vjp({ a:f64[3] . b = sin a ; c = reduce_sum[axes=(0,)] b -> c }, wrt=[0])
    == { a:f64[3] d:f64[] . b = sin a ; c = reduce_sum b ;
         e = broadcast_to[shape=(3,)] d ; f = cos a ; g = mul e f -> (c, g) }

Cotangents are symbolic: a Var with no cotangent costs nothing, and only
equations on a path from the chosen inputs get a backward equation. Rules
build IR, so the result can be differentiated again by the same pass.

`where` masks: the cotangent `where(c, ct, 0)` of a branch is exactly zero
where the branch was not taken, so the pass carries that mask backwards
through elementwise ops and re-applies it after each rule. That turns the
0 * inf of `where(x > 0, log(x), 0)` at x = 0 into 0 rather than NaN.
"""
from __future__ import annotations

from . import config
from .builder import Builder, Sym
from .core import Function, Var
from .errors import IRError
from .op import multiple_results, rule, vjp_rules
from .ops.elementwise import logical_and, logical_not, logical_or, where, where_p
from .ops.layout import broadcast_to, unbroadcast
from .passes import dce
from .verify import verify


def active_vars(fn: Function, wrt_vars) -> set:
    """Vars that depend differentiably on `wrt_vars` (forward reachability)."""
    active = {v for v in wrt_vars if v.type.is_float}
    for eqn in fn.eqns:
        if not eqn.op.differentiable:
            continue
        if any(a in active for a in eqn.inputs if isinstance(a, Var)):
            active.update(v for v in eqn.outvars if v.type.is_float)
    return active


def zeros(b: Builder, type) -> Sym:
    return broadcast_to(b.literal(0, type.dtype), type.shape)


def vjp(fn: Function, wrt, origins: dict | None = None) -> tuple[Function, tuple]:
    """Build the joint function of `fn` and its vector-Jacobian product.

    Args:
      fn: the Function to differentiate.
      wrt: indices of the inputs to differentiate with respect to.

    Returns:
      `(joint, connected)`. `joint` takes fn's inputs followed by one
      cotangent per output of fn, and returns fn's outputs followed by one
      gradient per `wrt` input. `connected[i]` is False when nothing connects
      input `wrt[i]` to the outputs (its gradient is then an explicit zero).

    With `origins` (a dict), each output Var of an equation the adjoint adds
    is mapped to the Eqn of `fn` whose derivative rule wrote it (what
    `inspect --graph` uses to link a gradient's equations to a source line).
    """
    wrt = list(wrt)
    wrt_vars = [fn.invars[i] for i in wrt]
    active = active_vars(fn, wrt_vars)
    b = Builder()
    b.eqns = list(fn.eqns)
    ct_invars = [Var(v.type) for v in fn.outvars]
    cts: dict = {}
    masks: dict = {}  # Var -> bool Sym where its cotangent may be nonzero; None = anywhere

    def accumulate(v, c, m):
        if v in cts:
            cts[v] = cts[v] + c
            old = masks[v]
            masks[v] = None if old is None or m is None else logical_or(old, m)
        else:
            cts[v] = c
            masks[v] = m

    for ov, ct in zip(fn.outvars, ct_invars):
        if isinstance(ov, Var) and ov in active:
            accumulate(ov, Sym(ct, b), None)

    mark, previous = len(b.eqns), None
    for eqn in reversed(fn.eqns):
        if origins is not None:  # what the previous rule wrote is its equation's derivative
            _note_origins(origins, b.eqns, mark, previous)
            mark, previous = len(b.eqns), eqn
        out = eqn.outvars[0] if eqn.outvars else None
        ins = [Sym(a, b) for a in eqn.inputs]
        if eqn.op in multiple_results:
            # One rule for all the equation's outputs: the cotangent of each (None for none).
            if not any(v in cts for v in eqn.outvars):
                continue
            m = None
            for v in eqn.outvars:
                masks.pop(v, None)
            outs_cts = tuple(cts.pop(v, None) for v in eqn.outvars)
            in_cts = rule(vjp_rules, eqn.op, "VJP")(outs_cts, tuple(Sym(v, b) for v in eqn.outvars), *ins,
                                                    **eqn.params)
        else:
            if out not in cts:
                continue
            g, m = cts.pop(out), masks.pop(out)
            in_cts = rule(vjp_rules, eqn.op, "VJP")(g, Sym(out, b), *ins, **eqn.params)
        if len(in_cts) != len(ins):
            raise IRError(
                f"VJP rule of '{eqn.op.name}' returned {len(in_cts)} cotangents "
                f"for {len(ins)} operands"
            )
        elementwise = eqn.op.elementwise
        for a, c in zip(eqn.inputs, in_cts):
            if c is None or not isinstance(a, Var) or a not in active:
                continue
            new_mask = None
            if elementwise:
                if m is not None:
                    c = where(m, c, 0.0)
                branch_mask = _where_branch_mask(eqn, a, ins, out)
                full = a.type.shape == out.type.shape
                if full:
                    new_mask = _combine(m, branch_mask)
                    if new_mask is not None:
                        new_mask = broadcast_to(new_mask, out.type.shape)
                c = unbroadcast(c, a.type.shape)
            if c.type != a.type:
                raise IRError(
                    f"VJP rule of '{eqn.op.name}' returned a cotangent of type {c.type} "
                    f"for an operand of type {a.type}"
                )
            accumulate(a, c, new_mask)

    grads, connected = [], []
    if origins is not None:
        _note_origins(origins, b.eqns, mark, previous)
    for v in wrt_vars:
        if v in cts:
            grads.append(cts[v])
            connected.append(True)
        else:
            grads.append(zeros(b, v.type))
            connected.append(False)
    joint = dce(b.build(list(fn.invars) + ct_invars, list(fn.outvars) + grads))
    if config.checks:
        verify(joint)
    return joint, tuple(connected)


def _note_origins(origins: dict, eqns: list, start: int, eqn):
    if eqn is not None:
        for e in eqns[start:]:
            for v in e.outvars:
                origins[v] = eqn


def _where_branch_mask(eqn, a, ins, out):
    """For `where(c, x, y)`, the mask of the branch operand `a`, else None."""
    if eqn.op is not where_p:
        return None
    cond = ins[0]
    if a is eqn.inputs[1] and a is eqn.inputs[2]:
        return None  # where(c, x, x): x's cotangent is nonzero everywhere
    if a is eqn.inputs[1]:
        return cond
    if a is eqn.inputs[2]:
        return logical_not(cond)
    return None


def _combine(m, branch):
    if m is None:
        return branch
    if branch is None:
        return m
    return logical_and(m, branch)
