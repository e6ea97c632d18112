"""BLAS steps on the runtime's thread pool, with OpenBLAS on one thread.

`split_blas` wraps every Gemm and Gemv step (contract.py), and ComplexGemm
(complex_gemm.py: batch units only), in a SerialBlas
step, which calls the runtime's `gradtape_rt_blas_serial_enter` before it
and `..._leave` after it (runtime/blas_serial.py: OpenBLAS's thread count is
1 in between). A large step is also split into units for the pool
(parallel.py's ParallelStep):

    batched (Gemm or Gemv)  units of consecutive batch indices, each index
                            one BLAS call, as on one thread
    one Gemm                units of ROW_ALIGN-aligned blocks of C's rows,
                            each block one gemm call; the last unit takes
                            the remainder, so no unit is a sliver

So a gradient's contractions and its elementwise loops share one budget of
threads (the pool's: GRADTAPE_THREADS) and its back-off on a crowded
machine, instead of OpenBLAS's threads and the pool's each taking every
core (bench/thread_budget.py). Units are fixed here, never by the thread
count: every unit makes the same one-thread BLAS calls whoever runs it, so
results are bit-identical for any number of threads (OpenBLAS's threaded
gemm rounds differently from its one-thread gemm: hence one thread).

The bits are those of the calls `row_blocks` lists, and of no other split:
a block of rows need not give the bits of the same rows of the whole
product. With OpenBLAS's Haswell kernels (AVX2 CPUs) blocks that start at
a multiple of 64 happen to; its SkylakeX kernels (AVX-512 CPUs) walk C's
rows in groups of 12 counted from each call's first row (a group of
another width sums C's last columns in another order), and calls of at
most 100^3 multiply-adds take another kernel altogether, so there a block
rounds differently from the same rows of the whole product. So the blocks are a function of the sizes
alone: a dynamic version, which holds N where a specialized version holds a
number, computes the same blocks when it runs (rows per unit too, when n or
k holds N), and so gets the specialized version's bits for every N.
"""
from __future__ import annotations

import math

from .complex_gemm import ComplexGemm
from .contract import Gemm, Gemv
from .dynamic_sizes import DynamicUnsupported, at_least, is_symbolic
from .parallel import BLAS_SERIAL_ENTER, BLAS_SERIAL_LEAVE, UNIT_ELEMENTS, ParallelStep, dynamic_loop
from . import parallel
from .steps import Step

# Multiply-adds one-thread BLAS does in about the time a simple loop takes per element: a
# unit's work is UNIT_ELEMENTS of those, and the pool's threshold compares the same measure.
MULADDS_PER_ELEMENT = 16
UNIT_MULADDS = UNIT_ELEMENTS * MULADDS_PER_ELEMENT
# A block of C's rows starts at a multiple of this: whole tiles of the kernels, no sliver of a unit
# (the bits rely on the blocks being row_blocks', not on this number; see the module docstring).
ROW_ALIGN = 64
# Work per call at or below which OpenBLAS 0.3 uses one thread whatever its count (interface/gemm.c:
# m*n*k <= 65536 * GEMM_MULTITHREAD_THRESHOLD (4); interface/gemv.c: m*n < 2304 * 4).
OPENBLAS_ONE_THREAD = {Gemm: 65536 * 4, Gemv: 2304 * 4 - 1}
OPENBLAS_ONE_THREAD[ComplexGemm] = 0  # its threshold is not checked here: always bracketed


def split_blas(ctx, step):
    """`step` wrapped in SerialBlas (and split when large), or None when it is not a BLAS step
    or one OpenBLAS runs on one thread anyway. In a dynamic version a size holding the run-time
    N is taken to be large (as contract.py does), and a count of units, or of rows per unit,
    that holds N is computed when the code runs, as a specialized version computes it."""
    if not isinstance(step, (Gemm, Gemv)):  # ComplexGemm is a Gemm
        return None
    split = _batch_split(step) or _row_split(step)
    if split is None and not is_symbolic(_work(step)) and _work(step) <= OPENBLAS_ONE_THREAD[type(step)]:
        return None  # OpenBLAS runs these calls on one thread anyway: no bracket, no pool needed
    for symbol in (BLAS_SERIAL_ENTER, BLAS_SERIAL_LEAVE):
        ctx.use_external(symbol, parallel.external_address(symbol))
    return SerialBlas(ParallelStep(step, split) if split else step)


def _work(step):
    """Multiply-adds of one BLAS call of `step` (a polynomial in N in a dynamic version)."""
    if isinstance(step, ComplexGemm):
        return 4 * step.m * step.n * step.k  # real multiply-adds: four per complex one
    return step.m * step.n * step.k if isinstance(step, Gemm) else step.shape[0] * step.shape[1]


def _elements(work):
    """`work` multiply-adds in the pool's measure (elements of a simple loop)."""
    try:
        return work // MULADDS_PER_ELEMENT
    except DynamicUnsupported:  # not a polynomial once divided: overstating it only splits smaller calls
        return work


