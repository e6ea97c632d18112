"""Gathers that are transposed afterwards gather from a transposed operand instead.

    { x:f64[26,1638] i:i64[800,3] .
      g:f64[26,800,3] = gather[axis=1] x i ; h = neg g ;
      o:f64[800,3,26] = transpose[perm=(1, 2, 0)] h -> o }
 -> { ... t:f64[1638,26] = transpose[perm=(1, 0)] x ;
      g:f64[800,3,26] = gather[axis=0] t i ; o = neg g -> o }

A forward-mode Jacobian batches its tangents on a leading axis and moves
that axis last at the end (blocks are `out.shape + in.shape`). When the
output is a gather of many rows (residuals of n points gathered from V
vertices), the final transpose moves every element of the large result; the
operand it was gathered from is small. Transposing the operand instead
makes the gather copy whole rows of the batch (26 contiguous values per
index), one kernel and no transpose of the large result. Elementwise ops
with scalar operands between the gather and the transpose (the residual's
negation) move with it.

Values are unchanged bit for bit (the same elements, moved differently).
"""
from __future__ import annotations

from .core import Eqn, Function, Var
from .ops.indexing import gather_p
from .ops.layout import transpose_p
from .passes import splice, use_counts
from .types import TensorType


def gather_before_transpose(fn: Function) -> Function:
    """Rewrite every `transpose(scalar elementwise ops(gather(x, i)))` that leads with the
    gathered axes as a gather of the transposed x, when x is no larger than the result."""
    uses = use_counts(fn)
    defining = {v: eqn for eqn in fn.eqns for v in eqn.outvars}
    replaced, dropped = {}, set()
    for eqn in fn.eqns:
        if eqn.op is not transpose_p:
            continue
        found = _pattern(eqn, defining, uses)
        if found is None:
            continue
        gather, chain = found
        replaced[eqn.outvars[0]] = _rewritten(eqn, gather, chain)
        dropped.update(e.outvars[0] for e in [gather] + chain)
    return splice(fn, replaced, dropped) if replaced else fn


def _scalar_elementwise(eqn, value) -> bool:
    """eqn is elementwise on `value` and on scalars only."""
    if not eqn.op.elementwise or len(eqn.outvars) != 1 or eqn.outvars[0].type.shape != value.type.shape:
        return False
    return all(a is value or a.type.shape == () for a in eqn.inputs) and sum(a is value for a in eqn.inputs) == 1


def _pattern(transpose, defining, uses):
    """(gather, [elementwise eqns from the gather up]) under `transpose`, or None."""
    chain = []
    value = transpose.inputs[0]
    while type(value) is Var and uses.get(value) == 1 and value in defining:
        eqn = defining[value]
        if eqn.op is gather_p:
            break
        inner = next((a for a in eqn.inputs if type(a) is Var and a.type.shape == value.type.shape), None)
        if inner is None or not _scalar_elementwise(eqn, inner):
            return None
        chain.append(eqn)
        value = inner
    else:
        return None
    gather = defining[value]
    x, idx = gather.inputs
    axis, rank = gather.params["axis"], len(idx.type.shape)
    perm = transpose.params["perm"]
    if tuple(perm[:rank]) != tuple(range(axis, axis + rank)) or axis == 0:
        return None  # the gathered axes do not lead (or already lead: nothing to gain)
    if type(x.type.size) is not int or type(value.type.size) is not int or x.type.size > value.type.size:
        return None  # a size known only at run time, or a result no larger than its operand
    chain.reverse()
    return gather, chain


def _rewritten(transpose, gather, chain) -> list:
    x, idx = gather.inputs
    axis, rank = gather.params["axis"], len(idx.type.shape)
    # the result's other axes, as axes of x (a gathered-result axis past the indices is x's axis - rank + 1)
    rest = [p if p < axis else p - rank + 1 for p in transpose.params["perm"][rank:]]
    x_perm = (axis, *rest)
    moved = Var(TensorType(tuple(x.type.shape[p] for p in x_perm), x.type.dtype))
    out_type = transpose.outvars[0].type
    eqns = [Eqn(transpose_p, (x,), {"perm": x_perm}, (moved,))]
    value = Var(TensorType(out_type.shape, gather.outvars[0].type.dtype)) if chain else transpose.outvars[0]
    eqns.append(Eqn(gather_p, (moved, idx), {"axis": 0}, (value,)))
    for k, eqn in enumerate(chain):
        last = k == len(chain) - 1
        out = transpose.outvars[0] if last else Var(TensorType(out_type.shape, eqn.outvars[0].type.dtype))
        inputs = tuple(value if a is _chain_input(eqn, chain, k, gather) else a for a in eqn.inputs)
        eqns.append(Eqn(eqn.op, inputs, eqn.params, (out,)))
        value = out
    return eqns


def _chain_input(eqn, chain, k, gather):
    """The Var eqn reads from the chain: the gather's result or the previous op's."""
    return gather.outvars[0] if k == 0 else chain[k - 1].outvars[0]


__all__ = ["gather_before_transpose"]
