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
from .parallel import ParallelStep, _FullReduce, _Rows, dynamic_loop
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
        if rows.units is None:  # a run-time count of units: parallel_together interleaves them instead
            return None
        rows.edges()
    except DynamicUnsupported:
        return None
    if rows.units < 2:
        return None
    partials = ctx.arena(TensorType((rows.units,), Reduce.accumulator_dtype(reduce.kind, reduce.dest.dtype)))
    return ParallelStep(Parts([*others, reduce]), _FillAndReduce(fills, reduce, rows, cut, partials),
                        partials.buffer)


class _FillAndReduce:
    """Unit u: rows of the fills' loop, storing each fill and adding the reduction's terms
    (before `cut`, when the reduction has fewer elements) into partials[u]."""

    def __init__(self, fills, reduce, rows, cut, partials):
        self.fills = fills
        self.rows = rows
        self.cut = cut
        self.units = rows.units
        self.reduce = _FullReduce(reduce, rows, rows.units, partials)  # its identity, widening and finish
        self.elements = fills[0].dest.type.size + reduce.src.type.size

    def emit_units(self, k, first, stop):
        reduce = self.reduce
        src = reduce.step.src
        combine = combiner(reduce.step.kind, reduce.acc_dtype, fast=True)

        def body(idx, acc):
            for f in self.fills:
                f.dest.store(k, idx, f.src.read(k, idx))
            if self.cut is None or k.range_of(idx[0])[1] <= self.cut:
                acc = combine(k, acc, reduce.widen(k, src.read(k, idx)))
            return (acc,)

        def unit(u):
            (acc,) = self.rows.loop(k, u, k.b.add(u, k.i64(1)), body, (reduce.identity(),))
            reduce.partials.store_linear(k, u, acc)

        dynamic_loop(k, first, stop, 0, self.units, unit)

    def finish(self, k):
        self.reduce.finish(k)
