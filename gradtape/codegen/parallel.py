"""Large loops split into units that the runtime's thread pool shares out.

After steps are planned (lowering.py), `split_for_threads` wraps each large
step it can split in a ParallelStep:

    Fill / FusedFill  over at least 2 * UNIT_ELEMENTS elements: units of
                      UNIT_ELEMENTS consecutive elements when the loop is
                      flat, else of whole rows of the outermost axis
    Reduce            of every axis, of two units or more: each unit
                      reduces its elements into its own slot of an arena
                      buffer, and the step then combines the slots in unit
                      order (at most MAX_REDUCE_UNITS slots for a flat
                      loop: longer units beyond); of trailing axes only (a
                      sum over each row), of at least 2 * UNIT_ELEMENTS:
                      units of rows of the kept axes, each output element
                      reduced by the step's own loop; of leading axes:
                      units of rows into partial results (parallel_leading.py)
    Gemm / Gemv       units of batch indices or blocks of rows, with
                      OpenBLAS on one thread meanwhile (parallel_blas.py)

Then split steps over the same data run as one: a full reduction and the
fills over its elements in one loop (parallel_fill_reduce.py: value_and_grad
of an elementwise sum), others unit by unit (parallel_together.py).

A ParallelStep emits its loop as `void body(i8** ctx, i64 first, i64 stop)`
running units [first, stop), and calls the runtime's
`gradtape_rt_parallel_for(body, ctx, units, elements)` (runtime/parallel_pool.py),
which runs every unit once on some thread. Units are fixed when the code is
generated, never by the number of threads: an elementwise loop writes each
element once whoever computes it, and a reduction adds the same partial
results in the same order, so results are bit-identical for any number of
threads (and with the pool busy or off, when the caller runs every unit).

Splitting needs the runtime, which registers the pool with `provide_pool`
when it is imported; without it (and for code lowered with blas=False,
which must run without gradtape) steps are left whole.
"""
from __future__ import annotations

import functools

import llvmlite.ir as ir
import numpy as np

from ..ir import TensorType
from .dtypes import F64, I8, I64, constant, value_type
from .dynamic_sizes import DynamicUnsupported, is_symbolic
from .emitter import Emitter, merge_carries
from .lowered import blas_allowed
from .nodes import placement_splits
from .reductions import Reduce, combiner, reduction_identity
from .steps import Fill, FusedFill, Step, load_fresh

PARALLEL_FOR = "gradtape_rt_parallel_for"
# Around a BLAS step: OpenBLAS on one thread meanwhile (runtime/blas_serial.py, parallel_blas.py).
BLAS_SERIAL_ENTER, BLAS_SERIAL_LEAVE = "gradtape_rt_blas_serial_enter", "gradtape_rt_blas_serial_leave"
POOL_SYMBOLS = (PARALLEL_FOR, BLAS_SERIAL_ENTER, BLAS_SERIAL_LEAVE)
UNIT_ELEMENTS = 16384  # about 10 µs of a simple loop: small enough to balance, large enough to not count
MAX_REDUCE_UNITS = 4096  # partial results of a flat full reduction (so a dynamic version's fit in 32 KiB)

_I8P = I8.as_pointer()
_BODY = ir.FunctionType(ir.VoidType(), [_I8P.as_pointer(), I64, I64])
_pool_address = None  # (symbol) -> address of one of POOL_SYMBOLS, set by the runtime


def provide_pool(address_fn):
    """Called by gradtape.runtime.parallel: `address_fn(symbol)` builds the pool if needed and
    returns the address of `symbol`, one of POOL_SYMBOLS."""
    global _pool_address
    _pool_address = address_fn


def external_address(symbol: str) -> int | None:
    """The address of one of the pool's POOL_SYMBOLS when a runtime provides them, else None."""
    if symbol in POOL_SYMBOLS and _pool_address is not None:
        return _pool_address(symbol)
    return None


def split_for_threads(ctx, steps, dynamic: bool = False) -> list:
    """`steps` with every large step that can be split wrapped in a ParallelStep.

    In a dynamic version (codegen/dynamic.py) fills and reductions whose outermost size holds
    the run-time N are split: their number of units is computed when the code runs (as a
    static size's is at compile time), and the pool runs them alone below its threshold. A
    step whose split would need N as a number is left whole.
    """
    if _pool_address is None or not blas_allowed():  # blas=False: code that runs without the runtime
        return steps
    from .parallel_blas import split_blas  # it builds on this module's ParallelStep

    split = _split_dynamic if dynamic else _split
    from .parallel_together import run_together  # it builds on ParallelStep too

    out = run_together(ctx, [split_blas(ctx, step) or split(ctx, step) or step for step in steps])
    if any(isinstance(s, ParallelStep) or isinstance(getattr(s, "step", None), ParallelStep) for s in out):
        ctx.use_external(PARALLEL_FOR, _pool_address(PARALLEL_FOR))
    return out


