"""One input for the leaves a re-rolled loop reads one per iteration.

A Python loop on a tape that reads `x[t]` of a constant x records each row as a
constant leaf of its own, since operations on constants are not recorded. Re-rolled
(ir/reroll.py), the loop reads them as one scanned input, the rows joined:

    { l0 l1 ... lk-1 ... . r0 = reshape[shape=(1, 16)] l0 ; ... ; s = concatenate[axis=0] r0 ... rk-1 ; ... }

A backward plan would take k inputs and compile k copies. `stack_leaves` makes the
join one input instead, which the plan fills by stacking the k recorded arrays when
it runs (backward_plan.py):

 -> { s ... . ... }

`stack_leaf_rows` does it right after the re-roll (backward.BackwardParts), so that the
adjoint, the optimizer and the plan's bookkeeping see one input and no equation per
row: what they cost then depends on the loop's body, not on its length. The leaves
joined there are named by a `LeafStack`, which the plan and the uncached backward fill
by stacking the rows. A leaf differentiated is left out (its derivative is an output of
its own), and the plan joins what the adjoint left (a Jacobian's, a forward
accumulator's) with `stack_leaves` when it is built.
"""
from __future__ import annotations

from .. import ir
from ..ir.ops.indexing import concatenate_p
from ..ir.ops.layout import reshape_p


class LeafStack(tuple):
    """The leaves (Vars) one input of a backward function joins, in the order of its rows:
    the input is `np.stack` of their values."""

    __slots__ = ()


def stack_leaf_rows(fn: ir.Function, keep=()) -> tuple:
    """`(fn', leaves)`: fn (every input a leaf) with each join of one-row reshapes of leaves
    as one input, and per input of fn' its leaf Var or the LeafStack it joins. The leaves
    in `keep` (Vars: those differentiated) stay inputs of their own."""
    keep = {fn.invars.index(v) for v in keep}
    new, kept, stacks = stack_leaves(fn, len(fn.invars), keep)
    if not stacks:
        return fn, list(fn.invars)
    return new, [fn.invars[i] for i in kept] + [LeafStack(fn.invars[i] for i in s) for s in stacks]


def stack_leaves(fn: ir.Function, n_leaves: int, keep=frozenset()):
    """`(fn', kept, stacks)`: fn' takes fn's first `n_leaves` inputs at indices `kept`, then
    one input per join of leaves (`stacks[j]`: the indices of the leaves it joins, in
    order), then fn's other inputs; `stacks` is empty (and fn' is fn) when there is none.
    The leaves at the indices in `keep` are not joined."""
    leaf_at = {v: i for i, v in enumerate(fn.invars[:n_leaves]) if i not in keep}
    reads: dict = {}
    for e in fn.eqns:
        for a in e.inputs:
            reads[a] = reads.get(a, 0) + 1
    for v in fn.outvars:
        reads[v] = reads.get(v, 0) + 1
    row_of = {}  # one-row reshape of a leaf read only there -> the leaf's index
    stacks, joined, dropped = [], {}, set()
    for e in fn.eqns:
        if e.op is reshape_p:
            x = e.inputs[0]
            if x in leaf_at and reads[x] == 1 and e.outvars[0].type.shape == (1,) + x.type.shape:
                row_of[e.outvars[0]] = (leaf_at[x], e)
        elif e.op is concatenate_p and e.params["axis"] == 0 and len(e.inputs) > 1 and all(
                a in row_of and reads[a] == 1 for a in e.inputs):
            joined[e.outvars[0]] = ir.Var(e.outvars[0].type)
            stacks.append([row_of[a][0] for a in e.inputs])
            dropped.add(id(e))
            dropped.update(id(row_of[a][1]) for a in e.inputs)
    if not stacks:
        return fn, list(range(n_leaves)), []
    eqns = []
    for e in fn.eqns:
        if id(e) in dropped:
            continue
        if any(a in joined for a in e.inputs):
            e = ir.Eqn(e.op, [joined.get(a, a) for a in e.inputs], e.params, e.outvars)
        eqns.append(e)
    gone = {i for s in stacks for i in s}
    kept = [i for i in range(n_leaves) if i not in gone]
    invars = [fn.invars[i] for i in kept] + list(joined.values()) + list(fn.invars[n_leaves:])
    outvars = [joined.get(v, v) for v in fn.outvars]
    return ir.Function(invars, eqns, outvars), kept, stacks
