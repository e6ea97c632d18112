"""Reductions split into units of rows of the first axis, and a dynamic version's reductions.

parallel.py splits a reduction of every axis (units of elements into partial
sums) and one of trailing axes (units of rows, each output element its own).
The rest go here, in units of rows of the input's first axis:

  - the first axis reduced (`gt.sum(x, axis=0)`, column sums; axes (0, 2)):
    unit u reduces its rows by the step's own loops (reductions.py: rows
    added in order into a row that stays in cache, trailing reduced axes in
    registers) into its own partial result partials[u], of the output's
    shape and the accumulator's dtype; the step then adds partials[1],
    partials[2], ... into partials[0] in unit order, and writes the output.
    Each unit reads one run of whole rows, one sequential stream (units of
    blocks of columns were tried before, and one thread read their short
    runs of every row up to 1.26x slower than the whole loop).
  - the first axis kept, an inner axis reduced (`gt.sum(x, axis=1)` of a
    3-d array): unit u writes the output's rows of its own rows, by the
    step's own loops, with the same results as one loop.

Rows per unit are fixed when the code is generated, never by the thread
count, and the partial results are added in one order, so the bits are the
same for any number of threads. For partial results, a unit has enough rows
for UNIT_ELEMENTS elements, and at least MIN_ROWS_PER_PARTIAL times as many
elements as the output has (so the partials read at the end are at most
1/8 of the input), and there are at most MAX_PARTIALS units: rows per unit
= max(those minimums, ceil(rows / MAX_PARTIALS)). A dynamic version
(codegen/dynamic.py) whose first axis is the run-time N computes the same
formula when it runs, in a buffer of MAX_PARTIALS partials, so its bits are
the specialized version's. An input with fewer rows than two units is left
whole (a (4, 10**6) matrix: one unit's partial would be as large as its
rows).

`split_reduce_dynamic` splits a dynamic version's reductions whose first
axis (or size) is N: a full reduction as a specialized one, its count of
units computed when the code runs; trailing axes by rows; leading axes by
the formula above.
"""
from __future__ import annotations

import math

from ..ir import TensorType
from .dtypes import constant, value_type
from .dynamic_sizes import DynamicUnsupported, is_symbolic
from .nodes import placement_splits
from .parallel import (MAX_REDUCE_UNITS, UNIT_ELEMENTS, ParallelStep, _FullReduce, _max, _min, _RowReduce, _Rows,
                       dynamic_loop, units_value)
from .reductions import Reduce, _trailing_reduced, combiner, reduction_identity

MAX_PARTIALS = 64  # units at most: a partial result each, all read once more at the end
MIN_ROWS_PER_PARTIAL = 8  # a unit reads at least 8 times the elements its partial result has


