"""The compile cache: keys, counters, one compile per key across threads, background compiles."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from gradtape import codegen, ir, runtime
from gradtape.ir.ops import add, mul
from gradtape.runtime import config
from gradtape.runtime.cache_key import cache_key

from . import handmade_lowering
from .samples import add_fn, chain_fn, f64


def counters():
    info = runtime.cache_info()
    return {k: info[k] for k in ("hits", "misses", "compiles", "native", "fallbacks", "entries")}


def test_same_function_hits_and_compiles_nothing(handmade):
    fn = add_fn()
    cf = runtime.compile_function(fn)
    assert counters() == dict(hits=0, misses=1, compiles=1, native=1, fallbacks=0, entries=1)
    assert runtime.compile_function(fn) is cf
    assert counters() == dict(hits=1, misses=1, compiles=1, native=1, fallbacks=0, entries=1)
    assert len(handmade) == 1  # lowered once


def test_equal_function_built_separately_hits(handmade):
    cf = runtime.compile_function(add_fn())
    assert runtime.compile_function(add_fn()) is cf
    assert counters()["compiles"] == 1


def test_new_shape_is_one_compile(handmade):
    runtime.compile_function(add_fn((8,)))
    cf = runtime.compile_function(add_fn((9,)))
    runtime.compile_function(add_fn((9,)))
    assert counters() == dict(hits=1, misses=2, compiles=2, native=2, fallbacks=0, entries=2)
    np.testing.assert_array_equal(cf(np.ones(9), np.ones(9))[0], np.full(9, 2.0))


def test_compile_seconds_are_summed(handmade):
    a = runtime.compile_function(add_fn((2,)))
    b = runtime.compile_function(add_fn((3,)))
    assert runtime.cache_info()["compile_seconds"] == pytest.approx(a.compile_seconds + b.compile_seconds)
    assert a.compile_seconds > 0


def test_clear_cache_forgets_entries_and_counters(handmade):
    cf = runtime.compile_function(add_fn())
    runtime.clear_cache()
    assert counters() == dict(hits=0, misses=0, compiles=0, native=0, fallbacks=0, entries=0)
    assert runtime.compile_function(add_fn()) is not cf
    np.testing.assert_array_equal(cf(np.ones(8), np.ones(8))[0], np.full(8, 2.0))  # still callable


def test_key_tells_array_literals_apart():
    def with_constant(values):
        b = ir.Builder()
        x = b.input(f64(3))
        return b.build([x], [mul(x, b.literal(np.array(values)))])

    one, two = with_constant([1.0, 2.0, 3.0]), with_constant([1.0, 2.0, 4.0])
    assert str(one) == str(two)  # the text shows only const<f64[3]>
    assert cache_key(one) != cache_key(two)
    assert cache_key(one) == cache_key(with_constant([1.0, 2.0, 3.0]))


def test_key_holds_codegen_version(monkeypatch):
    fn = add_fn()
    before = cache_key(fn)
    monkeypatch.setattr(codegen, "CODEGEN_VERSION", codegen.CODEGEN_VERSION + 1)
    assert cache_key(fn) != before


def test_array_literals_get_their_own_compiled_function(monkeypatch):
    monkeypatch.setattr(codegen, "lower", lambda fn, name="": (_ for _ in ()).throw(codegen.Unsupported("t")))

    def with_constant(values):
        b = ir.Builder()
        x = b.input(f64(2))
        return b.build([x], [add(x, b.literal(np.array(values)))])

    x = np.zeros(2)
    assert runtime.compile_function(with_constant([1.0, 2.0]))(x)[0].tolist() == [1.0, 2.0]
    assert runtime.compile_function(with_constant([5.0, 6.0]))(x)[0].tolist() == [5.0, 6.0]


# -- threads ------------------------------------------------------------------------------


def _slow_lowering(monkeypatch, started: threading.Event, release: threading.Event):
    """A lowering that waits for `release`, so a second thread surely meets the key in flight."""
    lowered = []

    def lower(fn, name="gradtape_fn"):
        lowered.append(name)
        started.set()
        assert release.wait(10)
        return handmade_lowering.lower(fn, name)

    monkeypatch.setattr(codegen, "lower", lower)
    return lowered


def test_two_threads_meeting_a_new_key_compile_once(monkeypatch):
    started, release = threading.Event(), threading.Event()
    lowered = _slow_lowering(monkeypatch, started, release)
    results = [None, None]

    def compile_into(i):
        results[i] = runtime.compile_function(chain_fn())

    first = threading.Thread(target=compile_into, args=(0,))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=compile_into, args=(1,))
    second.start()
    deadline = time.monotonic() + 10
    while runtime.cache_info()["hits"] == 0 and time.monotonic() < deadline:
        second.join(0.001)  # until the second thread waits on the first one's build
    release.set()
    first.join(10)
    second.join(10)
    assert results[0] is results[1] and results[0].native
    assert len(lowered) == 1
    assert counters() == dict(hits=1, misses=1, compiles=1, native=1, fallbacks=0, entries=1)


def test_different_keys_compile_concurrently(handmade):
    fns = [add_fn((n,)) for n in range(1, 9)]
    results = {}

    def work(fn):
        results[fn.in_types[0].shape] = runtime.compile_function(fn)

    threads = [threading.Thread(target=work, args=(fn,)) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert counters()["compiles"] == 8 and len(handmade) == 8
    for (n,), cf in results.items():
        np.testing.assert_array_equal(cf(np.ones(n), np.arange(n, dtype=float))[0], np.arange(1.0, n + 1))


def test_failed_build_reaches_every_waiter_and_is_retried(monkeypatch):
    attempts = []

    def broken(fn, name="gradtape_fn"):
        attempts.append(name)
        raise ValueError("broken lowering")

    monkeypatch.setattr(codegen, "lower", broken)
    fut = runtime.compile_function_async(add_fn())
    with pytest.raises(runtime.CompileError, match="broken lowering"):
        fut.result(10)
    with pytest.raises(runtime.CompileError):
        runtime.compile_function(add_fn())
    assert len(attempts) == 2 and runtime.cache_info()["errors"] == 2


# -- background compile -------------------------------------------------------------------


def test_async_compile_returns_a_future_of_the_cached_entry(monkeypatch):
    started, release = threading.Event(), threading.Event()
    _slow_lowering(monkeypatch, started, release)
    fut = runtime.compile_function_async(chain_fn())
    assert started.wait(10)
    assert not fut.done()  # the caller is free: the interpreter can serve meanwhile
    stand_in = runtime.interpreted(chain_fn())
    a, b = np.ones((3, 4)), np.full((3, 4), 2.0)
    early = stand_in(a, b)
    assert stand_in.call_path == "interpreter"
    release.set()
    cf = fut.result(10)
    assert cf.native and runtime.compile_function(chain_fn()) is cf
    for got, want in zip(cf(a, b), early):
        np.testing.assert_allclose(got, want, rtol=1e-15)
    assert runtime.compile_function_async(chain_fn()).result(0) is cf  # a hit: already done


def test_wait_for_compiles_waits_for_builds_in_flight(monkeypatch):
    started, release = threading.Event(), threading.Event()
    _slow_lowering(monkeypatch, started, release)
    fut = runtime.compile_function_async(chain_fn())
    assert started.wait(10)
    assert runtime.wait_for_compiles(timeout=0.01) is False  # still held back
    runtime.clear_cache()  # a build clear_cache forgot is still waited for
    release.set()
    assert runtime.wait_for_compiles(timeout=30) is True
    assert fut.done() and fut.result().native
    assert runtime.wait_for_compiles(timeout=0) is True  # nothing in flight


def test_async_compile_off_compiles_in_the_caller(handmade, monkeypatch):
    monkeypatch.setattr(config, "async_compile", False)
    caller = threading.current_thread()
    seen = []
    monkeypatch.setattr(codegen, "lower", lambda fn, name: (seen.append(threading.current_thread()),
                                                           handmade_lowering.lower(fn, name))[1])
    fut = runtime.compile_function_async(add_fn())
    assert fut.done() and fut.result().native
    assert seen == [caller]


@pytest.mark.parametrize("value, expected", [("0", False), ("off", False), ("1", True), ("", False)])
def test_async_compile_setting_reads_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("GRADTAPE_ASYNC_COMPILE", value)
    assert config._flag("GRADTAPE_ASYNC_COMPILE", True) is expected
    monkeypatch.delenv("GRADTAPE_ASYNC_COMPILE")
    assert config._flag("GRADTAPE_ASYNC_COMPILE", True) is True


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")  # Python 3.12+: forking on purpose
def test_forked_child_compiles_in_the_background(handmade):
    import os

    runtime.compile_function_async(add_fn((2,))).result(10)  # the parent's worker thread exists
    pid = os.fork()
    if pid == 0:  # the child: its worker thread is gone, a new one must serve it
        code = 1
        try:
            cf = runtime.compile_function_async(add_fn((3,))).result(20)
            code = 0 if cf.native and cf(np.ones(3), np.ones(3))[0].tolist() == [2.0] * 3 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
