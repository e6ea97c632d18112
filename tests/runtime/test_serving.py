"""ServedFunction (gradtape/runtime/serving.py): the policy staged functions and tape
backward plans share. A Function is run by the reference interpreter until its native
code, compiled once (in the background by default), is ready; a failed compile falls
back to the interpreter with a warning; threads calling at once start one compile.

Every result is checked against NumPy (samples.chain_reference). The lowering is the
hand-made one (conftest.py), held back where a test needs a compile in flight.
"""
from __future__ import annotations

import concurrent.futures
import threading
import warnings

import numpy as np
import pytest

from gradtape import codegen, runtime
from gradtape.runtime import config
from gradtape.runtime.serving import ServedFunction

from . import handmade_lowering
from .samples import chain_fn, chain_reference

A, B = np.linspace(-1.0, 1.0, 12).reshape(3, 4), np.linspace(0.5, 2.0, 12).reshape(3, 4)


def held_lowering(monkeypatch, fail_first: bool = False):
    """The hand-made lowering, waiting for the returned Event; with `fail_first`, its first
    call raises. Returns (release, lowered): lowered lists the thread of each call."""
    release, lowered = threading.Event(), []

    def lower(fn, name="gradtape_fn"):
        lowered.append(threading.current_thread().name)
        assert release.wait(30)
        if fail_first and len(lowered) == 1:
            raise ValueError("broken lowering")
        return handmade_lowering.lower(fn, name)

    monkeypatch.setattr(codegen, "lower", lower)
    return release, lowered


def assert_chain(outs, a=A, b=B):
    for got, want in zip(outs, chain_reference(a, b), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)


def test_the_interpreter_serves_until_the_background_compile_is_done(monkeypatch):
    release, lowered = held_lowering(monkeypatch)
    served = ServedFunction(chain_fn())
    run, final, started = served.runner()
    assert (final, started, run.call_path) == (False, True, "interpreter")
    assert_chain(run(A, B))
    assert runtime.cache_info()["misses"] == 0  # submitted only once the starting run is done
    served.submit()
    for _ in range(3):  # compiling (held back): interpreted
        assert_chain(served(A, B))
    assert served.compiled is None and runtime.cache_info()["in_flight"] == 1
    release.set()
    assert runtime.wait_for_compiles(30)
    run, final, started = served.runner()
    assert (final, started, run.native) == (True, False, True)
    assert served.compiled is run
    assert_chain(served(A, B))
    assert len(lowered) == 1 and lowered[0].startswith("gradtape-compile")
    assert runtime.cache_info()["compiles"] == 1


def test_compile_after_sets_the_run_that_starts_the_compile(handmade):
    served = ServedFunction(chain_fn(), compile_after=3)
    for n in range(1, 6):
        assert_chain(served(A + n, B), A + n)
        runtime.wait_for_compiles(30)
        assert runtime.cache_info()["misses"] == (0 if n < 3 else 1)
    assert served.compiled.native and runtime.cache_info()["compiles"] == 1


def test_without_background_compiles_the_starting_run_compiles_and_runs_native(monkeypatch):
    monkeypatch.setattr(config, "async_compile", False)
    release, lowered = held_lowering(monkeypatch)
    release.set()
    served = ServedFunction(chain_fn())
    run, final, started = served.runner()
    assert (final, started, run.native) == (True, True, True)
    assert_chain(run(A, B))
    assert lowered == [threading.current_thread().name] and runtime.cache_info()["in_flight"] == 0


def test_a_stand_in_compiler_runs_in_the_caller_even_with_background_compiles():
    made = []
    served = ServedFunction(chain_fn(), compiler=lambda fn: made.append(runtime.interpreted(fn)) or made[-1])
    assert_chain(served(A, B))
    assert served.compiled is made[0] and len(made) == 1
    assert runtime.cache_info()["misses"] == 0  # the runtime's cache was never asked


def test_prepare_makes_what_is_compiled_once_and_the_interpreter_runs_fn(handmade):
    fn, prepared = chain_fn(), []

    def prepare(f):
        prepared.append(f)
        return chain_fn((3, 4))  # an equal Function, told apart by identity

    served = ServedFunction(fn, prepare=prepare)
    run, _, _ = served.runner()
    assert run.fn is fn and prepared == []  # nothing prepared before the compile is submitted
    served.submit()
    runtime.wait_for_compiles(30)
    assert_chain(served(A, B))
    assert prepared == [fn] and served.compiled.fn is not fn


def test_a_failed_compile_falls_back_to_the_interpreter_with_a_warning(monkeypatch):
    monkeypatch.setattr(config, "compile_errors", "warn")
    release, _ = held_lowering(monkeypatch, fail_first=True)
    served = ServedFunction(chain_fn())
    with warnings.catch_warnings(record=True) as caught:  # raised on the compile thread
        warnings.simplefilter("always")
        assert_chain(served(A, B))
        release.set()
        assert runtime.wait_for_compiles(30)
    (message,) = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert message.startswith("gradtape: compiling { a:f64[3,4]") and message.endswith(
        " failed (ValueError: broken lowering); the reference interpreter will run it "
        "(set GRADTAPE_COMPILE_ERRORS=raise to stop here)")
    assert_chain(served(A, B))
    assert served.compiled.native is False
    assert served.compiled.fallback_reason == "compile error: ValueError: broken lowering"


def test_a_background_compile_that_raised_is_compiled_again_in_the_caller(monkeypatch):
    release, lowered = held_lowering(monkeypatch, fail_first=True)  # compile_errors is "raise"
    release.set()
    served = ServedFunction(chain_fn())
    assert_chain(served(A, B))
    runtime.wait_for_compiles(30)
    assert_chain(served(A, B))  # the failure collected: compiled again here, and it passes
    assert served.compiled.native
    assert len(lowered) == 2 and lowered[1] == threading.current_thread().name


def test_a_lasting_compile_error_surfaces_in_the_caller_and_the_next_run_tries_again(monkeypatch):
    monkeypatch.setattr(config, "async_compile", False)
    attempts = []

    def broken(fn, name="gradtape_fn"):
        attempts.append(name)
        raise ValueError("broken lowering")

    monkeypatch.setattr(codegen, "lower", broken)
    served = ServedFunction(chain_fn())
    for n in (1, 2):
        with pytest.raises(runtime.CompileError, match=r"compiling .* failed: ValueError: broken lowering"):
            served(A, B)
        assert len(attempts) == n and served.compiled is None


def test_threads_calling_at_once_start_one_compile_and_all_get_right_results(monkeypatch):
    release, lowered = held_lowering(monkeypatch)
    served = ServedFunction(chain_fn())
    n_threads, calls = 8, 25
    barrier, starts = threading.Barrier(n_threads), []

    def work(i):
        barrier.wait(30)
        a = A * (i + 1)
        for k in range(calls):
            if i == 0 and k == calls // 2:
                release.set()  # native code becomes ready while the others are calling
            run, final, started = served.runner()
            try:
                assert_chain(run(a, B), a)
            finally:
                if started and not final:
                    served.submit()
            starts.append(started)

    with concurrent.futures.ThreadPoolExecutor(n_threads) as pool:
        list(pool.map(work, range(n_threads), timeout=60))  # re-raises a thread's failure
    assert runtime.wait_for_compiles(30)
    assert len(starts) == n_threads * calls and sum(starts) == 1
    assert len(lowered) == 1 and runtime.cache_info()["compiles"] == 1
    assert_chain(served(A, B))
    assert served.compiled.native