def _split_dynamic(ctx, step):
    if isinstance(step, Reduce):
        from .parallel_leading import split_reduce_dynamic  # it builds on this module's ParallelStep

        return split_reduce_dynamic(ctx, step)
    if not isinstance(step, (Fill, FusedFill)):
        return None
    fills = [step] if isinstance(step, Fill) else step.fills
    dest = fills[0].dest
    if not is_symbolic(dest.type.size):
        return None
    flat = all(f.dest.linear and f.src.linear for f in fills)
    if not flat and (not is_symbolic(dest.shape[0]) or any(is_symbolic(d) for d in dest.shape[1:])):
        return None  # units of rows need a static row and a run-time count of rows
    try:
        split = _fill_split(fills)
        if not flat:
            split.rows.edges()  # every cut ordered for every N, or DynamicUnsupported
    except DynamicUnsupported:
        return None
    return ParallelStep(step, split)


def _fill_split(fills):
    """Units of elements for a flat fill, else of rows of the outermost axis (cut where the
    fills' pieces are placed)."""
    dest = fills[0].dest
    if all(f.dest.linear and f.src.linear for f in fills):
        return _FlatFill(fills)
    per_fill = [placement_splits(f.src, dest.shape) for f in fills]
    splits = [set().union(*cuts) for cuts in zip(*per_fill)]
    return _RowFill(fills, _Rows(dest.shape, splits))


def _split(ctx, step):
    if isinstance(step, (Fill, FusedFill)):
        fills = [step] if isinstance(step, Fill) else step.fills
        dest = fills[0].dest
        if dest.type.size < 2 * UNIT_ELEMENTS:
            return None
        split = _fill_split(fills)
        return ParallelStep(step, split) if split.units >= 2 else None
    if isinstance(step, Reduce):
        src = step.src
        if step.dest.type.size == 0:
            return None
        if set(step.axes) != set(range(len(src.shape))):
            from .parallel_leading import split_leading  # it builds on this module's ParallelStep

            return split_leading(ctx, step)
        # A reduction of every axis is split whenever it has two units (not from 2 units of
        # elements on, as fills): a dynamic version splits it so, and the split changes the
        # order of the sum.
        if src.type.size <= UNIT_ELEMENTS:
            return None
        rows = None if src.linear else _Rows(src.shape, placement_splits(src, src.shape))
        per_unit, units = flat_reduce_units(src.type.size) if rows is None else (None, rows.units)
        if units < 2:
            return None
        acc_dtype = Reduce.accumulator_dtype(step.kind, step.dest.dtype)
        partials = ctx.arena(TensorType((units,), acc_dtype))
        return ParallelStep(step, _FullReduce(step, rows, units, partials, per_unit), partials.buffer)
    return None


