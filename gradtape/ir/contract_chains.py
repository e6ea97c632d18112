"""Contraction order over whole chains: `contract(contract(a, b), c)` re-associated by cost.

    { a:f64[8,4] b:f64[26,4,9] c:f64[8,9] .
      d:f64[26,8,9] = contract[spec='nb,kbj->knj'] a b ;
      e:f64[26,8] = contract[spec='knj,nj->kn'] d c -> e }
 -> { ... f:f64[8,4,9] = contract[spec='nb,nj->nbj'] a c ;
      e:f64[26,8] = contract[spec='nbj,kbj->kn'] f b -> e }

A chain is a tree of `contract` equations whose inner results are each read
once, by the next contraction only: together they are one multi-operand
einsum, and the order the program happens to contract it in (left to right
as written, or as a transform such as the batching of a Jacobian's tangents
produced it) can cost far more than another order. Two einsums written one
after the other, batched over a Jacobian's 26 tangent directions, are the
case this pass was written for: `einsum('nb,bij->nij')` then
`einsum('nij,nj->ni')` makes a (26, n, 3, 3) intermediate, where contracting
the two per-point operands first makes an (n, 22, 3) one and leaves one
matrix product with n rows (see docs/performance.md).

The pass gives each chain's letters one global naming, finds the cheapest
pairwise order of its operands (exhaustively: chains have few operands;
longer ones are left alone) and rewrites the chain only when that order is
cheaper than the present one. Cost: the multiply-adds of each pairwise
product plus the elements of each intermediate it writes (memory traffic,
which the batched tangents make dominant), so an order that only ties on
multiply-adds but writes a smaller intermediate wins.

Values change only by the rounding of a different summation order; the
result is deterministic (the order depends on shapes alone).
"""
from __future__ import annotations

import math

from .core import Eqn, Function, Var
from .ops.contract import contract_p, parse_spec
from .passes import splice, use_counts
from .types import TensorType

MAX_OPERANDS = 7  # longer chains keep their order (the search is 3^k)
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def reorder_contractions(fn: Function) -> Function:
    """Rewrite every chain of single-use contractions in its cheapest pairwise order."""
    uses = use_counts(fn)
    defining = {}
    for eqn in fn.eqns:
        if eqn.op is contract_p:
            defining[eqn.outvars[0]] = eqn

    def absorbable(a):
        return type(a) is Var and a in defining and uses.get(a, 0) == 1

    readers = set()  # contractions read by another contraction of their chain
    for eqn in fn.eqns:
        if eqn.op is contract_p:
            readers.update(a for a in eqn.inputs if absorbable(a))
    replaced, dropped = {}, set()
    for eqn in fn.eqns:
        if eqn.op is not contract_p or eqn.outvars[0] in readers:
            continue
        chain = _Chain.of(eqn, defining, absorbable)
        if chain is None:
            continue
        new_eqns = chain.rewritten()
        if new_eqns is not None:
            replaced[eqn.outvars[0]] = new_eqns
            dropped.update(chain.inner)
    return splice(fn, replaced, dropped) if replaced else fn


class _RunTimeSize(Exception):
    """A size known only at run time (codegen/dynamic_sizes.py) in a chain."""


