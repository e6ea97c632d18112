"""Reductions: reduce_sum/prod/max/min over axes, argmax/argmin over one axis.

Reductions iterate the input in C order. Trailing reduced axes accumulate in
a register (a vectorizable reduction loop: the accumulator's adds carry
`reassoc`, since LLVM vectorizes only reassociable float reductions); other
reduced axes accumulate into the output, initialized first, so the innermost
loop always runs along contiguous memory. float32 sums accumulate in float64
(in a register, or in an arena scratch buffer when outer axes are reduced).
max and min propagate NaN, as NumPy's do (llvm.maximum/minimum).
"""
from __future__ import annotations

import math

import numpy as np

from .dtypes import F64, constant, is_bool, is_float, is_signed, value_type
from .nodes import Const, Node, View, placement_splits
from .steps import Fill, Step, load_fresh
from .math_ir import emit_intrinsic

# `reassoc` is what LLVM needs to vectorize a float reduction. Not `nsz`: with both on an
# fadd, InstCombine factors x*a + x*b into x*(a+b), which turns inf*-1 + inf*1.5 (NaN, as
# NumPy gives) into inf (fuzz seeds 1970, 2077, ...: tests/fuzz/test_fuzz_regressions.py).
REDUCE_FLAGS = ("reassoc",)
GROUP_ROWS = 4  # rows of a sum over the first axis added together before the accumulator row (add_rows_grouped)


def reduction_identity(kind: str, dtype):
    dtype = np.dtype(dtype)
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if is_bool(dtype):
        return kind == "min"
    if is_float(dtype):
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def combiner(kind: str, dtype, *, fast: bool):
    """combine(k, acc, x) for reducing with `kind` in `dtype` (reassociable when `fast`)."""
    dtype = np.dtype(dtype)
    flags = REDUCE_FLAGS if fast else ()
    if is_bool(dtype):
        if kind in ("sum", "max"):
            return lambda k, a, x: k.b.or_(a, x)
        return lambda k, a, x: k.b.and_(a, x)
    if is_float(dtype):
        if kind == "sum":
            return lambda k, a, x: k.b.fadd(a, x, flags=flags)
        if kind == "prod":
            return lambda k, a, x: k.b.fmul(a, x, flags=flags)
        name = "llvm.maximum" if kind == "max" else "llvm.minimum"  # NaN propagates, as np.max
        return lambda k, a, x: emit_intrinsic(k.b, name, a, x)
    if kind == "sum":
        return lambda k, a, x: k.b.add(a, x)
    if kind == "prod":
        return lambda k, a, x: k.b.mul(a, x)
    op = ">" if kind == "max" else "<"
    cmp = "icmp_signed" if is_signed(dtype) else "icmp_unsigned"
    return lambda k, a, x: k.b.select(getattr(k.b, cmp)(op, a, x), a, x)