def flat_reduce_units(n: int) -> tuple:
    """(elements per unit, units) of a flat reduction of n elements: units of UNIT_ELEMENTS, or of
    a multiple of it so that there are at most MAX_REDUCE_UNITS (the same count at run time:
    _FullReduce._per_unit)."""
    blocks = -(-n // UNIT_ELEMENTS)
    per_unit = UNIT_ELEMENTS * -(-blocks // MAX_REDUCE_UNITS)
    return per_unit, -(-n // per_unit)


class ParallelStep(Step):
    """A step whose loop runs as units on the thread pool (see the module docstring)."""

    def __init__(self, step, split, scratch=None):
        self.step = step
        self.split = split
        self.scratch = scratch

    def reads(self):
        return self.step.reads() | ({self.scratch} if self.scratch else set())

    def writes(self):
        return self.step.writes() | ({self.scratch} if self.scratch else set())

    def emit(self, k):
        module, b = k.module, k.b
        buffers = sorted(self.step.reads() | self.step.writes() | ({self.scratch} if self.scratch else set()),
                         key=lambda buf: (buf.kind, buf.slot if buf.slot is not None else -1, buf.offset or 0))
        dynamic = is_symbolic(self.split.elements)  # the units read the run-time sizes too
        body = _units_function(module, f"{b.function.name}.units", buffers, self.split, dynamic)
        entry = _range_entry(module, f"{b.function.name}.range", body, len(buffers) + dynamic)
        ctx = b.alloca(_I8P, size=len(buffers) + dynamic, name="par.ctx")
        pointers = [k.pointer(buf) for buf in buffers] + ([k.sizes] if dynamic else [])
        for i, pointer in enumerate(pointers):
            b.store(b.bitcast(pointer, _I8P), b.gep(ctx, [k.i64(i)], inbounds=True))
        b.call(_parallel_for(module), [entry, ctx, units_value(k, self.split), k.i64(self.split.elements)])
        self.split.finish(k)


def units_value(k, split) -> ir.Value:
    """The i64 count of `split`'s units: a constant, or computed from the run-time sizes."""
    if split.units is not None:
        return k.i64(split.units)
    if hasattr(split, "run_time_units"):  # a count of its own (parallel_blas.py's rows)
        return split.run_time_units(k)
    count, per_unit = split.unit_count  # ceil(count / per_unit) of a run-time count
    return k.b.udiv(k.b.add(k.i64(count), k.i64(per_unit - 1)), k.i64(per_unit))


def _units_function(module, name, buffers, split, dynamic: bool = False) -> ir.Function:
    """`void name(i8* noalias buf..., [i8* sizes,] i64 first, i64 stop)`: units [first, stop),
    inlined into its caller; with `dynamic`, the run-time sizes vector follows the buffers."""
    n_args = len(buffers) + dynamic
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_I8P] * n_args + [I64, I64]), name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    for arg in fn.args[:len(buffers)]:
        arg.add_attribute("noalias")  # as lowering's steps: the buffers a step touches never overlap
    sizes_block = fn.append_basic_block("sizes") if dynamic else None  # run-time sizes, first
    k = Emitter(module, ir.IRBuilder(fn.append_basic_block("entry")), dict(zip(buffers, fn.args)))
    if dynamic:
        k.use_sizes(fn.args[len(buffers)], sizes_block)
    split.emit_units(k, fn.args[-2], fn.args[-1])
    k.b.ret_void()
    if dynamic:
        ir.IRBuilder(sizes_block).branch(fn.basic_blocks[1])
    return fn


def _range_entry(module, name, body, n_buffers) -> ir.Function:
    """`void name(i8** ctx, i64 first, i64 stop)`: what the pool calls (the buffers read from ctx)."""
    fn = ir.Function(module, _BODY, name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    ctx, first, stop = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    pointers = [b.load(b.gep(ctx, [ir.Constant(I64, i)], inbounds=True)) for i in range(n_buffers)]
    b.call(body, [*pointers, first, stop])
    b.ret_void()
    return fn


def declare_void(module, name: str) -> ir.Function:
    """`void name()` of `module`, declared on first use (the runtime's BLAS bracket)."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), name)
    return fn


def _parallel_for(module) -> ir.Function:
    fn = module.globals.get(PARALLEL_FOR)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_BODY.as_pointer(), _I8P.as_pointer(), I64, I64]),
                         PARALLEL_FOR)
    return fn


# --- loops with bounds known at run time ---------------------------------------------

def _min(k, a, n: int):
    return k.b.select(k.b.icmp_signed("<", a, k.i64(n)), a, k.i64(n))


def _max(k, a, n: int):
    return k.b.select(k.b.icmp_signed(">", a, k.i64(n)), a, k.i64(n))


def dynamic_loop(k, begin, end, lo: int, hi: int, body, carry=()):
    """`for i in range(begin, end)` (i64 values) where lo <= begin and end <= hi:
    body(i, *carry) returns the next carry; returns the last (or `carry` when empty)."""
    b = k.b
    carry = tuple(carry)
    pre = b.block
    head, done = b.append_basic_block("units.loop"), b.append_basic_block("units.end")
    b.cbranch(b.icmp_signed("<", begin, end), head, done)
    b.position_at_end(head)
    i = b.phi(I64, "i")
    i.add_incoming(begin, pre)
    k.note_range(i, lo, hi)
    phis = []
    for c in carry:
        p = b.phi(c.type)
        p.add_incoming(c, pre)
        phis.append(p)
    with k.scope():
        out = tuple(body(i, *phis)) if carry else (body(i), ())[1]
    nxt = b.add(i, k.i64(1), flags=("nuw", "nsw"))
    latch = b.block
    i.add_incoming(nxt, latch)
    for p, v in zip(phis, out):
        p.add_incoming(v, latch)
    b.cbranch(b.icmp_signed("<", nxt, end), head, done)
    b.position_at_end(done)
    return merge_carries(b, carry, pre, out, latch)


class _Rows:
    """Units of whole rows of the outermost axis of `shape` (about UNIT_ELEMENTS elements of work
    each, `work` per index), with the static cuts of each axis (placement_splits) kept, so each
    piece keeps its bounds."""

    def __init__(self, shape, splits, work: int = 1):
        self.shape = tuple(shape)
        self.splits = splits
        row = int(np.prod(self.shape[1:], dtype=np.int64)) * work
        self.rows_per_unit = max(1, UNIT_ELEMENTS // max(row, 1))
        if self.shape and is_symbolic(self.shape[0]):  # a run-time count: ParallelStep computes it
            self.units, self.unit_count = None, (self.shape[0], self.rows_per_unit)
        else:
            self.units = -(-self.shape[0] // self.rows_per_unit) if self.shape else 0

    def edges(self) -> list:
        """0, the cuts of the outermost axis inside it, and its size, in order (for every N of a
        run-time size: `a <= b` must hold for every N, or this raises DynamicUnsupported)."""
        d0 = self.shape[0]
        inside = [c for c in self.splits[0] if 0 < c < d0]
        return [0] + sorted(inside, key=functools.cmp_to_key(_order)) + [d0]

    def loop(self, k, first, stop, body, carry=(), rows_per_unit=None):
        """Every index of units [first, stop) in C order: body(idx, *carry) -> carry.
        `rows_per_unit` (an i64 value) replaces the static count, for one known at run time."""
        d0 = self.shape[0]
        edges = self.edges()
        per_unit = k.i64(self.rows_per_unit) if rows_per_unit is None else rows_per_unit
        r0 = k.b.mul(first, per_unit)
        r1 = _min(k, k.b.mul(stop, per_unit), d0)
        for lo, hi in zip(edges, edges[1:]):
            carry = dynamic_loop(
                k, _max(k, r0, lo), _min(k, r1, hi), lo, hi,
                lambda i, *c: k.nest(self.shape[1:], lambda idx, *cc: body([i] + idx, *cc), c, splits=self.splits[1:]),
                carry,
            )
        return carry


def _order(a, b) -> int:
    """-1 when a <= b, 1 when b < a: decided for every N of a run-time size, or DynamicUnsupported."""
    if a == b:
        return 0
    try:
        return 1 if b <= a else -1
    except DynamicUnsupported:  # N-1 <= 1 holds for N = 2 only; 1 <= N-1 for every N >= 2
        return -1 if a <= b else 1


class _FlatFill:
    alignable = True  # unit u covers the u-th run of elements in C order (parallel_together.py)

    def __init__(self, fills):
        self.fills = fills
        self.elements = fills[0].dest.type.size
        if is_symbolic(self.elements):  # a run-time count: ParallelStep computes it
            self.units, self.unit_count = None, (self.elements, UNIT_ELEMENTS)
        else:
            self.units = -(-self.elements // UNIT_ELEMENTS)

    def emit_units(self, k, first, stop):
        n = self.elements
        begin = k.b.mul(first, k.i64(UNIT_ELEMENTS))
        end = _min(k, k.b.mul(stop, k.i64(UNIT_ELEMENTS)), n)
        dynamic_loop(k, begin, end, 0, n,
                     lambda i: [f.dest.store_linear(k, i, f.src.read_linear(k, i)) for f in self.fills])

    def finish(self, k):
        pass


class _RowFill:
    alignable = True  # unit u covers the u-th run of elements in C order (parallel_together.py)

    def __init__(self, fills, rows: _Rows):
        self.fills = fills
        self.rows = rows
        self.elements = fills[0].dest.type.size
        self.units = rows.units
        self.unit_count = getattr(rows, "unit_count", None)

    def emit_units(self, k, first, stop):
        self.rows.loop(k, first, stop, lambda idx: [f.dest.store(k, idx, f.src.read(k, idx)) for f in self.fills])

    def finish(self, k):
        pass


class _RowReduce:
    """Reduce of trailing axes only: units of rows of the kept axes, each output element computed
    by the step's own loop, as on one thread."""

    alignable = True  # unit u covers the u-th run of elements in C order (parallel_together.py)

    def __init__(self, step: Reduce, rows: _Rows):
        self.step = step
        self.rows = rows
        self.elements = step.src.type.size
        self.units = rows.units
        self.unit_count = getattr(rows, "unit_count", None)  # a run-time count of rows (dynamic versions)

    def emit_units(self, k, first, stop):
        rows = self.rows

        def outer_loop(shape, body, splits):
            rows.splits = splits
            rows.loop(k, first, stop, body)

        self.step.emit(k, outer_loop)

    def finish(self, k):
        pass


class _FullReduce:
    """Reduce of every axis: unit u reduces its elements into partials[u]; finish adds them in order."""

    alignable = True  # unit u covers the u-th run of elements in C order (parallel_together.py)

    def __init__(self, step: Reduce, rows, units, partials, per_unit=UNIT_ELEMENTS):
        self.step = step
        self.rows = rows
        self.units = units  # None: ceil(elements / per unit), counted at run time
        self.per_unit = per_unit  # elements per unit of a flat loop; None: computed at run time
        self.partials = partials
        self.elements = step.src.type.size
        if units is None:  # units of about UNIT_ELEMENTS, as far as parallel_together.py is concerned
            self.unit_count = (self.elements, UNIT_ELEMENTS)
        dtype = step.dest.dtype
        self.acc_dtype = Reduce.accumulator_dtype(step.kind, dtype)
        self.identity = lambda: constant(self.acc_dtype, reduction_identity(step.kind, self.acc_dtype))
        self.widen = (lambda k, v: k.b.fpext(v, F64)) if self.acc_dtype != dtype else (lambda k, v: v)

    def emit_units(self, k, first, stop):
        src, n = self.step.src, self.elements
        combine = combiner(self.step.kind, self.acc_dtype, fast=True)

        def unit(u):
            if self.rows is None:
                begin = k.b.mul(u, per_unit)
                end = _min(k, k.b.add(begin, per_unit), n)
                (acc,) = dynamic_loop(k, begin, end, 0, n,
                                      lambda i, a: (combine(k, a, self.widen(k, src.read_linear(k, i))),),
                                      (self.identity(),))
            else:
                (acc,) = self.rows.loop(k, u, k.b.add(u, k.i64(1)),
                                        lambda idx, a: (combine(k, a, self.widen(k, src.read(k, idx))),),
                                        (self.identity(),))
            self.partials.store_linear(k, u, acc)

        per_unit = self._per_unit(k)
        dynamic_loop(k, first, stop, 0, self.partials.type.size, unit)

    def _per_unit(self, k):
        """Elements per unit: UNIT_ELEMENTS times ceil(ceil(n / UNIT_ELEMENTS) / MAX_REDUCE_UNITS),
        as flat_reduce_units counts them for a static size."""
        if self.per_unit is not None:
            return k.i64(self.per_unit)
        b, unit, most = k.b, k.i64(UNIT_ELEMENTS), k.i64(MAX_REDUCE_UNITS)
        blocks = b.udiv(b.add(k.i64(self.elements), k.i64(UNIT_ELEMENTS - 1)), unit)
        return b.mul(b.udiv(b.add(blocks, k.i64(MAX_REDUCE_UNITS - 1)), most), unit)

    def run_time_units(self, k):
        per_unit = self._per_unit(k)
        return k.b.udiv(k.b.add(k.i64(self.elements), k.b.sub(per_unit, k.i64(1))), per_unit)

    def finish(self, k):
        self.combine_partials(k, self.units if self.units is not None else self.run_time_units(k))

    def combine_partials(self, k, units):
        """dest = the first `units` partials (an int, or an i64 value) combined in unit order."""
        combine = combiner(self.step.kind, self.acc_dtype, fast=False)  # in unit order: the same sum every time
        add = lambda u, a: (combine(k, a, load_fresh(k, self.partials, [u])),)  # noqa: E731
        if isinstance(units, int):
            (acc,) = k.loop(units, add, (self.identity(),))
        else:
            (acc,) = dynamic_loop(k, k.i64(0), units, 0, self.partials.type.size, add, (self.identity(),))
        dest = self.step.dest
        if self.acc_dtype != dest.dtype:
            acc = k.b.fptrunc(acc, value_type(dest.dtype))
        dest.store(k, [], acc)
