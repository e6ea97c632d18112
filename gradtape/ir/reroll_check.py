"""Deciding whether repeated blocks of equations are iterations of one loop, and of which loop.

reroll_find.py gives stretches `start, period p, trips k` whose signatures repeat. Here
each operand of each block is classified against the block it sits in:

    ("in", r, o)      output o of equation r of the same block
    ("c", r, o)       output o of equation r of the previous block: a carry
    "o"               a Var defined before the stretch (or an input of the Function)
    "l"               a Literal
    "f"               a Var of an earlier block still: not a loop of one carry step

A block's classes form its fingerprint. Consecutive blocks with equal fingerprints,
plus the block before them when it reads its carries' initial values from outside,
are iterations of one loop, a `Run`, when in addition every operand outside the
blocks is one of:

- the same Var, or Literal of the same bits, at every iteration: a constant of the
  body (a closed-over weight, `0.5 * dt`);
- a different Var per iteration: a scanned input, stacked before the loop (reroll.py
  turns stacks of rows `x[i]` back into slices of x);
- a Literal that varies, read by an op whose result is the same whether the value is
  a constant or loaded (add, sub, mul, div, maximum, minimum): a scanned input holding
  the k values;

and every param that varies is a slice's start along one axis. Of a value defined
before the loop, the slices of every iteration are taken at once before it and
scanned: one slice when the start moves by a constant step and the slice is one
element wide (`x[i]`, `x[:, 2 * i]`, `reversed`), else a gather of each iteration's
indices (windows `x[i:i + 3]`, `x[i * i]`). Of a value computed in the loop (`h[i]` of
a carry), the slice becomes a gather whose indices are a scanned input. Anything else
(slices moving along two axes, a gather along one axis of a slice of the others, a
param that is not a slice's start, a varying literal of pow) keeps those iterations
unrolled.
"""
from __future__ import annotations

import numpy as np

from .core import Literal
from .ops.elementwise import add_p, div_p, maximum_p, minimum_p, mul_p, sub_p
from .ops.indexing import slice_p
from .reroll_find import VARYING_PARAMS, same_literal

# Ops whose result does not depend on whether an operand is a Literal or a loaded value
# (codegen treats a constant operand of pow, for one, by its own rules).
SCANNED_LITERAL_OPS = frozenset((add_p, sub_p, mul_p, div_p, maximum_p, minimum_p))

OUT, LIT, FAR = "o", "l", "f"


class Run:
    """k iterations of a p-equation body, ready to become one scan (reroll.py).

    start: index of the first equation of the first iteration; the iterations are
      the equations start .. start + k p - 1.
    slots[r][q]: how operand q of body equation r is read: ("in", r', o) output o of
      equation r' of the same iteration; ("carry", c) carry c; ("const", i) consts[i];
      ("xs", i) the iteration's slice of xs[i]; ("lit", L) the Literal L.
    hoisted: body equations taken out of the loop (slices of every iteration at once):
      r -> the xs holding their results.
    gathered: slices of a value of the body whose start moves, written as a gather of the
      iteration's indices: r -> (axis, the xs holding the indices).
    carries: the (r, o) each carry is the output of; inits: their values entering the loop.
    consts: the atoms read by every iteration.
    xs: per scanned input, ("slices", r, axis, indices) the results of hoisted equation r,
      which takes `indices[i]` along `axis` at iteration i; ("stack", atoms) one Var per
      iteration; or ("literals", literals) one Literal per iteration.
    """

    __slots__ = ("start", "period", "trips", "slots", "hoisted", "gathered", "carries", "inits", "consts", "xs")

    def __init__(self, start, period, trips):
        self.start, self.period, self.trips = start, period, trips
        self.slots, self.hoisted, self.gathered = [], {}, {}
        self.carries, self.inits, self.consts, self.xs = [], [], [], []

    @property
    def end(self) -> int:
        return self.start + self.period * self.trips


