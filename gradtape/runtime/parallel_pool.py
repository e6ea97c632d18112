"""The thread pool that splits large fused loops, generated once in LLVM IR.

Generated code calls one function of this module for a loop it split into
units (codegen/parallel.py):

    void gradtape_rt_parallel_for(void (*body)(i8** ctx, i64 first, i64 stop),
                                  i8** ctx, i64 units, i64 elements)

which runs `body(ctx, u, u + 1)` for every unit u in range(units), on the
caller and the pool's workers, and returns when all of them are done. It
runs `body(ctx, 0, units)` on the caller alone when there are no workers,
when `elements` is below the threshold, or when another thread is using
the pool (each unit writes its own memory, so how units are spread over
threads never changes a result).

Why native threads in IR rather than Python threads or OpenBLAS's: a
Python thread needs the GIL to start each call (tens of microseconds), and
OpenBLAS's thread server takes jobs as its internal `blas_queue_t`, whose
layout changes between versions. These workers never touch Python.

Protocol (every shared word is accessed with sequentially consistent
atomics; x86-64's order makes them cheap):

- `state` packs (job generation << 32 | next unit to claim). The caller
  publishes a job by storing `fn`, `ctx`, `units`, `done = 0`, then a new
  generation with unit 0. Threads claim a unit by compare-and-swap on
  `state`, so a thread that read the job's fields of an older generation
  cannot claim a unit of a newer job: its swap fails.
- When every unit is done the caller stores unit SENTINEL (no unit is
  claimable) before it writes any field of the next job.
- Workers wait for `seq` to change: they spin for `spin_cycles` (time
  stamp counter) after each job, then sleep in futex_wait; the caller
  wakes sleepers only when `sleepers` says there are some.
- Claiming units one at a time (about 16k elements each) balances the
  load: a worker that another process delays takes fewer units and the
  caller takes the rest.
- `busy` lets one caller at a time use the pool; a second Python thread
  calling compiled code meanwhile runs its loops alone.
- A call where splitting cost more than it saved (the caller waited for
  other threads' units longer than those units would have taken it: a
  worker lost its core holding one) makes the following calls run alone
  for a while (`alone_until`: 16 times its duration, doubled for each
  crowded call and halved for each good one, between 16 and 1024 times,
  at most 0.1 s), so that a crowded machine costs little more than one
  thread, and a busy one that still lets the workers help keeps them.
- Worker i takes part while i < `workers` (set by parallel.py), and
  leaves its loop when `stop` is set (at interpreter exit).

The module also holds the bracket generated code puts around BLAS steps,
which keeps OpenBLAS on one thread meanwhile (blas_serial.py).
"""
from __future__ import annotations

from llvmlite import ir

from ..codegen.parallel import PARALLEL_FOR
from . import blas_serial

WORKER = "gradtape_rt_pool_worker"
SENTINEL = 0xFFFFFFFF
# Settings parallel.py writes (i64 globals): how many workers take part, the
# smallest loop (in elements) worth splitting, how long an idle worker spins.
SETTINGS = ("workers", "min_elements", "spin_cycles")
# Words parallel.py resets in a forked child, whose pool has no threads.
STATE = ("state", "busy", "sleepers", "seq", "stop", "alone_until", "back_off")
# Units the workers ran since the pool started (for tests and benchmarks: proof the workers took part).
WORKER_UNITS = "worker_units"

_i1 = ir.IntType(1)
_i8 = ir.IntType(8)
_i32 = ir.IntType(32)
_i64 = ir.IntType(64)
_ptr = _i8.as_pointer()
_pptr = _ptr.as_pointer()
BODY = ir.FunctionType(ir.VoidType(), [_pptr, _i64, _i64])

_SYS_FUTEX = 202  # x86-64
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
# The caller waiting for a unit another thread runs spins this long (time stamp counter cycles,
# about 20 µs), then yields its core: the thread it waits for may be queued behind it.
_CALLER_SPIN_CYCLES = 50_000
BACK_OFF, MAX_BACK_OFF = 16, 1024
MAX_ALONE_CYCLES = 250_000_000  # about 0.1 s: how soon a machine that became quiet gets used again


