"""Equations that are one computation: the results of one loop.

The IR's equations have one output each, so a loop with several results
(a scan with a pytree carry, a while loop over a tuple) is one equation per
result: same op, same operands, same params but `out`. Evaluated one by
one they would run the loop once per result; the interpreter and code
generation instead evaluate such a group once, for every result the
Function uses. An op joins by registering `all_results[op]`, a reference
that takes the equation's operands and params (without `out`) and returns
every result, indexed by `out`. The adjoint pass likewise builds one
backward pass per group from `group_vjp_rules[op](cts, *operands,
**params)`, with `cts` the cotangents of the group's results ({out: Sym},
only those that have one), returning one cotangent (or None) per operand.

    { a . b = scan[..., out=0] a ; c = scan[..., out=1] a -> b c }    # one loop, two results
"""
from __future__ import annotations

import numpy as np

from .atoms import Var

all_results: dict = {}
group_vjp_rules: dict = {}


def group_key(eqn):
    """What the equations of one group share (None for an op that does not group)."""
    if eqn.op not in all_results:
        return None
    params = tuple(sorted(((k, v) for k, v in eqn.params.items() if k != "out"), key=lambda kv: kv[0]))
    ins = tuple(a if isinstance(a, Var) else (a.type, np.asarray(a.value).tobytes()) for a in eqn.inputs)
    return eqn.op, ins, params


def groups(eqns) -> dict:
    """group key -> {out: the output Var} over the grouping equations of `eqns`."""
    found: dict = {}
    for eqn in eqns:
        key = group_key(eqn)
        if key is not None:
            found.setdefault(key, {})[eqn.params["out"]] = eqn.out
    return found


def evaluate(eqn, values, memo: dict):
    """The value of `eqn` (of a grouping op), computing its group's results once per `memo`."""
    key = group_key(eqn)
    results = memo.get(key)
    if results is None:
        params = {k: v for k, v in eqn.params.items() if k != "out"}
        results = memo[key] = all_results[eqn.op](*values, **params)
    return results[eqn.params["out"]]