def _per_unit(work) -> int:
    """Calls (or rows, of `work` each) per unit: about UNIT_MULADDS of work; 1 when it holds N."""
    return 1 if is_symbolic(work) else max(1, -(-UNIT_MULADDS // max(1, work)))


def _batch_split(step):
    sizes = [step.size[c] for c in step.batch]
    if not sizes or not at_least(math.prod(sizes), 2):
        return None
    split = _Batches(step, sizes, _per_unit(_work(step)))
    return split if split.units is None or split.units >= 2 else None


def _row_split(step):
    if type(step) is not Gemm or step.batch:  # not a ComplexGemm
        return None
    split = _Rows(step)
    # Units counted when the code runs: max(1, m // rows) there, so one unit (a whole call)
    # wherever a specialized version's count is below 2 and it leaves the product whole.
    return split if split.units is None or split.units >= 2 else None


def rows_per_unit(n: int, k: int) -> int:
    """Rows of C per unit of a split m x k by k x n product: a multiple of ROW_ALIGN, about
    UNIT_MULADDS multiply-adds (_Rows computes the same from run-time sizes)."""
    return ROW_ALIGN * _per_unit(ROW_ALIGN * n * k)


def row_blocks(m: int, n: int, k: int) -> list:
    """(first row, count) of C's rows of each one-thread gemm call that a product of an m x k
    and a k x n matrix (no batch) makes, in order: the whole product when it has fewer than two
    units. The result's bits are those of these calls, for any number of threads.

    Example:
        >>> row_blocks(605, 522, 558)
        [(0, 64), (64, 64), (128, 64), (192, 64), (256, 64), (320, 64), (384, 64), (448, 64), (512, 93)]
        >>> row_blocks(100, 522, 558)
        [(0, 100)]
    """
    rows = rows_per_unit(n, k)
    units = m // rows
    if units < 2:
        return [(0, m)]
    return [(u * rows, rows if u < units - 1 else m - u * rows) for u in range(units)]


class SerialBlas(Step):
    """`step` (a BLAS step, or a ParallelStep of one) with OpenBLAS on one thread meanwhile."""

    def __init__(self, step):
        self.step = step

    def reads(self):
        return self.step.reads()

    def writes(self):
        return self.step.writes()

    def emit(self, k):
        enter, leave = (parallel.declare_void(k.module, s) for s in (BLAS_SERIAL_ENTER, BLAS_SERIAL_LEAVE))
        k.b.call(enter, [])
        self.step.emit(k)
        k.b.call(leave, [])


class _Batches:
    """Units of `per_unit` consecutive batch indices (C order), one BLAS call each."""

    def __init__(self, step, sizes, per_unit: int):
        self.step, self.sizes, self.per_unit = step, sizes, per_unit
        self.count = math.prod(sizes)
        self.elements = _elements(self.count * _work(step))
        if is_symbolic(self.count):  # ParallelStep computes ceil(count / per_unit) when the code runs
            self.units, self.unit_count = None, (self.count, per_unit)
        else:
            self.units = -(-self.count // per_unit)

    def emit_units(self, k, first, stop):
        b = k.b
        begin = b.mul(first, k.i64(self.per_unit))
        end = parallel._min(k, b.mul(stop, k.i64(self.per_unit)), self.count)

        def call(flat):
            idx, rest = [], flat
            for d in reversed(self.sizes):  # C order: the last batch letter varies fastest
                idx.append(b.urem(rest, k.i64(d)))
                rest = b.udiv(rest, k.i64(d))
            self.step.call(k, idx[::-1])

        dynamic_loop(k, begin, end, 0, self.count, call)

    def finish(self, k):
        pass


class _Rows:
    """Units of `rows` rows of C, one gemm each; the last unit runs to the end, so every unit
    starts at a multiple of ROW_ALIGN and the last ends where the product does (row_blocks).
    In a dynamic version m, and rows per unit when n or k holds N, are computed when the code
    runs, by the specialized version's formulas."""

    def __init__(self, step: Gemm):
        self.step, self.total = step, step.m
        self.elements = _elements(_work(step))
        row_work = step.n * step.k
        self.rows = None if is_symbolic(row_work) else rows_per_unit(step.n, step.k)
        if is_symbolic(step.m) or self.rows is None:  # counted when the code runs (run_time_units)
            self.units = None
        else:
            self.units = step.m // self.rows

    def rows_value(self, k):
        """Rows per unit as an i64 value: ROW_ALIGN * ceil(UNIT_MULADDS / max(1, ROW_ALIGN * n * k))
        of the run-time n and k, as _per_unit computes it from static ones."""
        if self.rows is not None:
            return k.i64(self.rows)
        b = k.b
        work = b.mul(k.i64(ROW_ALIGN), k.i64(self.step.n * self.step.k))
        work = parallel._max(k, work, 1)
        per_unit = b.udiv(b.add(k.i64(UNIT_MULADDS), b.sub(work, k.i64(1))), work)
        return b.mul(per_unit, k.i64(ROW_ALIGN))

    def run_time_units(self, k):
        """max(1, m // rows) of the run-time sizes (ParallelStep's count for units=None)."""
        b = k.b
        units = b.udiv(k.i64(self.total), self.rows_value(k))
        return b.select(b.icmp_signed("<", units, k.i64(1)), k.i64(1), units)

    def emit_units(self, k, first, stop):
        b = k.b
        last = b.sub(self.run_time_units(k), k.i64(1)) if self.units is None else k.i64(self.units - 1)
        rows = self.rows_value(k)

        def call(u):
            r0 = b.mul(u, rows)
            count = b.select(b.icmp_signed("==", u, last), b.sub(k.i64(self.total), r0), rows)
            self.step.call(k, [], rows=(r0, count))

        dynamic_loop(k, first, stop, 0, self.total, call)

    def finish(self, k):
        pass
