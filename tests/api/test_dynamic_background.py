"""A dynamic version builds in the background, by a rule that does not depend on timing.

The call that meets a family's second size runs in the reference
interpreter and then starts the dynamic version's build on the compile
thread; that size's calls run in the interpreter INTERPRETED_RUNS times in
all, and the next call that needs the build (that size after those, or a
third size) waits for it and runs it. These tests check which code served each call
(the interpreter's bits, the compile log, the counters), whatever the
build's speed.
"""
import logging
import os
import signal
import threading

import numpy as np
import pytest

import gradtape as gt
from gradtape import runtime
from gradtape.runtime import cache
from gradtape.staging.dynamic_versions import INTERPRETED_RUNS
from tests.slow_builds import slow_background_builds

pytestmark = pytest.mark.native


def loss(w, x):
    return gt.sum(gt.tanh(x @ w) ** 2) / x.shape[0]


def _reference(w, x):
    h = np.tanh(x @ w)
    return x.T @ (2 * h * (1 - h * h)) / x.shape[0]


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(6, 3)), rng.normal(size=(n, 6))


def _program(staged, w, x):
    (program,) = [p for parts, p in staged.programs() if parts[2] == x.shape]
    return program


def test_second_size_runs_in_the_interpreter_then_the_dynamic_version(caplog):
    caplog.set_level(logging.INFO, logger="gradtape")
    staged = gt.grad(loss)
    w, x = _data(32)
    staged(w, x)
    w, x = _data(10, seed=1)
    first = staged(w, x)
    program = _program(staged, w, x)
    # bit for bit the reference interpreter's result: nothing native ran it
    np.testing.assert_array_equal(first, runtime.interpreted(program.fn)(w, x)[0])
    assert "dynamic (from (w: f64[6,3], x: f64[10,6])): started in the background; this call runs in the " \
           "interpreter" in caplog.text
    assert staged.cache_info().compiles == 2  # the first size's, and the dynamic version's (when it started)
    assert runtime.wait_for_compiles(timeout=300)
    for _ in range(INTERPRETED_RUNS - 1):  # the interpreter still, although the build is done
        np.testing.assert_array_equal(staged(w, x), first)
    again = staged(w, x)  # waits for the build if it is not done
    assert program.compiled.dynamic and program.compiled.n == 10
    assert "with its dynamic version at N=10 (no compile)" in caplog.text
    assert "compile grad(loss) dynamic for (f64[6,3], f64[N,6]), N >= 2 a run-time size" in caplog.text
    np.testing.assert_allclose(again, first, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(again, _reference(w, x), rtol=1e-12, atol=1e-15)
    assert staged.cache_info().compiles == 2
    assert staged.compiled_for(w, x)[0] is program.compiled  # the fast path runs it from now on


def test_a_third_size_waits_for_the_build_and_runs_it(caplog):
    caplog.set_level(logging.INFO, logger="gradtape")
    staged = gt.grad(loss)
    for n in (32, 10):
        staged(*_data(n))
    w, x = _data(17, seed=2)
    got = staged(w, x)
    assert _program(staged, w, x).compiled.dynamic  # no interpreter: the build was waited for
    assert "with its dynamic version at N=17 (no compile)" in caplog.text
    np.testing.assert_allclose(got, _reference(w, x), rtol=1e-12, atol=1e-15)
    assert staged.cache_info().compiles == 2


def test_the_dynamic_version_is_counted_in_the_runtime_cache_info():
    staged = gt.grad(loss)
    staged(*_data(32))
    before = runtime.cache_info()
    staged(*_data(10))
    assert runtime.wait_for_compiles(timeout=300)
    after = runtime.cache_info()
    built = (after["compiles"] + after["disk_loads"]) - (before["compiles"] + before["disk_loads"])
    assert built == 1 and after["native"] - before["native"] == 1


def test_a_build_that_fails_leaves_the_program_its_own_compile(caplog):
    def f(x):  # control flow: no dynamic code, found when the build lowers it
        return gt.cond(gt.sum(x) > 0, lambda v: gt.sum(v * v), lambda v: gt.sum(gt.sin(v)), x)

    caplog.set_level(logging.INFO, logger="gradtape")
    staged = gt.grad(f)
    for n in (10, 20):
        np.testing.assert_allclose(staged(np.linspace(-1, 2, n)), 2 * np.linspace(-1, 2, n), rtol=1e-15)
    x = np.linspace(-1, 2, 20)
    for _ in range(INTERPRETED_RUNS):  # the interpreter's runs, then one that waited and compiled
        np.testing.assert_allclose(staged(x), 2 * x, rtol=1e-15)
    (program,) = [p for parts, p in staged.programs() if parts[0] == (20,)]
    assert program.compiled.native and not getattr(program.compiled, "dynamic", False)
    assert "no dynamic version of grad(f)" in caplog.text
    assert staged.cache_info().compiles == 3  # 10, the dynamic attempt, 20's own


def test_same_bits_whatever_the_builds_speed(monkeypatch):
    """The loop's results do not depend on when the build finishes: a slow build gives the same bits."""
    def loop():
        gt.clear_cache()
        staged = gt.grad(loss)
        w = _data(1)[0]
        out = []
        for epoch in range(INTERPRETED_RUNS + 2):  # size 10 interpreted, then the dynamic version
            for n in (32, 32, 10):
                g = staged(w, _data(n, seed=n)[1])
                w = w - 0.1 * g
                out.append(g)
        return out

    fast = loop()
    slow_background_builds(monkeypatch)
    slowed = loop()
    for a, b in zip(fast, slowed):
        np.testing.assert_array_equal(a, b)


def test_background_build_runs_once_by_whoever_begins_it():
    calls = []
    build = cache.BackgroundBuild(lambda: calls.append(1) or len(calls))
    assert build.result() == 1  # not submitted: run here
    build.submit()  # nothing left to run
    assert runtime.wait_for_compiles(timeout=10)
    assert calls == [1]
    build = cache.BackgroundBuild(lambda: calls.append(2) or "made")
    build.submit()
    assert build.result() == "made" and calls == [1, 2]

    def boom():
        raise ValueError("no")

    build = cache.BackgroundBuild(boom)
    build.submit()
    with pytest.raises(ValueError, match="no"):
        build.result()


def test_the_interpreted_call_runs_openblas_on_one_thread(monkeypatch):
    from gradtape.codegen import blas
    from gradtape.runtime import parallel

    before = blas.thread_count()
    if before is None:
        pytest.skip("no OpenBLAS")
    seen = []
    serial = parallel.one_blas_thread(lambda a: seen.append(blas.thread_count()) or a)
    assert serial(3) == 3
    assert seen == [1] and blas.thread_count() == before


def test_programs_that_differ_in_more_than_sizes_find_it_in_the_build(caplog):
    def f(x):  # an array constant of the size: the traces at two sizes differ in a literal
        return gt.sum(x * np.arange(x.shape[0], dtype=np.float64))

    caplog.set_level(logging.INFO, logger="gradtape")
    staged = gt.grad(f)
    for n in (10, *[20] * (INTERPRETED_RUNS + 1), 30):  # 20: interpreted runs, then its own compile
        np.testing.assert_array_equal(staged(np.ones(n)), np.arange(n, dtype=np.float64))
    assert "the programs at two sizes differ in more than sizes" in caplog.text
    (program,) = [p for parts, p in staged.programs() if parts[0] == (20,)]
    assert program.compiled.native and not getattr(program.compiled, "dynamic", False)
    assert staged.cache_info().compiles == 4  # 10, the dynamic attempt, 20's own, 30's


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork: POSIX only")
def test_a_child_forked_while_the_compile_thread_builds_runs_the_build_itself():
    """The compile thread is not in a forked child: a build it was running is begun again there
    by the first caller that needs it, instead of being waited for forever."""
    started, release = threading.Event(), threading.Event()

    def make():
        if os.getpid() == parent:  # in the parent: hold the compile thread until the fork is done
            started.set()
            release.wait(60)
        return 42

    parent = os.getpid()
    build = cache.BackgroundBuild(make)
    build.submit()
    assert started.wait(60)
    pid = os.fork()
    if pid == 0:  # the child: alarm guards against the hang this test is about
        signal.alarm(30)
        os._exit(0 if build.result() == 42 else 1)
    release.set()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert build.result() == 42
