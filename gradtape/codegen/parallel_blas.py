"""BLAS steps on the runtime's thread pool, with OpenBLAS on one thread.

`split_blas` wraps every Gemm and Gemv step (contract.py) in a SerialBlas
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
results are bit-identical for any number of threads. (OpenBLAS's one-thread
gemm gives the same bits for a block of rows starting at a multiple of 64
as for the whole product; its threaded gemm does not, hence one thread.)
"""
from __future__ import annotations

import math

from .contract import Gemm, Gemv
from .dynamic_sizes import is_symbolic
from .parallel import BLAS_SERIAL_ENTER, BLAS_SERIAL_LEAVE, UNIT_ELEMENTS, ParallelStep, dynamic_loop
from . import parallel
from .steps import Step

# Multiply-adds one-thread BLAS does in about the time a simple loop takes per element: a
# unit's work is UNIT_ELEMENTS of those, and the pool's threshold compares the same measure.
MULADDS_PER_ELEMENT = 16
UNIT_MULADDS = UNIT_ELEMENTS * MULADDS_PER_ELEMENT
ROW_ALIGN = 64  # a block of C's rows starts at a multiple of this (see the module docstring)
# Work per call at or below which OpenBLAS 0.3 uses one thread whatever its count (interface/gemm.c:
# m*n*k <= 65536 * GEMM_MULTITHREAD_THRESHOLD (4); interface/gemv.c: m*n < 2304 * 4).
OPENBLAS_ONE_THREAD = {Gemm: 65536 * 4, Gemv: 2304 * 4 - 1}


def split_blas(ctx, step, dynamic: bool = False):
    """`step` wrapped in SerialBlas (and split when large and of static sizes), or None
    when it is not a BLAS step."""
    if not isinstance(step, (Gemm, Gemv)):
        return None
    static = not (dynamic or _symbolic(step))
    split = _batch_split(step) or _row_split(step) if static else None
    if split is None and static and _work(step) <= OPENBLAS_ONE_THREAD[type(step)]:
        return None  # OpenBLAS runs these calls on one thread anyway: no bracket, no pool needed
    for symbol in (BLAS_SERIAL_ENTER, BLAS_SERIAL_LEAVE):
        ctx.use_external(symbol, parallel.external_address(symbol))
    return SerialBlas(ParallelStep(step, split) if split else step)


def _symbolic(step) -> bool:
    sizes = [step.size[c] for c in step.batch]
    sizes += [step.m, step.n, step.k] if isinstance(step, Gemm) else list(step.shape)
    return any(is_symbolic(s) for s in sizes)


def _work(step) -> int:
    """Multiply-adds of one BLAS call of `step`."""
    return step.m * step.n * step.k if isinstance(step, Gemm) else step.shape[0] * step.shape[1]


def _batch_split(step):
    sizes = [step.size[c] for c in step.batch]
    count = math.prod(sizes)
    if count < 2:
        return None
    split = _Batches(step, sizes, max(1, -(-UNIT_MULADDS // max(1, _work(step)))))
    return split if split.units >= 2 else None


def _row_split(step):
    if not isinstance(step, Gemm) or step.batch:
        return None
    row_work = max(1, step.n * step.k)
    rows = ROW_ALIGN * max(1, -(-UNIT_MULADDS // (ROW_ALIGN * row_work)))
    split = _Rows(step, rows)
    return split if split.units >= 2 else None


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
        self.units = -(-self.count // per_unit)
        self.elements = self.count * _work(step) // MULADDS_PER_ELEMENT

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
    """Units of `rows` rows of C (the last unit to the end), one gemm each."""

    def __init__(self, step: Gemm, rows: int):
        self.step, self.rows, self.total = step, rows, step.m
        self.units = step.m // rows
        self.elements = _work(step) // MULADDS_PER_ELEMENT

    def emit_units(self, k, first, stop):
        b = k.b
        last = k.i64(self.units - 1)

        def call(u):
            r0 = b.mul(u, k.i64(self.rows))
            count = b.select(b.icmp_signed("==", u, last), b.sub(k.i64(self.total), r0), k.i64(self.rows))
            self.step.call(k, [], rows=(r0, count))

        dynamic_loop(k, first, stop, 0, self.units, call)

    def finish(self, k):
        pass
