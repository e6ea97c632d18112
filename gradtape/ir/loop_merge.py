"""Merging scans: two scans over the same operands whose bodies share equations become one
loop, computing what each computed.

Reverse mode makes such pairs: the primal `scan[body=F]` and the scan stacking the
residuals, `scan[body=F']` where F' is F returning also the carries entering each step
(loops.py `_residual_body`): the same equations on the same inputs. Without this pass the
forward loop would run twice (once for the value, once for the residuals); with it, once.

Body equations are compared by identity: F' holds F's very Eqn and Var objects (passes that
derive a body, such as select_outputs and the tangent pass, keep them), so the same Var in
both bodies is the same value at every step, given the same operands. Two scans merge when
each input of the first body is an input of the second at a position of the same kind
(carry, xs or constant) fed by the same operand, and each carry of the first is updated by
the same Var in both; the merged body is the second's, plus the first's equations it lacks,
returning also the first's stacked ys it lacks.
"""
from __future__ import annotations

from .core import Eqn, Function, Literal, Var
from .ops.loops import scan_p


def merge_scans(fn: Function) -> Function:
    """fn with each pair of scans that compute from the same operands merged into one loop.

        { ... c, d = scan[body=F] a ; e, f = scan[body=F'] a ... }
     -> { ... e, f, d = scan[body=F' returning F's y too] a ... }    (c -> e)
    """
    scans = [i for i, e in enumerate(fn.eqns) if e.op is scan_p]
    if len(scans) < 2:
        return fn
    defined_at = {}
    for i, e in enumerate(fn.eqns):
        for v in e.outvars:
            defined_at[v] = i
    eqns = list(fn.eqns)
    subst = {}
    done = set()
    for i in scans:
        if i in done:
            continue
        for j in scans:
            if j == i or j in done:
                continue
            small, big = eqns[i], eqns[j]
            mapping = _covered(small, big)
            if mapping is None:
                continue
            at = min(i, j)  # where the merged loop runs: its operands (big's) must be ready
            if any(isinstance(a, Var) and defined_at.get(a, -1) >= at for a in big.inputs):
                continue
            merged, outs = _merged(small, big, mapping)
            subst.update((v, w) for v, w in zip(small.outvars, outs) if v is not w)
            eqns[at], eqns[max(i, j)] = merged, None
            for v in merged.outvars:
                defined_at[v] = at
            done.update((i, j))
            break
    if not done:
        return fn
    out = []
    for e in eqns:
        if e is None:
            continue
        inputs = tuple(subst.get(a, a) if isinstance(a, Var) else a for a in e.inputs)
        out.append(e if inputs == e.inputs else Eqn(e.op, inputs, e.params, e.outvars))
    outvars = [subst.get(v, v) if isinstance(v, Var) else v for v in fn.outvars]
    return Function(fn.invars, out, outvars)


def _merged(small: Eqn, big: Eqn, mapping):
    """The scan computing big's outputs and then small's ys that big lacks (mapping[k] None);
    and, per output of small, the Var of the merged equation holding it."""
    fs, fb = small.params["body"], big.params["body"]
    have = set(map(id, fb.eqns))
    extra = [k for k, m in enumerate(mapping) if m is None]
    body = Function(fb.invars, list(fb.eqns) + [e for e in fs.eqns if id(e) not in have],
                    list(fb.outvars) + [fs.outvars[k] for k in extra])
    outvars = list(big.outvars) + [small.outvars[k] for k in extra]
    merged = Eqn(scan_p, big.inputs, dict(big.params, body=body), outvars)
    outs = [small.outvars[k] if m is None else big.outvars[m] for k, m in enumerate(mapping)]
    return merged, outs


def _kind(i: int, p: dict) -> int:
    """0 for a carry input, 1 for an xs input, 2 for a constant."""
    return 0 if i < p["n_carry"] else 1 if i < p["n_carry"] + p["n_xs"] else 2


def _same_atom(a, b) -> bool:
    if isinstance(a, Literal) or isinstance(b, Literal):
        return (isinstance(a, Literal) and isinstance(b, Literal) and a.type == b.type
                and a.value.tobytes() == b.value.tobytes())
    return a is b


def _covered(small: Eqn, big: Eqn):
    """For each output of `small`, the output of `big` with its value (None for a y big does
    not return, which the merged loop adds); None if the two loops cannot be one."""
    ps, pb = small.params, big.params
    if ps["length"] != pb["length"] or ps["reverse"] != pb["reverse"]:
        return None
    fs, fb = ps["body"], pb["body"]
    if fs is fb and small.inputs == big.inputs:
        return None  # twins: CSE's business
    at = {v: q for q, v in enumerate(fb.invars)}
    for i, v in enumerate(fs.invars):
        q = at.get(v)
        if q is None or _kind(i, ps) != _kind(q, pb) or not _same_atom(small.inputs[i], big.inputs[q]):
            return None
        if i < ps["n_carry"] and fs.outvars[i] is not fb.outvars[q]:
            return None
    if not set(map(id, fs.eqns)) & set(map(id, fb.eqns)):
        return None  # nothing in common: one loop would save no work
    carries = {v: q for q, v in enumerate(fb.invars[:pb["n_carry"]])}
    ys = {}
    for p_out, v in enumerate(fb.outvars[pb["n_carry"]:], pb["n_carry"]):
        ys.setdefault(id(v), p_out)
    mapping = []
    for k, v in enumerate(fs.outvars):
        if k < ps["n_carry"]:
            mapping.append(carries[fs.invars[k]])
        else:
            mapping.append(ys.get(id(v)))
    return mapping