class Reduce(Step):
    """dest = reduce `kind` of src over `axes` (see the module docstring for the loop order)."""

    def __init__(self, dest: View, src: Node, axes, kind: str, scratch: View | None = None):
        self.dest = dest
        self.src = src
        self.axes = tuple(axes)
        self.kind = kind
        self.scratch = scratch  # float64 accumulator for float32 sums over outer axes

    @staticmethod
    def accumulator_dtype(kind, dtype):
        return np.dtype(np.float64) if kind == "sum" and np.dtype(dtype) == np.float32 else np.dtype(dtype)

    @staticmethod
    def needs_scratch(src_shape, axes, kind, dtype) -> bool:
        trailing = _trailing_reduced(src_shape, axes)
        outer_reduced = any(a < len(src_shape) - trailing for a in axes)
        return outer_reduced and Reduce.accumulator_dtype(kind, dtype) != np.dtype(dtype)

    def reads(self):
        return self.src.buffers() | ({self.scratch.buffer} if self.scratch else set())

    def writes(self):
        return {self.dest.buffer} | ({self.scratch.buffer} if self.scratch else set())

    def splits_rows(self) -> bool:
        """Whether each output element is one reduction of trailing axes, so that rows of the
        outer axes can be computed apart (by parallel.py's units) with the same results."""
        trailing = _trailing_reduced(self.src.shape, self.axes)
        return 0 < trailing < len(self.src.shape) and not any(a < len(self.src.shape) - trailing for a in self.axes)

    def emit(self, k, outer_loop=None, partial=None):
        """The step; `outer_loop(shape, body, splits)` replaces the nest over the outer axes
        when given (parallel.py's units of rows, for a step that splits_rows). With
        `partial=(view, u)` the outer axes accumulate into view[u, ...] (of the accumulator's
        dtype, initialized by the caller; with u None, view[...]) and dest is left alone
        (parallel_leading.py)."""
        dest, src, axes, kind = self.dest, self.src, self.axes, self.kind
        dtype = dest.dtype
        acc_dtype = self.accumulator_dtype(kind, dtype)
        identity = constant(acc_dtype, reduction_identity(kind, acc_dtype))
        widen = (lambda v: k.b.fpext(v, F64)) if acc_dtype != dtype else (lambda v: v)
        narrow = (lambda v: k.b.fptrunc(v, value_type(dtype))) if acc_dtype != dtype else (lambda v: v)
        if dest.type.size == 0:
            return
        if src.type.size == 0:  # an empty sum or product: the identity everywhere
            Fill(dest, Const(dest.type, reduction_identity(kind, dtype))).emit(k)
            return
        shape = src.shape
        trailing = _trailing_reduced(shape, axes)
        n_outer = len(shape) - trailing
        outer_shape, inner_shape = shape[:n_outer], shape[n_outer:]
        inner_size = math.prod(inner_shape)
        accumulate_outer = any(a < n_outer for a in axes)
        combine_inner = combiner(kind, acc_dtype, fast=True)
        combine_outer = combiner(kind, acc_dtype, fast=False)
        acc_view = self.scratch if self.scratch is not None else dest
        acc_prefix = []
        if partial is not None:
            acc_view, u = partial
            acc_prefix = [] if u is None else [u]
        elif accumulate_outer:
            k.loop(acc_view.type.size, lambda i: acc_view.store_linear(k, i, identity))

        def body(outer):
            if trailing:
                if src.linear:
                    base = k.mul(k.linearize(outer, outer_shape), inner_size)
                    (val,) = k.loop(
                        inner_size,
                        lambda j, acc: (combine_inner(k, acc, widen(src.read_linear(k, k.add(base, j)))),),
                        (identity,),
                    )
                else:
                    (val,) = k.nest(
                        inner_shape,
                        lambda inner, acc: (combine_inner(k, acc, widen(src.read(k, outer + inner))),),
                        (identity,),
                        splits=splits[n_outer:],
                    )
            else:
                val = widen(src.read(k, outer))
            out_idx = [i for d, i in enumerate(outer) if d not in axes]
            if accumulate_outer:
                out_idx = acc_prefix + out_idx
                acc_view.store(k, out_idx, combine_outer(k, load_fresh(k, acc_view, out_idx), val))
            else:
                dest.store(k, out_idx, narrow(val))

        splits = placement_splits(src, shape)
        if outer_loop is None and self.groups_rows():
            self.add_rows_grouped(k, acc_view, [], k.i64(0), k.i64(shape[0]))
        else:
            (outer_loop or k.nest)(outer_shape, body, splits=splits[:n_outer])
        if accumulate_outer and self.scratch is not None and partial is None:
            scratch = self.scratch
            k.loop(dest.type.size, lambda i: dest.store_linear(k, i, narrow(scratch._load_linear(k, i))))


    def groups_rows(self) -> bool:
        """Whether the first axis alone is reduced, with no cut of it: add_rows_grouped's case."""
        shape = self.src.shape
        return self.axes == (0,) and len(shape) >= 2 and not placement_splits(self.src, shape)[0]

    def add_rows_grouped(self, k, acc_view, prefix, r0, r1):
        """acc_view[prefix + j] (of the accumulator's dtype) combined with rows [r0, r1) of src
        (i64 values), GROUP_ROWS rows at a time: acc += (x[r] + x[r+1]) + (x[r+2] + x[r+3]), then
        the rows left one by one. A quarter of the loads and stores of the accumulator row (in L2
        when a row is wider than L1): column sums of a 2000 x 5000 matrix 0.48x -> 0.36x the time
        of copying it on one thread (bench/parallel_elementwise.py --reductions). The whole
        loop and parallel_leading.py's units group alike, so their bits agree."""
        b, src = k.b, self.src
        acc_dtype = self.accumulator_dtype(self.kind, self.dest.dtype)
        combine = combiner(self.kind, acc_dtype, fast=False)
        widen = (lambda v: b.fpext(v, F64)) if acc_dtype != self.dest.dtype else (lambda v: v)
        inner_splits = placement_splits(src, src.shape)[1:]
        n_rows = src.shape[0]

        def add_rows(r, count):
            def body(idx):
                terms = [widen(src.read(k, [b.add(r, k.i64(t))] + idx)) for t in range(count)]
                while len(terms) > 1:  # a pairwise tree: (x0 + x1) + (x2 + x3)
                    terms = [combine(k, *terms[i:i + 2]) if i + 1 < len(terms) else terms[i]
                             for i in range(0, len(terms), 2)]
                at = prefix + idx
                acc_view.store(k, at, combine(k, load_fresh(k, acc_view, at), terms[0]))

            k.nest(src.shape[1:], body, splits=inner_splits)

        from .parallel import dynamic_loop  # (parallel.py builds on this module)

        groups = b.sdiv(b.sub(r1, r0), k.i64(GROUP_ROWS))
        dynamic_loop(k, k.i64(0), groups, 0, n_rows,
                     lambda g: add_rows(b.add(r0, b.mul(g, k.i64(GROUP_ROWS))), GROUP_ROWS))
        dynamic_loop(k, b.add(r0, b.mul(groups, k.i64(GROUP_ROWS))), r1, 0, n_rows, lambda r: add_rows(r, 1))


