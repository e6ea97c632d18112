"""The thread pool's back-off on a crowded machine (runtime/parallel_pool.py): a call whose
worker straggles (the caller waited for it longer than its units would have taken the caller)
makes the next calls run on the caller alone for a while; each crowded call doubles the factor
that sets how long, and each good call halves it (down to BACK_OFF). A worker that ran most
units while the caller was held up is a good call.

The units are a small native function that sleeps on every thread but the caller's, so a
straggling worker is made, not waited for."""
from __future__ import annotations

import ctypes

import pytest
from llvmlite import ir as llir

from gradtape.runtime import jit, parallel
from gradtape.runtime.parallel_pool import BACK_OFF, MAX_BACK_OFF

_i32, _i64 = llir.IntType(32), llir.IntType(64)
_ptr = llir.IntType(8).as_pointer()
_LIBC = ctypes.CDLL(None)
_LIBC.pthread_self.restype = ctypes.c_ulong


def _body_ir() -> str:
    """`body(ctx, first, stop)`: sleeps ctx[1] microseconds per unit on the thread whose
    pthread id is ctx[0] (the caller), ctx[2] on any other (a worker)."""
    mod = llir.Module("pool_back_off_test")
    fn = llir.Function(mod, llir.FunctionType(llir.VoidType(), [_ptr.as_pointer(), _i64, _i64]), "units")
    self_id = llir.Function(mod, llir.FunctionType(_i64, []), "pthread_self")
    usleep = llir.Function(mod, llir.FunctionType(_i32, [_i32]), "usleep")
    ctx, first, stop = fn.args
    b = llir.IRBuilder(fn.append_basic_block())
    word = [b.ptrtoint(b.load(b.gep(ctx, [llir.Constant(_i64, k)])), _i64) for k in range(3)]
    mine = b.icmp_unsigned("==", b.call(self_id, []), word[0])
    micro = b.mul(b.select(mine, word[1], word[2]), b.sub(stop, first))
    b.call(usleep, [b.trunc(micro, _i32)])
    b.ret_void()
    return str(mod)


@pytest.fixture(scope="module")
def pool():
    externals = {name: ctypes.cast(getattr(_LIBC, name), ctypes.c_void_p).value for name in ("pthread_self", "usleep")}
    code = jit.jit_compile(_body_ir(), externals, (), {}, "pool back-off test")
    run = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
        parallel.pool_address())
    saved = parallel.threads, parallel.min_elements
    parallel.configure(threads=2, min_elements=0)
    words = parallel._pool.words

    def call(caller_us: int, worker_us: int, units: int = 16):
        ctx = (ctypes.c_void_p * 3)(_LIBC.pthread_self(), caller_us, worker_us)
        run(code.address("units"), ctypes.addressof(ctx), units, 1 << 30)

    yield call, words
    parallel.configure(threads=saved[0], min_elements=saved[1])
    del code


def test_a_straggling_worker_doubles_the_factor_and_sends_calls_alone(pool):
    call, words = pool
    words["back_off"].value, words["alone_until"].value = 64, 0
    # The caller's units take 1 ms each, a worker's 40 ms: the caller waits for the unit the worker took.
    for _ in range(5):  # the worker may be too slow to wake to take one at all: try again
        call(1000, 40_000)
        if words["back_off"].value == 128:
            break
    assert words["back_off"].value == 128
    assert words["alone_until"].value > 0
    before = parallel.worker_units()
    call(0, 40_000)  # within the pause: the caller runs every unit
    assert parallel.worker_units() == before


def test_a_worker_that_ran_the_units_while_the_caller_was_held_up_is_a_good_call(pool):
    call, words = pool
    words["back_off"].value, words["alone_until"].value = 64, 0
    # The caller's unit takes 20 ms, a worker's none: the worker runs the other units meanwhile,
    # and nobody waits. (The rule before counted a caller that ran under a quarter of the units
    # as crowded and doubled the factor.)
    before = parallel.worker_units()
    call(20_000, 0)
    assert parallel.worker_units() > before  # the worker took part (it had 20 ms to wake)
    assert words["back_off"].value == 32
    assert words["alone_until"].value == 0


def test_the_factor_stops_at_its_maximum(pool):
    call, words = pool
    words["back_off"].value, words["alone_until"].value = MAX_BACK_OFF, 0
    for _ in range(5):
        words["alone_until"].value = 0
        call(1000, 40_000)
        if words["alone_until"].value:
            break
    assert words["alone_until"].value > 0
    assert words["back_off"].value == MAX_BACK_OFF


def test_a_good_call_halves_the_factor_rather_than_resetting_it(pool):
    call, words = pool
    words["back_off"].value, words["alone_until"].value = 256, 0
    call(0, 0)
    # Halved by a good call (128), or doubled if a busy machine made this one crowded (512): never reset.
    assert words["back_off"].value in (128, 512)
    seen = [words["back_off"].value]
    for _ in range(60):  # good calls bring it down to BACK_OFF, a halving at a time
        words["alone_until"].value = 0
        call(0, 0)
        seen.append(words["back_off"].value)
        if seen[-1] == BACK_OFF:
            break
    assert seen[-1] == BACK_OFF
    assert all(b in (a // 2, a * 2, max(a // 2, BACK_OFF), min(a * 2, MAX_BACK_OFF)) for a, b in zip(seen, seen[1:]))

