"""Split steps over the same data, run unit by unit together: one pass over memory.

A value_and_grad of an elementwise sum, `value_and_grad(lambda x: gt.sum(f(x)))`,
lowers to two steps that read x: the sum (a Reduce of every axis) and the
gradient (a Fill of f'(x)). Split for the pool (parallel.py), each is a loop
over units of UNIT_ELEMENTS elements, and run one after the other they read
x from memory twice: at n = 10^7 that took 2.45x the time of copying x
(bench/parallel_elementwise.py, `gt vg`).

`run_together` merges such steps into one ParallelStep whose unit u runs
unit u of each step in turn. Unit u of every part covers the same elements
of the same arrays, so the second part reads them from the cache the first
one filled (a unit's 128 KiB of float64 fits in L2): x leaves memory once.
The parts keep their own units, partial results and final combination, so
the bits are those of the steps run apart, for any number of threads.

Steps are merged when

  - both are split into units of about as many elements (their counts of
    units differ by at most one: the sum of f(x[1:], x[:-1]) has n - 1
    elements, its gradient n), so unit u of each touches the same data;
  - they read a buffer in common (otherwise there is nothing to share);
  - they are independent: neither reads nor writes what the other writes,
    nor does the later one with any step between them (it moves up).
"""
from __future__ import annotations

from .dynamic_sizes import is_symbolic
from .parallel import ParallelStep, dynamic_loop, units_value
from .parallel_fill_reduce import Parts, fill_and_reduce

MAX_PARTS = 4  # steps per merged unit: more would evict the data before the last one reads it
LOOKAHEAD = 8  # steps scanned for one to merge


def run_together(ctx, steps) -> list:
    """`steps` with runs of mergeable ParallelSteps (see the module docstring) merged into one."""
    steps = list(steps)
    out = []
    while steps:
        first = steps.pop(0)
        if not _mergeable(first):
            out.append(first)
            continue
        parts = [first]
        j = 0
        while j < min(len(steps), LOOKAHEAD) and len(parts) < MAX_PARTS:
            candidate = steps[j]
            if (_mergeable(candidate) and _aligned(parts[0].split, candidate.split)
                    and any(_shares_reads(p, candidate) for p in parts)
                    and all(_independent(s, candidate) for s in parts + steps[:j])):
                parts.append(steps.pop(j))
                continue
            j += 1
        out.append(first if len(parts) == 1 else _together(ctx, parts))
    return out


def _mergeable(step) -> bool:
    return isinstance(step, ParallelStep) and getattr(step.split, "alignable", False)


def _aligned(a, b) -> bool:
    """Whether unit u of `a` and of `b` cover about the same elements."""
    if a.units is not None and b.units is not None:
        return abs(a.units - b.units) <= 1 and abs(a.elements - b.elements) <= max(a.elements, b.elements) // a.units
    if a.units is None and b.units is None and getattr(a, "unit_count", None) and getattr(b, "unit_count", None):
        (count_a, per_a), (count_b, per_b) = a.unit_count, b.unit_count
        gap = count_a - count_b
        return per_a == per_b and not is_symbolic(gap) and abs(gap) <= per_a
    return False


def _shares_reads(a, b) -> bool:
    return bool(a.reads() & b.reads())


def _independent(a, b) -> bool:
    wa, wb = a.writes(), b.writes()
    return not (wa & b.reads() or wb & a.reads() or wa & wb)


def _together(ctx, parts) -> ParallelStep:
    return fill_and_reduce(ctx, parts) or ParallelStep(Parts(parts), _TogetherSplit([p.split for p in parts]))


class _TogetherSplit:
    """Unit u runs unit u of each part that has one; finish runs each part's finish in turn."""

    def __init__(self, splits):
        self.splits = splits
        self.elements = sum(s.elements for s in splits)  # what the pool weighs against its threshold
        static = all(s.units is not None for s in splits)
        self.units = max(s.units for s in splits) if static else None

    def run_time_units(self, k):
        counts = [units_value(k, s) for s in self.splits]
        most = counts[0]
        for c in counts[1:]:
            most = k.b.select(k.b.icmp_signed(">", c, most), c, most)
        return most

    def emit_units(self, k, first, stop):
        counts = [units_value(k, s) for s in self.splits]
        hi = self.units if self.units is not None else self.elements  # a bound for the index's range

        def unit(u):
            nxt = k.b.add(u, k.i64(1))
            for split, count in zip(self.splits, counts):
                if split.units == self.units and split.units is not None:  # every unit has this part
                    split.emit_units(k, u, nxt)
                else:  # past its last unit, the part's range is empty
                    split.emit_units(k, _at_most(k, u, count), _at_most(k, nxt, count))

        dynamic_loop(k, first, stop, 0, hi, unit)

    def finish(self, k):
        for split in self.splits:
            split.finish(k)


def _at_most(k, value, bound):
    return k.b.select(k.b.icmp_signed("<", value, bound), value, bound)