class _Chain:
    """One tree of contractions: its leaves (operands) with global letters, the root's output."""

    def __init__(self, root):
        self.root = root
        self.leaves = []  # (atom, letters)
        self.inner = set()  # the absorbed contractions' outputs
        self.size = {}  # global letter -> extent
        self.present = 0  # the cost of the order as written
        self._fresh = iter(_LETTERS)

    @classmethod
    def of(cls, root, defining, absorbable):
        la, lb, lo = parse_spec(root.params["spec"])
        if not any(absorbable(a) for a in root.inputs):
            return None
        chain = cls(root)
        try:
            out = "".join(next(chain._fresh) for _ in lo)
            chain._walk(root, out, defining, absorbable)
        except (StopIteration, _RunTimeSize):  # more than 26 letters, or a dynamic version's size
            return None
        if len(chain.leaves) > MAX_OPERANDS:
            return None
        chain.out = out
        return chain

    def _walk(self, eqn, out, defining, absorbable):
        """Name eqn's letters globally (its output's are `out`) and collect its leaves."""
        la, lb, lo = parse_spec(eqn.params["spec"])
        rename = dict(zip(lo, out))
        for c in la + lb:
            if c not in rename:
                rename[c] = next(self._fresh)
        for a, letters in zip(eqn.inputs, (la, lb)):
            if not all(type(d) is int for d in a.type.shape):
                raise _RunTimeSize  # its cost is unknown here: leave the chain as it is
            named = "".join(rename[c] for c in letters)
            self.size.update(zip(named, a.type.shape))
        step = _elements(self.size, {rename[c] for c in la + lb})  # multiply-adds
        self.present += step + (0 if eqn is self.root else _elements(self.size, out))
        for a, letters in zip(eqn.inputs, (la, lb)):
            named = "".join(rename[c] for c in letters)
            if absorbable(a):
                self.inner.add(a)
                self._walk(defining[a], named, defining, absorbable)
            else:
                self.leaves.append((a, named))

    def rewritten(self):
        """The chain's equations in its cheapest order, or None when the present one is as cheap."""
        labels = [letters for _, letters in self.leaves]
        cost, plan = _best_order(labels, self.out, self.size)
        if cost >= self.present:
            return None
        dtype = self.root.outvars[0].type.dtype
        eqns = []

        def emit(node):
            if isinstance(node, int):
                return self.leaves[node]
            (left, lleft), (right, lright) = emit(node[0]), emit(node[1])
            letters = node[2]
            if node is plan:
                outvar = self.root.outvars[0]
            else:
                outvar = Var(TensorType(tuple(self.size[c] for c in letters), dtype))
            eqns.append(Eqn(contract_p, (left, right), {"spec": f"{lleft},{lright}->{letters}"}, (outvar,)))
            return outvar, letters

        emit(plan)
        return eqns


def _elements(size, letters) -> int:
    return math.prod(size[c] for c in letters)


def _best_order(labels, out, size):
    """(cost, plan) of the cheapest pairwise contraction of operands with `labels` into `out`.

    A plan is a leaf index or (left plan, right plan, result letters). Dynamic programming
    over subsets: a subset's result keeps the letters some operand outside it or the
    output still needs, in the order they first appear in its operands.
    """
    k = len(labels)
    full = (1 << k) - 1
    letters_of = {}
    for mask in range(1, full + 1):
        seen = dict.fromkeys(c for i in range(k) if mask >> i & 1 for c in labels[i])
        letters_of[mask] = "".join(seen)
    needed_outside = {}
    for mask in range(1, full + 1):
        outside = set(out)
        for i in range(k):
            if not mask >> i & 1:
                outside.update(labels[i])
        needed_outside[mask] = outside
    best = {1 << i: (0, i) for i in range(k)}
    result = {1 << i: labels[i] for i in range(k)}  # the letters of each subset's contracted result
    for mask in sorted(range(1, full + 1), key=lambda m: bin(m).count("1")):
        if mask in best:
            continue
        keep = out if mask == full else "".join(c for c in letters_of[mask] if c in needed_outside[mask])
        written = 0 if mask == full else _elements(size, keep)
        result[mask] = keep
        choice = None
        sub = (mask - 1) & mask
        while sub:
            other = mask ^ sub
            if sub < other:  # each split once
                ca, pa = best[sub]
                cb, pb = best[other]
                cost = ca + cb + _elements(size, set(result[sub]) | set(result[other])) + written
                if choice is None or cost < choice[0]:
                    choice = (cost, (pa, pb, keep))
            sub = (sub - 1) & mask
        best[mask] = choice
    return best[full]


__all__ = ["reorder_contractions", "MAX_OPERANDS"]