def _trailing_reduced(shape, axes) -> int:
    """How many trailing axes are all reduced."""
    n = 0
    for a in range(len(shape) - 1, -1, -1):
        if a not in axes:
            break
        n += 1
    return n


# --- argmax / argmin ---------------------------------------------------------------------

class ArgReduce(Step):
    """dest (int64) = index of the first max (min) of src along `axis`; NaN wins, as in NumPy."""

    def __init__(self, dest: View, src: Node, axis: int, kind: str):
        self.dest, self.src, self.axis, self.kind = dest, src, axis, kind

    def reads(self):
        return self.src.buffers()

    def writes(self):
        return {self.dest.buffer}

    def emit(self, k):
        src, axis, dtype = self.src, self.axis, self.src.dtype
        n = src.shape[axis]
        op = ">" if self.kind == "argmax" else "<"
        if self.dest.type.size == 0:
            return

        def better(b, v, best):
            if is_float(dtype):
                nan_first = b.and_(b.fcmp_unordered("uno", v, v), b.fcmp_ordered("ord", best, best))
                return b.or_(b.fcmp_ordered(op, v, best), nan_first)
            cmp = b.icmp_signed if is_signed(dtype) else b.icmp_unsigned
            return cmp(op, v, best)

        def body(out_idx):
            at = lambda j: out_idx[:axis] + [j] + out_idx[axis:]  # noqa: E731

            def step(j, best, best_j):
                j1 = k.add(j, k.i64(1))
                v = src.read(k, at(j1))
                w = better(k.b, v, best)
                return k.b.select(w, v, best), k.b.select(w, j1, best_j)

            _, best_j = k.loop(n - 1, step, (src.read(k, at(k.i64(0))), k.i64(0)))
            self.dest.store(k, out_idx, best_j)

        k.nest(self.dest.shape, body)
