"""Fusion: which values are stored in memory; all others are computed inline.

Every value of a non-fusable op (reductions, contract, scatter_add, ...) and
every output is stored; each stored value is the root of a kernel (a loop
nest). A fusable value (elementwise or layout op) is computed inside the
kernels that read it unless storing it is cheaper. Walking the equations
backwards, each value's uses are known before the value itself, and each use
records (root, same_index, reads):

    root        the kernel that evaluates the reader
    same_index  whether the reader reads it at the index the kernel is at
                (then reads in one kernel at one index cost one evaluation:
                code generation caches them)
    reads       how many element evaluations that use costs per call

The rule for a fusable value v of size n:

  - an operand of a contraction: store it (BLAS reads memory, so an inline
    value would be copied into the arena anyway, once per contraction:
    storing computes it once however many products and kernels read it);
  - all uses in one kernel at the same index: inline (computed once per
    element, however many readers: `y = exp(x); z = y * y + y` is one loop);
  - else if the uses read at most n elements in total (one use, through a
    slice or transpose, say): inline;
  - else if v's op is cheap and the uses read at most MAX_RECOMPUTE * n
    elements: inline (recompute an add rather than store and reload it);
  - else store it (an exp read by two kernels, or broadcast across rows).

Reads through an inlined value multiply, so a recomputed cheap value makes
its own operands' uses costlier and expensive producers end up stored.
"""
from __future__ import annotations

from ..ir import Var, ops
from .dynamic_sizes import at_least
from .rules import RULES

MAX_RECOMPUTE = 4
_REDUCE_OPS = (ops.reduce_sum_p, ops.reduce_prod_p, ops.reduce_max_p, ops.reduce_min_p)
_CONTRACT = "contract"  # the root of a use by a contraction: never fused into


def plan_storage(fn) -> set:
    """The Vars of `fn` (a Function without calls) that get a buffer."""
    shared: dict = {}
    stored = _plan(fn, {}, shared)
    if shared:  # inline those values into both kernels (see _shared_with_a_sum), then plan again
        stored = _plan(fn, {v: f for v, (r, f) in shared.items() if not _reaches(fn, r, f)}, {})
    return stored


def _plan(fn, inline: dict, shared: dict) -> set:
    """The stored Vars; values in `inline` are computed in the kernel they map to (and in any
    other reading them); `shared` collects values that _shared_with_a_sum finds."""
    outputs = {v for v in fn.outvars if isinstance(v, Var)}
    uses: dict = {}  # Var -> list of (root, same_index, reads)
    stored: set = set()
    full_sums: set = set()  # the roots of reductions of every axis
    for eqn in reversed(fn.eqns):
        v = eqn.out
        rule = RULES.get(eqn.op)
        if len(eqn.outvars) > 1:  # an equation of several results (a cond, a loop) stores them all
            for w in eqn.outvars:
                uses.pop(w, None)
            stored.update(eqn.outvars)
            if rule is not None:
                _record_operand_uses(eqn, rule, (v, True, v.type.size), uses)
            continue
        v_uses = uses.pop(v, [])
        if eqn.op in _REDUCE_OPS and not v.type.shape:
            full_sums.add(v)
        if v in outputs or rule is None or not rule.fusable or not v_uses:
            stored.add(v)
            info = (v, True, v.type.size)
        elif v in inline:
            info = (inline[v], True, v.type.size)
        else:
            info = _decide(v, rule.is_cheap(eqn), v_uses)
            if info is None:
                stored.add(v)
                info = (v, True, v.type.size)
                pair = _shared_with_a_sum(v, v_uses, full_sums, stored)
                if pair is not None:
                    shared[v] = pair
        if rule is not None:
            _record_operand_uses(eqn, rule, info, uses)
    return stored


def _shared_with_a_sum(v, v_uses, full_sums, stored):
    """(sum root, fill root) when v, read at the same index by a reduction of every axis of v's
    shape and by one stored value of v's shape, would be stored only for that: the two kernels
    then run as one loop (parallel_fill_reduce.py: value_and_grad of gt.sum(gt.sin(x) * x)
    reads sin(x) in the sum and in the gradient), where v inlined into both is computed once
    per element and never stored. Only for loops long enough to be split (UNIT_ELEMENTS)."""
    from .parallel import UNIT_ELEMENTS  # (fusion.py is imported before the pool's module)

    roots = {u[0] for u in v_uses}
    if len(roots) != 2 or not all(u[1] for u in v_uses) or not at_least(v.type.size, 2 * UNIT_ELEMENTS):
        return None
    sums = [r for r in roots if r in full_sums]
    fills = [r for r in roots if isinstance(r, Var) and r not in full_sums and r in stored]
    if len(sums) != 1 or len(fills) != 1 or fills[0].type.shape != v.type.shape:
        return None
    return sums[0], fills[0]


def _reaches(fn, source, target) -> bool:
    """Whether `target` is computed from `source` (then their kernels cannot run as one)."""
    reached = {source}
    for eqn in fn.eqns:
        if any(isinstance(a, Var) and a in reached for a in eqn.inputs):
            reached.update(eqn.outvars)
    return target in reached


def _decide(v, cheap: bool, v_uses):
    if any(u[0] == _CONTRACT for u in v_uses):
        return None
    size = max(v.type.size, 1)
    roots = {u[0] for u in v_uses}
    if len(roots) == 1 and all(u[1] for u in v_uses):
        return (next(iter(roots)), True, size)
    total = sum(u[2] for u in v_uses)
    root = next(iter(roots)) if len(roots) == 1 else None
    if at_least(size, total) or (cheap and at_least(MAX_RECOMPUTE * size, total)):  # (a dynamic size: as if large)
        return (root, False, total)
    return None


def _record_operand_uses(eqn, rule, info, uses):
    root, same, reads = info
    out = eqn.out
    kind = rule.kind
    for pos, a in enumerate(eqn.inputs):
        if not isinstance(a, Var):
            continue
        size = a.type.size
        if kind == "elementwise":
            use = (root, same and a.type.shape == out.type.shape, reads)
        elif kind == "layout":
            use = (root, False, reads)
        elif kind == "reduction":
            use = (out, True, size)
        elif kind == "per_operand":
            use = ((out, pos), True, size)
        elif kind == "scatter":
            use = (out, pos == 0, eqn.inputs[0].type.size)
        else:  # contract: read once, from memory
            use = (_CONTRACT, False, size)
        uses.setdefault(a, []).append(use)
