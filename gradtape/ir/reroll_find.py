"""Finding what a Python loop left in a Function: stretches of equations repeated with a period.

Each equation gets a signature id: its op, its params and the types of its operands
and results, with the params that a loop may vary from one iteration to the next
left out (a slice's starts and stops: `x[i]`). Which operands an equation reads is
not part of it: that is for reroll_check.py to compare, block by block.

A loop of a p-equation body repeated k times is a stretch where the signature at j
equals the one at j - p. Candidate periods are the gaps between an equation and the
previous one of the same signature (a signature used once in the body repeats
exactly p later); for each gap seen often enough, the stretches where the sequence
repeats with that period are found by extending from the positions that had the
gap, each position read once per period tried. So the search costs about n times
the number of distinct gaps, never n² comparisons of equations.

    signatures:  a b c d  a b c d  a b c d  a b c d  e      (p = 4, k = 4)
    candidates:  [(start 0, period 4, trips 4)]
"""
from __future__ import annotations

from .core import Literal
from .ops.indexing import slice_p

# Params an iteration may vary, left out of the signature (reroll_check.py decides
# whether the values it finds make a loop).
VARYING_PARAMS = {slice_p: ("starts", "stops")}


def signatures(eqns) -> list:
    """One int per equation: equal ints for equations a loop body may repeat (see above).

    The results' types follow from the rest (the op's shape rule), so they are left out;
    each operand type counts by (shape, dtype), compared in C, looked up once per type object.
    """
    ids: dict = {}
    type_ids: dict = {}  # id(TensorType) -> (shape, dtype)
    out = []
    append = out.append
    for j, e in enumerate(eqns):
        params = e.params
        if params:
            left_out = VARYING_PARAMS.get(e.op)
            if left_out:
                params = tuple(sorted((k, v) for k, v in params.items() if k not in left_out))
            else:
                params = tuple(sorted(params.items()))
        else:
            params = ()
        key = [e.op, params]
        for a in e.inputs:
            t = a.type
            k = type_ids.get(id(t))
            if k is None:
                k = type_ids[id(t)] = (t.shape, t.dtype)
            key.append(k)
        key = tuple(key)
        try:
            sid = ids.get(key)
            if sid is None:
                sid = ids[key] = len(ids)
            append(sid)
        except TypeError:  # an unhashable param: an equation of its own
            append(-1 - j)
    return out


def candidates(seq, min_trips: int) -> list:
    """(start, period, trips) of each maximal stretch of `seq` repeating with some period at
    least `min_trips` times, largest first (by equations covered, then shorter period)."""
    n = len(seq)
    last: dict = {}
    by_gap: dict = {}
    for j, s in enumerate(seq):
        i = last.get(s)
        if i is not None and s >= 0:
            by_gap.setdefault(j - i, []).append(j)
        last[s] = j
    found = []
    for p, positions in by_gap.items():
        if len(positions) < min_trips - 1:
            continue
        covered = -1
        for j in positions:
            if j <= covered:
                continue
            a = j
            while a - 1 - p >= 0 and seq[a - 1] == seq[a - 1 - p] and seq[a - 1] >= 0:
                a -= 1
            b = j
            while b + 1 < n and seq[b + 1] == seq[b + 1 - p] and seq[b + 1] >= 0:
                b += 1
            covered = b
            trips = (b - a + 1 + p) // p  # the stretch a-p .. b repeats with period p
            if trips >= min_trips:
                found.append((a - p, p, trips))
    found.sort(key=lambda c: (-c[1] * c[2], c[1], c[0]))
    return found


def same_literal(a: Literal, b: Literal) -> bool:
    """Literals of the same type and bits (so -0.0 and 0.0, or two NaNs, stay apart)."""
    return a is b or (a.type == b.type and a.value.tobytes() == b.value.tobytes())
