"""Finding what a Python loop left in a Function: stretches of equations repeated with a period.

Each equation gets a signature id: its op, its params and the types of its operands
and results, with the params that a loop may vary from one iteration to the next
left out (a slice's starts and stops: `x[i]`). Which operands an equation reads is
not part of it: that is for reroll_check.py to compare, block by block.

A loop of a p-equation body repeated k times is a stretch where the signature at j
equals the one at j - p. Candidate periods are the gaps between a window of
signatures and the previous equal window, for windows of 1, 16, 256 and 4,096
equations (a signature used once in the body repeats exactly p later; a window as
long as the body does even when every signature in it recurs); for each gap seen
often enough, one comparison of the sequence with itself shifted by the gap gives
its stretches. Everything is a vector operation on the n signatures, about n times
the number of distinct gaps, never n² comparisons of equations.

    signatures:  a b c d  a b c d  a b c d  a b c d  e      (p = 4, k = 4)
    candidates:  [(start 0, period 4, trips 4)]
"""
from __future__ import annotations

import numpy as np

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
    param_keys: dict = {}  # id(params) -> its key (a tape's equations share their params dicts)
    out = []
    append = out.append
    for j, e in enumerate(eqns):
        params = e.params
        if params:
            pk = param_keys.get(id(params))
            if pk is None:
                left_out = VARYING_PARAMS.get(e.op)
                items = params.items()
                pk = param_keys[id(params)] = tuple(sorted(
                    (k, v) for k, v in items if k not in left_out) if left_out else sorted(items))
            params = pk
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
    ids = np.asarray(seq, dtype=np.int64)
    found = []
    for p in _periods(ids, min_trips):
        # match[t] says seq[t + p] == seq[t]; a stretch of (min_trips - 1) p matches from t = a
        # is a repeat of seq[a .. a + p - 1]
        match = (ids[p:] == ids[:-p]) & (ids[p:] >= 0)
        edges = np.diff(np.concatenate(([0], match.view(np.int8), [0])))
        starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        long = stops - starts >= (min_trips - 1) * p
        for a, length in zip(starts[long].tolist(), (stops - starts)[long].tolist()):
            found.append((a, p, (length + p) // p))
    found.sort(key=lambda c: (-c[1] * c[2], c[1], c[0]))
    return found


# Window lengths whose repeats give candidate periods. With windows of one equation, a
# body where every signature recurs (an inner loop: `m a t m a t m a t M`) shows only the
# inner gaps; a window as long as the body repeats only with the body's period.
_WINDOWS = (1, 16, 256, 4096)
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _periods(ids, min_trips) -> list:
    """The gaps p at which a window of signatures recurs at least min_trips - 1 times. A window
    is hashed (the sum of its signatures' pseudo-random weights, and of the weights times their
    place in it, modulo 2**64): equal windows hash alike, and a collision only proposes a
    period that `candidates` then finds no stretch for."""
    n = len(ids)
    with np.errstate(over="ignore"):
        w = (ids.astype(np.uint64) + np.uint64(n)) * _MIX
        w ^= w >> np.uint64(29)
        w *= _MIX
        s1 = np.concatenate(([np.uint64(0)], np.cumsum(w, dtype=np.uint64)))
        s2 = np.concatenate(([np.uint64(0)], np.cumsum(w * np.arange(n, dtype=np.uint64), dtype=np.uint64)))
        gaps = []
        for length in _WINDOWS:
            if length * min_trips > n:
                break
            a = np.arange(n - length + 1, dtype=np.uint64)
            total = s1[length:] - s1[:-length]
            window = (s2[length:] - s2[:-length] - a * total) * _MIX + total
            order = np.argsort(window, kind="stable")
            same = window[order[1:]] == window[order[:-1]]
            gaps.append(order[1:][same] - order[:-1][same])
    if not gaps:
        return []
    periods, counts = np.unique(np.concatenate(gaps), return_counts=True)
    return periods[counts >= min_trips - 1].tolist()


def same_literal(a: Literal, b: Literal) -> bool:
    """Literals of the same type and bits (so -0.0 and 0.0, or two NaNs, stay apart)."""
    return a is b or (a.type == b.type and a.value.tobytes() == b.value.tobytes())