def check(eqns, pos, start: int, period: int, trips: int, min_trips: int) -> list:
    """The Runs found among `trips` blocks of `period` equations from `start`, each of at
    least `min_trips` iterations; `pos` maps every equation output to (index, output)."""
    fps, atoms = _fingerprints(eqns, pos, start, period, trips)
    runs = []
    free = 0  # the first block no run has taken
    u = 0
    while u < trips:
        v = u + 1
        while v < trips and fps[v] == fps[u]:
            v += 1
        if FAR not in fps[u] and v - max(u - 1, free) >= min_trips:
            for first in ((u - 1, u) if u - 1 >= free else (u,)):
                if v - first < min_trips:
                    continue
                run = _run(eqns, fps, atoms, start, period, fps[u], first, v)
                if run is not None:
                    runs.append(run)
                    free = v
                    break
        u = v
    return runs


def _fingerprints(eqns, pos, start, period, trips):
    fps, atoms = [], []
    for b in range(trips):
        base = start + b * period
        codes, outside = [], []
        for r in range(period):
            for a in eqns[base + r].inputs:
                if type(a) is Literal:
                    codes.append(LIT)
                    outside.append(a)
                    continue
                d = pos.get(a)
                if d is None or d[0] < start:
                    codes.append(OUT)
                    outside.append(a)
                    continue
                rel = d[0] - base
                if rel >= 0:
                    codes.append((rel, d[1]))
                    outside.append(None)
                elif rel >= -period:
                    codes.append(("c", rel + period, d[1]))
                    outside.append(a)
                else:
                    codes.append(FAR)
                    outside.append(a)
        fps.append(tuple(codes))
        atoms.append(outside)
    return fps, atoms


def _same(a, b) -> bool:
    if type(a) is Literal or type(b) is Literal:
        return type(a) is Literal and type(b) is Literal and same_literal(a, b)
    return a is b


def _run(eqns, fps, atoms, start, period, steady, first, stop):
    """The Run of blocks first .. stop - 1 (blocks after `first` have fingerprint `steady`),
    or None when they are not one loop."""
    k = stop - first
    at = [start + b * period for b in range(first, stop)]  # each iteration's first equation
    head, head_atoms = fps[first], atoms[first]
    run = Run(at[0], period, k)
    # Per operand: its class for the body before numbering (constants, carries, xs).
    kinds = []
    carries: dict = {}
    for i, code in enumerate(steady):
        h = head[i]
        if type(code) is tuple and len(code) == 2:  # the same iteration
            if h != code:
                return None
            kinds.append(("in",) + code)
        elif code[0] == "c":
            if type(h) is tuple and len(h) == 2:  # computed by the first iteration itself
                return None
            source = code[1:]
            init = head_atoms[i]
            c = carries.get(source)
            if c is None:
                carries[source] = len(run.inits)
                run.carries.append(source)
                run.inits.append(init)
            elif not _same(run.inits[c], init):
                return None
            kinds.append(("carry", carries[source]))
        else:
            if (type(h) is tuple and len(h) == 2) or (h == LIT) != (code == LIT):
                return None  # the first iteration computes it, or reads a Var where the others a Literal
            seq = [atoms[b][i] for b in range(first, stop)]
            last = seq[-1]
            if all(_same(a, last) for a in seq):
                kinds.append(("const", last) if code == OUT else ("lit", last))
            elif all(_same(a, last) for a in seq[1:]):
                return None  # only the first differs: it is not one of these iterations
            else:
                kinds.append(("vary", seq))
    slots = _regroup(eqns, at[0], period, kinds)
    if not _hoist(eqns, at, run, slots):
        return None
    if not _number(eqns, at[0], run, slots):
        return None
    if not run.carries and (not run.xs or all(eqns[at[0] + r].op.data_movement for r in range(period))):
        # The same values k times (common subexpressions, not a loop), or copies of k values
        # (a stack's rows): a scan would only copy them once more.
        return None
    return run


