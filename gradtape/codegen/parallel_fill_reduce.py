"""A value and its elementwise gradient in one loop: a full reduction fused into a fill.

`value_and_grad(lambda x: gt.sum(f(x)))` computes sum(f(x)) and f'(x): a
Reduce of every axis and a Fill over the same elements, reading the same x
and often the same intermediate values (W2's b - a**2 is in both). When
parallel_together.py finds both, split for the pool with units over the
same elements, `fill_and_reduce` emits them as one loop: each iteration
stores the gradient's element and adds the summand's to an accumulator
carried through the loop, so each element of x is loaded once and every
subexpression the two share is computed once.

The loop runs over the fill's index space in units of whole rows of its
outermost axis (parallel.py's _Rows). The reduction's elements must be the
fill's, or, for one axis, a prefix of them (W2 sums n - 1 terms, its
gradient has n): the loop is then cut at the reduction's end, and the
pieces past it only fill. Unit u adds its elements in order into
partials[u] (reassociated, as the split full reduction's units are), and
the step then adds the partials in unit order: the same bits for any
number of threads.
"""
from __future__ import annotations

from ..ir import TensorType
from .dynamic_sizes import DynamicUnsupported
from .nodes import placement_splits
from .parallel import MAX_REDUCE_UNITS, ParallelStep, _FullReduce, _Rows, dynamic_loop
from .reductions import Reduce, combiner
from .steps import Fill, FusedFill, Step


class Parts(Step):
    """Steps run as one (their buffers are the union of theirs)."""

    def __init__(self, parts):
        self.parts = parts

    def reads(self):
        return set().union(*(p.reads() for p in self.parts))

    def writes(self):
        return set().union(*(p.writes() for p in self.parts))


def fill_and_reduce(ctx, parts):
    """One ParallelStep for `parts` (split steps: fills and one full Reduce, independent of each
    other) as described in the module docstring, or None when they do not fit that form."""
    reduces = [p.step for p in parts if isinstance(p.step, Reduce)]
    others = [p.step for p in parts if not isinstance(p.step, Reduce)]
    if len(reduces) != 1 or not others or not all(isinstance(s, (Fill, FusedFill)) for s in others):
        return None
    reduce = reduces[0]
    fills = [f for s in others for f in (s.fills if isinstance(s, FusedFill) else [s])]
    shape = fills[0].dest.shape
    src_shape = reduce.src.shape
    if set(reduce.axes) != set(range(len(src_shape))) or any(f.dest.shape != shape for f in fills):
        return None
    if src_shape == shape:
        cut = None
    elif len(shape) == 1 and len(src_shape) == 1 and src_shape[0] <= shape[0]:
        cut = src_shape[0]
    else:
        return None
    try:
        per_fill = [placement_splits(f.src, shape) for f in fills]
        splits = [set().union(*cuts) for cuts in zip(*per_fill)]
        if cut is not None:
            splits[0] |= placement_splits(reduce.src, src_shape)[0] | {cut}
        else:
            splits = [a | b for a, b in zip(splits, placement_splits(reduce.src, src_shape))]
        rows = _Rows(shape, splits)
        rows.edges()
    except DynamicUnsupported:
        return None
    split = _FillAndReduce(fills, reduce, rows, cut)
    if split.units is not None and split.units < 2:
        return None
    split.partials = ctx.arena(TensorType((split.capacity,), Reduce.accumulator_dtype(reduce.kind, reduce.dest.dtype)))
    return ParallelStep(Parts([*others, reduce]), split, split.partials.buffer)


class _FillAndReduce:
    """Unit u: rows of the fills' loop, storing each fill and adding the reduction's terms
    (before `cut`, when the reduction has fewer elements) into partials[u].

    Rows per unit are those of parallel.py's _Rows, times ceil(units / MAX_REDUCE_UNITS) when
    there would be more units than that: a dynamic version counts the same when it runs, in a
    buffer of MAX_REDUCE_UNITS partials, and so gets the specialized version's bits."""

    def __init__(self, fills, reduce, rows, cut):
        self.fills = fills
        self.rows = rows
        self.cut = cut
        self.partials = None  # set by fill_and_reduce, of `capacity` elements
        self.elements = fills[0].dest.type.size + reduce.src.type.size
        if rows.units is None:
            self.per_unit = self.units = None  # counted at run time
            self.unit_count = (rows.shape[0], rows.rows_per_unit)  # nominally (parallel_together.py)
            self.capacity = MAX_REDUCE_UNITS
        else:
            self.per_unit = rows.rows_per_unit * -(-rows.units // MAX_REDUCE_UNITS)
            self.units = self.capacity = -(-rows.shape[0] // self.per_unit)
        self.reduce_step = reduce

    def _rows_per_unit(self, k):
        if self.per_unit is not None:
            return k.i64(self.per_unit)
        b, per = k.b, k.i64(self.rows.rows_per_unit)
        blocks = b.udiv(b.add(k.i64(self.rows.shape[0]), k.i64(self.rows.rows_per_unit - 1)), per)
        return b.mul(b.udiv(b.add(blocks, k.i64(MAX_REDUCE_UNITS - 1)), k.i64(MAX_REDUCE_UNITS)), per)

    def run_time_units(self, k):
        per_unit = self._rows_per_unit(k)
        return k.b.udiv(k.b.add(k.i64(self.rows.shape[0]), k.b.sub(per_unit, k.i64(1))), per_unit)

    def emit_units(self, k, first, stop):
        reduce = _FullReduce(self.reduce_step, self.rows, self.units, self.partials)  # identity, widening
        src = reduce.step.src
        combine = combiner(reduce.step.kind, reduce.acc_dtype, fast=True)
        per_unit = self._rows_per_unit(k)

        def body(idx, acc):
            for f in self.fills:
                f.dest.store(k, idx, f.src.read(k, idx))
            if self.cut is None or k.range_of(idx[0])[1] <= self.cut:
                acc = combine(k, acc, reduce.widen(k, src.read(k, idx)))
            return (acc,)

        def unit(u):
            (acc,) = self.rows.loop(k, u, k.b.add(u, k.i64(1)), body, (reduce.identity(),), rows_per_unit=per_unit)
            reduce.partials.store_linear(k, u, acc)

        dynamic_loop(k, first, stop, 0, self.capacity, unit)

    def finish(self, k):
        reduce = _FullReduce(self.reduce_step, self.rows, self.units, self.partials)
        reduce.combine_partials(k, self.units if self.units is not None else self.run_time_units(k))
