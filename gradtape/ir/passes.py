"""Small structural passes: dead-code elimination, output selection, and
turning already-computed values into inputs.

    dce({ a . b = exp a ; c = sin a -> c })   ==  { a . c = sin a -> c }
"""
from __future__ import annotations

from .core import Eqn, Function, Var

# op -> prune(eqn, used) -> (params, kept): the params of eqn computing only its outputs
# `kept` (indices, in order, including every index of `used`, the outputs read): an equation
# of several results (a cond, a scan's stacked outputs) whose unread outputs DCE drops.
prune_rules: dict = {}


def dce(fn: Function) -> Function:
    """Drop equations whose outputs nothing needs (every op is pure), and the unread outputs
    of an equation of several results whose op can drop them (`prune_rules`)."""
    live = {v for v in fn.outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(fn.eqns):
        if live.isdisjoint(eqn.outvars):
            continue
        if len(eqn.outvars) > 1 and eqn.op in prune_rules and not live.issuperset(eqn.outvars):
            used = [j for j, v in enumerate(eqn.outvars) if v in live]
            params, outs = prune_rules[eqn.op](eqn, used)
            if len(outs) < len(eqn.outvars):
                eqn = Eqn(eqn.op, eqn.inputs, params, [eqn.outvars[j] for j in outs])
        kept.append(eqn)
        live.update(eqn.inputs)  # Literals too, in C: they are never outputs, so never looked up
    kept.reverse()
    return Function(fn.invars, kept, fn.outvars)


def use_counts(fn: Function) -> dict:
    """Var -> how many equation inputs read it; a Function output counts twice (so that a
    pass fusing single-use values never fuses one away)."""
    uses = {}
    for eqn in fn.eqns:
        for a in eqn.inputs:
            if type(a) is Var:
                uses[a] = uses.get(a, 0) + 1
    for v in fn.outvars:
        if type(v) is Var:
            uses[v] = uses.get(v, 0) + 2
    return uses


def splice(fn: Function, replaced: dict, dropped: set) -> Function:
    """fn with the equation defining each key of `replaced` (a one-output equation) replaced
    by that list of equations, and the equations defining the Vars in `dropped` removed."""
    eqns = []
    for eqn in fn.eqns:
        out = eqn.outvars[0] if len(eqn.outvars) == 1 else None
        if out in replaced:
            eqns.extend(replaced[out])
        elif out not in dropped:
            eqns.append(eqn)
    return Function(fn.invars, eqns, fn.outvars)


def select_outputs(fn: Function, indices) -> Function:
    """Keep only the outputs at `indices` (then DCE)."""
    return dce(Function(fn.invars, fn.eqns, [fn.outvars[i] for i in indices]))


def inputs_from_known(fn: Function, known) -> tuple[Function, list]:
    """Make Vars whose values the caller already has into inputs.

    Equations that only compute `known` values are dropped; returns the new
    Function, whose invars are the original invars followed by the known
    Vars it still reads, and that list of Vars. This is how a tape's
    backward reuses the forward values it computed eagerly.
    """
    known = set(known) - set(fn.invars)
    eqns = [e for e in fn.eqns if not all(v in known for v in e.outvars)]
    fn = dce(Function(fn.invars, eqns, fn.outvars))
    used = []
    seen = set()
    for e in fn.eqns:
        for a in e.inputs:
            if isinstance(a, Var) and a in known and a not in seen:
                seen.add(a)
                used.append(a)
    for v in fn.outvars:
        if isinstance(v, Var) and v in known and v not in seen:
            seen.add(v)
            used.append(v)
    return Function(list(fn.invars) + used, fn.eqns, fn.outvars), used
