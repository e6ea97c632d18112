"""The tangent (forward-mode) pass: Function -> Function with JVP outputs.

    jvp({ a:f64[3] . b = sin a -> b }, wrt=[0])
    == { a:f64[3] c:f64[3] . b = sin a ; d = cos a ; e = mul c d -> (b, e) }

Absent tangents are symbolic zeros; only equations downstream of the chosen
inputs get tangent equations.
"""
from __future__ import annotations

from . import config
from .adjoint import zeros
from .builder import Builder, Sym
from .core import Function, Var
from .errors import IRError
from .op import jvp_rules, multiple_results, rule
from .passes import dce
from .verify import verify


def jvp(fn: Function, wrt) -> tuple[Function, tuple]:
    """Build fn together with its Jacobian-vector product.

    Returns `(joint, connected)`: `joint` takes fn's inputs followed by one
    tangent per `wrt` input, and returns fn's outputs followed by one output
    tangent per output (explicit zeros where `connected[i]` is False).
    """
    b = Builder()
    b.eqns = list(fn.eqns)
    wrt_vars = [fn.invars[i] for i in wrt]
    t_invars = [Var(v.type) for v in wrt_vars]
    tangents = {v: Sym(t, b) for v, t in zip(wrt_vars, t_invars) if v.type.is_float}
    for eqn in fn.eqns:
        ts = tuple(tangents.get(a) if isinstance(a, Var) else None for a in eqn.inputs)
        if all(t is None for t in ts) or not eqn.op.differentiable:
            continue
        if eqn.op in multiple_results:  # one rule, one tangent (or None) per output
            outs = tuple(Sym(v, b) for v in eqn.outvars)
            ins = [Sym(a, b) for a in eqn.inputs]
            for v, t in zip(eqn.outvars, rule(jvp_rules, eqn.op, "JVP")(ts, outs, *ins, **eqn.params)):
                if t is not None and v.type.is_float:
                    _check_tangent(eqn, v, t)
                    tangents[v] = t
            continue
        out = eqn.outvars[0]
        if not out.type.is_float:
            continue
        ins = [Sym(a, b) for a in eqn.inputs]
        t = rule(jvp_rules, eqn.op, "JVP")(ts, Sym(out, b), *ins, **eqn.params)
        if t is None:
            continue
        _check_tangent(eqn, out, t)
        tangents[out] = t
    outs, connected = [], []
    for v in fn.outvars:
        t = tangents.get(v) if isinstance(v, Var) else None
        connected.append(t is not None)
        outs.append(t if t is not None else zeros(b, v.type))
    joint = dce(b.build(list(fn.invars) + t_invars, list(fn.outvars) + outs))
    if config.checks:
        verify(joint)
    return joint, tuple(connected)


def _check_tangent(eqn, out, t):
    if t.type != out.type:
        raise IRError(
            f"JVP rule of '{eqn.op.name}' returned a tangent of type {t.type} "
            f"for an output of type {out.type}"
        )