def split_leading(ctx, step: Reduce, dynamic: bool = False):
    """A ParallelStep for `step` (a Reduce of some axes, not all), or None.

    Reductions of trailing axes alone are parallel.py's _RowReduce, split from 2 units of
    elements on (each output element is the same sum either way), as are those that keep the
    first axis. Partial results are used whenever there are two units, as a dynamic version
    does (they change the order of the sum, so the threshold must not differ between the two).
    """
    shape = step.src.shape
    if not shape or set(step.axes) == set(range(len(shape))) or step.dest.type.size == 0:
        return None
    if any(is_symbolic(d) for d in shape[1:]) or (is_symbolic(shape[0]) != dynamic):
        return None  # rows of a static size, and a count of rows that holds N only in a dynamic version
    n_outer = len(shape) - _trailing_reduced(shape, step.axes)
    per_row = math.prod(shape[1:])
    if per_row == 0:
        return None
    rows = _Rows(shape[:n_outer], [set()] * n_outer, math.prod(shape[n_outer:]))
    if step.splits_rows() or 0 not in step.axes:
        if dynamic or step.src.type.size < 2 * UNIT_ELEMENTS or rows.units < 2:
            return None  # (a dynamic version's trailing reductions: parallel.py's split_reduce_dynamic)
        return ParallelStep(step, _RowReduce(step, rows) if step.splits_rows() else _KeptRows(step, rows))
    kept = step.dest.type.size
    min_rows = max(-(-UNIT_ELEMENTS // per_row), -(-MIN_ROWS_PER_PARTIAL * kept // per_row), 1)
    if dynamic:
        per_unit, units, capacity = None, None, MAX_PARTIALS
    else:
        per_unit = max(min_rows, -(-shape[0] // MAX_PARTIALS))
        units = capacity = -(-shape[0] // per_unit)
        if units < 2:
            return None
    partials = ctx.arena(TensorType((capacity, *step.dest.shape),
                                    Reduce.accumulator_dtype(step.kind, step.dest.dtype)))
    return ParallelStep(step, _PartialRows(step, rows, min_rows, per_unit, units, capacity, partials),
                        partials.buffer)


class _KeptRows:
    """The first axis kept: unit u initializes, reduces into and (for a float32 sum's float64
    scratch) narrows the output rows of its own input rows."""

    def __init__(self, step: Reduce, rows: _Rows):
        self.step = step
        self.rows = rows
        self.units = rows.units
        self.elements = step.src.type.size
        self.per_row = step.dest.type.size // step.dest.shape[0]  # output elements per row

    def emit_units(self, k, first, stop):
        step, rows = self.step, self.rows
        acc_dtype = Reduce.accumulator_dtype(step.kind, step.dest.dtype)
        acc_view = step.scratch if step.scratch is not None else step.dest
        identity = constant(acc_dtype, reduction_identity(step.kind, acc_dtype))
        begin = k.b.mul(k.b.mul(first, k.i64(rows.rows_per_unit)), k.i64(self.per_row))
        end = k.b.mul(_min(k, k.b.mul(stop, k.i64(rows.rows_per_unit)), step.dest.shape[0]),
                      k.i64(self.per_row))
        size = step.dest.type.size
        dynamic_loop(k, begin, end, 0, size, lambda i: acc_view.store_linear(k, i, identity))

        def outer_loop(shape, body, splits):
            rows.splits = splits
            rows.loop(k, first, stop, body)

        step.emit(k, outer_loop, partial=(acc_view, None))
        if step.scratch is not None:
            dynamic_loop(k, begin, end, 0, size, lambda i: step.dest.store_linear(
                k, i, k.b.fptrunc(step.scratch._load_linear(k, i), value_type(step.dest.dtype))))

    def finish(self, k):
        pass


class _PartialRows:
    """The first axis reduced: unit u reduces its rows into partials[u]; finish adds them in order."""

    def __init__(self, step: Reduce, rows: _Rows, min_rows: int, per_unit, units, capacity: int, partials):
        self.step = step
        self.rows = rows
        self.min_rows = min_rows
        self.per_unit = per_unit  # rows per unit; None: computed at run time
        self.units = units  # None: computed at run time
        self.capacity = capacity
        self.partials = partials
        self.elements = step.src.type.size
        self.kept = step.dest.type.size
        self.acc_dtype = Reduce.accumulator_dtype(step.kind, step.dest.dtype)

    def _rows_per_unit(self, k):
        if self.per_unit is not None:
            return k.i64(self.per_unit)
        spread = k.b.udiv(k.b.add(k.i64(self.rows.shape[0]), k.i64(MAX_PARTIALS - 1)), k.i64(MAX_PARTIALS))
        return _max(k, spread, self.min_rows)

    def run_time_units(self, k):
        per_unit = self._rows_per_unit(k)
        return k.b.udiv(k.b.add(k.i64(self.rows.shape[0]), k.b.sub(per_unit, k.i64(1))), per_unit)

    def emit_units(self, k, first, stop):
        step, partials = self.step, self.partials
        per_unit = self._rows_per_unit(k)
        identity = constant(self.acc_dtype, reduction_identity(step.kind, self.acc_dtype))

        def unit(u):
            base = k.b.mul(u, k.i64(self.kept))
            k.loop(self.kept, lambda j: partials.store_linear(k, k.b.add(base, j), identity))
            if step.groups_rows():
                r0 = k.b.mul(u, per_unit)
                step.add_rows_grouped(k, partials, [u], r0, _min(k, k.b.add(r0, per_unit), self.rows.shape[0]))
                return

            def outer_loop(shape, body, splits):
                self.rows.splits = splits
                self.rows.loop(k, u, k.b.add(u, k.i64(1)), body, rows_per_unit=per_unit)

            step.emit(k, outer_loop, partial=(partials, u))

        dynamic_loop(k, first, stop, 0, self.capacity, unit)

    def finish(self, k):
        step, partials, kept = self.step, self.partials, self.kept
        combine = combiner(step.kind, self.acc_dtype, fast=False)  # in unit order: the same result every time

        def add_unit(u):
            base = k.b.mul(u, k.i64(kept))
            k.loop(kept, lambda j: partials.store_linear(
                k, j, combine(k, partials._load_linear(k, j), partials._load_linear(k, k.b.add(base, j)))))

        dynamic_loop(k, k.i64(1), units_value(k, self), 1, self.capacity, add_unit)
        narrow = (lambda v: k.b.fptrunc(v, value_type(step.dest.dtype))) if self.acc_dtype != step.dest.dtype \
            else (lambda v: v)
        k.loop(kept, lambda j: step.dest.store_linear(k, j, narrow(partials._load_linear(k, j))))


def split_reduce_dynamic(ctx, step):
    """A dynamic version's Reduce split for the pool when its first axis (or its size) is the
    run-time N and its other sizes are static, else None (parallel.py's _split_dynamic): a full
    reduction in units of flat_reduce_units's count, computed when the code runs; trailing axes
    in units of rows; leading axes as split_leading counts them."""
    src = step.src
    if step.dest.type.size == 0:
        return None
    if set(step.axes) == set(range(len(src.shape))):
        if not src.linear or not is_symbolic(src.type.size):
            return None
        acc_dtype = Reduce.accumulator_dtype(step.kind, step.dest.dtype)
        partials = ctx.arena(TensorType((MAX_REDUCE_UNITS,), acc_dtype))
        return ParallelStep(step, _FullReduce(step, None, None, partials, None), partials.buffer)
    if step.splits_rows():
        outer = src.shape[:len(step.dest.shape)]
        inner = src.shape[len(outer):]
        if not is_symbolic(outer[0]) or any(is_symbolic(d) for d in outer[1:] + inner):
            return None
        try:
            rows = _Rows(outer, placement_splits(src, src.shape)[:len(outer)], math.prod(inner))
            rows.edges()
        except DynamicUnsupported:
            return None
        return ParallelStep(step, _RowReduce(step, rows))
    return split_leading(ctx, step, dynamic=True)