def global_name(word: str) -> str:
    return f"gradtape_pool_{word}"


def _c(ty, v):
    return ir.Constant(ty, v)


class _PoolModule:
    def __init__(self):
        self.mod = m = ir.Module(name="gradtape_thread_pool")
        self.words = {}
        for name, ty in [("state", _i64), ("done", _i64), ("seq", _i32), ("sleepers", _i32), ("busy", _i32),
                         ("stop", _i32), ("fn", BODY.as_pointer()), ("ctx", _pptr), ("units", _i64),
                         (WORKER_UNITS, _i64), ("alone_until", _i64), ("back_off", _i64),
                         *((s, _i64) for s in SETTINGS)]:
            g = ir.GlobalVariable(m, ty, global_name(name))
            g.initializer = _c(ty, SENTINEL if name == "state" else None if name in ("fn", "ctx") else 0)
            g.align = 64  # its own cache line: workers spin on some, the caller writes others
            self.words[name] = g
        self.syscall = ir.Function(m, ir.FunctionType(_i64, [_i64], var_arg=True), "syscall")
        self.sched_yield = ir.Function(m, ir.FunctionType(_i32, []), "sched_yield")
        self.pause = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")
        self.cycles = ir.Function(m, ir.FunctionType(_i64, []), "llvm.readcyclecounter")
        self.run_units = self._emit_run_units()
        blas_serial.emit(m, global_name, self.pause)
        self._emit_parallel_for()
        self._emit_worker()

    # --- helpers -------------------------------------------------------------------

    def load(self, b, name):
        g = self.words[name]
        return b.load_atomic(g, "seq_cst", g.type.pointee.width // 8 if isinstance(g.type.pointee, ir.IntType) else 8)

    def store(self, b, name, value):
        g = self.words[name]
        b.store_atomic(value, g, "seq_cst", value.type.width // 8 if isinstance(value.type, ir.IntType) else 8)

    def rmw(self, b, op, name, value):
        return b.atomic_rmw(op, self.words[name], value, "seq_cst")

    def futex(self, b, op: int, value):
        addr = b.ptrtoint(self.words["seq"], _i64)
        b.call(self.syscall, [_c(_i64, _SYS_FUTEX), addr, _c(_i64, op), value, _c(_i64, 0)])

    # --- the functions -------------------------------------------------------------

    def _emit_run_units(self):
        """`i64 run_units()`: claim and run units of the current job until none is left; returns how many."""
        fn = ir.Function(self.mod, ir.FunctionType(_i64, []), "gradtape_pool_run_units")
        fn.linkage = "internal"
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        claim, run, out = (fn.append_basic_block(s) for s in ("claim", "run", "out"))
        entry = b.block
        b.branch(claim)
        b.position_at_end(claim)
        ran = b.phi(_i64)
        ran.add_incoming(_c(_i64, 0), entry)
        s = self.load(b, "state")
        unit = b.and_(s, _c(_i64, SENTINEL))
        b.cbranch(b.icmp_unsigned("<", unit, self.load(b, "units")), run, out)
        b.position_at_end(run)
        body, ctx = self.load(b, "fn"), self.load(b, "ctx")
        swapped = b.extract_value(b.cmpxchg(self.words["state"], s, b.add(s, _c(_i64, 1)), "seq_cst", "seq_cst"), 1)
        go = fn.append_basic_block("go")
        ran.add_incoming(ran, b.block)
        b.cbranch(swapped, go, claim)
        b.position_at_end(go)
        b.call(body, [ctx, unit, b.add(unit, _c(_i64, 1))])
        self.rmw(b, "add", "done", _c(_i64, 1))
        ran.add_incoming(b.add(ran, _c(_i64, 1)), b.block)
        b.branch(claim)
        b.position_at_end(out)
        b.ret(ran)
        return fn

    def _emit_parallel_for(self):
        fn = ir.Function(self.mod, ir.FunctionType(ir.VoidType(), [BODY.as_pointer(), _pptr, _i64, _i64]),
                         PARALLEL_FOR)
        body, ctx, units, elements = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        alone, shared, publish = (fn.append_basic_block(s) for s in ("alone", "shared", "publish"))
        worth = b.and_(b.icmp_signed(">=", units, _c(_i64, 2)),
                       b.icmp_signed(">=", elements, self.load(b, "min_elements")))
        worth = b.and_(worth, b.icmp_signed(">", self.load(b, "workers"), _c(_i64, 0)))
        worth = b.and_(worth, b.icmp_unsigned(">=", b.call(self.cycles, []), self.load(b, "alone_until")))
        b.cbranch(worth, shared, alone)

        b.position_at_end(alone)
        b.call(body, [ctx, _c(_i64, 0), units])
        b.ret_void()

        b.position_at_end(shared)
        took = b.extract_value(b.cmpxchg(self.words["busy"], _c(_i32, 0), _c(_i32, 1), "seq_cst", "seq_cst"), 1)
        b.cbranch(took, publish, alone)

        b.position_at_end(publish)
        started = b.call(self.cycles, [])  # before the wake: it may hand this core to the worker
        self.store(b, "fn", body)
        self.store(b, "ctx", ctx)
        self.store(b, "units", units)
        self.store(b, "done", _c(_i64, 0))
        generation = b.add(b.lshr(self.load(b, "state"), _c(_i64, 32)), _c(_i64, 1))
        generation = b.and_(generation, _c(_i64, 0xFFFFFFFF))
        first = b.shl(generation, _c(_i64, 32))
        self.store(b, "state", first)
        self.rmw(b, "add", "seq", _c(_i32, 1))
        wake, run = fn.append_basic_block("wake"), fn.append_basic_block("run")
        b.cbranch(b.icmp_unsigned("!=", self.load(b, "sleepers"), _c(_i32, 0)), wake, run)
        b.position_at_end(wake)
        self.futex(b, _FUTEX_WAKE_PRIVATE, _c(_i64, 0x7FFFFFFF))
        b.branch(run)

        b.position_at_end(run)
        ran = b.call(self.run_units, [])
        # Units other threads claimed may still be running: wait for them (spin, then yield the core).
        wait, spin, yield_, finish = (fn.append_basic_block(s) for s in ("wait", "spin", "yield", "finish"))
        t0 = b.call(self.cycles, [])
        b.branch(wait)
        b.position_at_end(wait)
        b.cbranch(b.icmp_unsigned("==", self.load(b, "done"), units), finish, spin)
        b.position_at_end(spin)
        b.call(self.pause, [])
        waited = b.sub(b.call(self.cycles, []), t0)
        b.cbranch(b.icmp_unsigned(">", waited, _c(_i64, _CALLER_SPIN_CYCLES)), yield_, wait)
        b.position_at_end(yield_)
        b.call(self.sched_yield, [])
        b.branch(wait)

        b.position_at_end(finish)
        self._back_off_when_crowded(b, started, ran, t0, units)
        self.store(b, "state", b.or_(first, _c(_i64, SENTINEL)))
        self.store(b, "busy", _c(_i32, 0))
        b.ret_void()

    def _back_off_when_crowded(self, b, started, ran, own_done, units):
        """Run loops alone for a while (BACK_OFF times this call's duration) when splitting this
        call cost more than it saved: the caller waited for the other threads' units longer than
        those units would have taken it (its own time per unit in this call, times theirs), plus
        the spin it starts with. That is a worker that lost its core holding a unit, on a machine
        where other processes hold the cores.

        A worker that ran units while the caller was off its core (the caller ran few of them,
        or none) is no reason to back off: those units went ahead when the caller alone would
        have stood still. A rule that counted it as crowded (the caller ran under a quarter of
        its share) sent a GMM gradient beside two busy processes to one thread, at half a core,
        most of the time (bench/thread_budget.py)."""
        now = b.call(self.cycles, [])
        waited = b.sub(now, own_done)
        per_unit = b.udiv(b.sub(own_done, started), b.select(b.icmp_unsigned("==", ran, _c(_i64, 0)), _c(_i64, 1), ran))
        saved = b.add(b.mul(per_unit, b.sub(units, ran)), _c(_i64, _CALLER_SPIN_CYCLES))
        crowded = b.icmp_unsigned(">", waited, saved)
        # Each crowded call doubles the factor (16, 32, ... 1024) and a good call halves it: on a
        # machine that stays busy, calls that happen to find both cores free come between
        # crowded ones, and resetting there kept the pool splitting (and stalling) half the time.
        factor = self.load(b, "back_off")
        factor = b.select(b.icmp_unsigned("<", factor, _c(_i64, BACK_OFF)), _c(_i64, BACK_OFF), factor)
        halved = b.lshr(factor, _c(_i64, 1))
        halved = b.select(b.icmp_unsigned("<", halved, _c(_i64, BACK_OFF)), _c(_i64, BACK_OFF), halved)
        self.store(b, "back_off", b.select(crowded, b.select(b.icmp_unsigned("<", factor, _c(_i64, MAX_BACK_OFF)),
                                                             b.shl(factor, _c(_i64, 1)), factor), halved))
        with b.if_then(crowded):
            pause = b.mul(b.sub(now, started), factor)
            pause = b.select(b.icmp_unsigned("<", pause, _c(_i64, MAX_ALONE_CYCLES)), pause, _c(_i64, MAX_ALONE_CYCLES))
            self.store(b, "alone_until", b.add(now, pause))

    def _emit_worker(self):
        """`i8* worker(i8* index)`: the loop of worker `index` (a pthread start routine)."""
        fn = ir.Function(self.mod, ir.FunctionType(_ptr, [_ptr]), WORKER)
        index = fn.args[0]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        me = b.ptrtoint(index, _i64)
        top, work, idle, spin, pause, sleep, futex_wait, woke, leave = (
            fn.append_basic_block(s) for s in ("top", "work", "idle", "spin", "pause", "sleep", "futex", "woke", "leave"))
        start = b.block
        seen0 = self.load(b, "seq")
        b.branch(top)

        b.position_at_end(top)
        seen = b.phi(_i32)
        seen.add_incoming(seen0, start)
        b.cbranch(b.icmp_unsigned("!=", self.load(b, "stop"), _c(_i32, 0)), leave, work)

        b.position_at_end(work)
        take_part, skip = fn.append_basic_block("take_part"), fn.append_basic_block("skip")
        b.cbranch(b.icmp_signed("<", me, self.load(b, "workers")), take_part, skip)
        b.position_at_end(take_part)
        self.rmw(b, "add", WORKER_UNITS, b.call(self.run_units, []))
        b.branch(skip)
        b.position_at_end(skip)
        t0 = b.call(self.cycles, [])
        b.branch(idle)

        # Spin while a new job may come soon; then sleep until seq changes.
        b.position_at_end(idle)
        now_seq = self.load(b, "seq")
        b.cbranch(b.icmp_unsigned("!=", now_seq, seen), woke, spin)
        b.position_at_end(spin)
        elapsed = b.sub(b.call(self.cycles, []), t0)
        b.cbranch(b.icmp_unsigned("<", elapsed, self.load(b, "spin_cycles")), pause, sleep)
        b.position_at_end(pause)
        b.call(self.pause, [])
        b.branch(idle)

        b.position_at_end(sleep)
        self.rmw(b, "add", "sleepers", _c(_i32, 1))
        still = b.icmp_unsigned("==", self.load(b, "seq"), seen)
        after_wait = fn.append_basic_block("after_wait")
        b.cbranch(still, futex_wait, after_wait)
        b.position_at_end(futex_wait)
        self.futex(b, _FUTEX_WAIT_PRIVATE, b.zext(seen, _i64))
        b.branch(after_wait)
        b.position_at_end(after_wait)
        self.rmw(b, "sub", "sleepers", _c(_i32, 1))
        b.branch(woke)

        b.position_at_end(woke)
        latest = self.load(b, "seq")
        seen.add_incoming(latest, woke)
        b.branch(top)

        b.position_at_end(leave)
        b.ret(ir.Constant(_ptr, None))


def build_pool_module() -> ir.Module:
    """The pool's module: PARALLEL_FOR, WORKER and their globals (see the module docstring)."""
    return _PoolModule().mod