def _regroup(eqns, base, period, kinds) -> list:
    """The flat list of operand classes as one list per body equation."""
    slots, i = [], 0
    for r in range(period):
        n = len(eqns[base + r].inputs)
        slots.append(kinds[i:i + n])
        i += n
    return slots


def _hoist(eqns, at, run, slots) -> bool:
    """Decide what becomes of each slice whose params vary: taken of every iteration at once
    before the loop when it slices a value of before the loop (`hoisted`), else a gather of
    the iteration's indices in the body (`gathered`). False when a param varies another way."""
    for r in range(run.period):
        op = eqns[at[0] + r].op
        names = VARYING_PARAMS.get(op)
        if not names:
            continue
        params = [eqns[j + r].params for j in at]
        if all(p == params[0] for p in params):
            continue
        moving = _moving_axis(params) if op is slice_p else None
        if moving is None:
            return False
        axis, firsts = moving
        width = eqns[at[0] + r].outvars[0].type.shape[axis]
        step = params[0]["steps"][axis]
        indices = [[f + step * i for i in range(width)] for f in firsts]
        if slots[r][0][0] in ("const", "lit"):
            run.hoisted[r] = (axis, indices)
            continue
        shape = eqns[at[0] + r].inputs[0].type.shape
        p0 = params[0]
        if any((p0["starts"][a], p0["stops"][a], p0["steps"][a]) != (0, shape[a], 1)
               for a in range(len(shape)) if a != axis):
            return False  # a gather along one axis and a slice of the others: not one equation
        run.gathered[r] = (axis, indices)
    return True


def _moving_axis(params):
    """(axis, the start of each iteration) when the slices differ only in where they start along
    one axis (their width and steps are the same: part of the signature)."""
    starts0, stops0 = params[0]["starts"], params[0]["stops"]
    moving = [d for d in range(len(starts0)) if any(p["starts"][d] != starts0[d] for p in params)]
    if len(moving) != 1:
        return None
    d = moving[0]
    for p in params:
        if any(p["starts"][a] != starts0[a] or p["stops"][a] != stops0[a] for a in range(len(starts0)) if a != d):
            return None
    return d, [p["starts"][d] for p in params]


def _number(eqns, base, run, slots) -> bool:
    """Give constants and scanned inputs their indices, in order of first use."""
    const_index: dict = {}
    for r in range(run.period):
        if r in run.hoisted:
            axis, indices = run.hoisted[r]
            run.hoisted[r] = len(run.xs)
            run.xs.append(("slices", r, axis, indices))
            run.slots.append(None)
            continue
        out = []
        if r in run.gathered:
            axis, indices = run.gathered[r]
            run.gathered[r] = (axis, len(run.xs))
            run.xs.append(("literals", [Literal(np.array(i, np.int64)) for i in indices]))
        for q, kind in enumerate(slots[r]):
            tag = kind[0]
            if tag == "in":
                src = kind[1]
                out.append(("xs", run.hoisted[src]) if src in run.hoisted else kind)
            elif tag == "carry":
                out.append(kind)
            elif tag == "const":
                atom = kind[1]
                i = const_index.get(atom)
                if i is None:
                    i = const_index[atom] = len(run.consts)
                    run.consts.append(atom)
                out.append(("const", i))
            elif tag == "lit":
                out.append(kind)
            else:
                seq = kind[1]
                if type(seq[0]) is Literal:
                    if eqns[base + r].op not in SCANNED_LITERAL_OPS or any(type(a) is not Literal for a in seq):
                        return False
                    out.append(("xs", len(run.xs)))
                    run.xs.append(("literals", seq))
                else:
                    if any(type(a) is Literal for a in seq):
                        return False
                    out.append(("xs", len(run.xs)))
                    run.xs.append(("stack", seq))
        run.slots.append(out)
    return not any(src[0] in run.hoisted for src in run.carries)
