"""LLVM's worker process: after config.llvm_worker_after compiles, objects come from a child process
that is replaced every WORKER_COMPILES requests, gives the same machine code, and whose death costs
a warning and the interpreter, never the process."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from gradtape import codegen, runtime
from gradtape.runtime import config, jit, llvm_worker, target

from .samples import chain_fn, chain_reference


@pytest.fixture
def worker_always(monkeypatch):
    """Every compile in the worker; each test starts without one and closes what it started."""
    monkeypatch.setattr(config, "llvm_worker_after", 0)
    monkeypatch.setattr(llvm_worker, "_refused", False)
    monkeypatch.setattr(llvm_worker, "_current", None)
    yield
    if llvm_worker._current is not None:
        llvm_worker._current.close()


def check(cf, shape, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=shape), rng.normal(size=shape)
    for got, want in zip(cf(a, b), chain_reference(a, b)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_compiles_run_in_the_worker_and_give_the_same_object(worker_always):
    fn = chain_fn((3, 5))
    low = codegen.lower(fn, "gradtape_worker_probe")
    text, externals = str(low.module), dict(low.externals)
    before = jit.in_process_compiles
    timings: dict = {}
    from_worker = jit.compile_object(text, externals, low.libraries, timings, "probe")
    assert jit.in_process_compiles == before and llvm_worker._current.served == 1
    assert {"parse", "optimize", "emit_object"} <= set(timings)  # the child's stage times
    config.llvm_worker_after = -1
    assert jit.compile_object(text, externals, low.libraries, {}, "probe") == from_worker
    assert jit.in_process_compiles == before + 1


def test_a_function_compiled_in_the_worker_is_right(worker_always):
    cf = runtime.compile_function(chain_fn((4, 3)))
    assert cf.native and llvm_worker._current is not None
    check(cf, (4, 3))


def test_the_worker_is_replaced_after_its_share_of_compiles(worker_always, monkeypatch):
    monkeypatch.setattr(llvm_worker, "WORKER_COMPILES", 2)
    pids = []
    for k in range(1, 4):
        cf = runtime.compile_function(chain_fn((2, k)))
        check(cf, (2, k))
        pids.append(llvm_worker._current.process.pid)
    assert pids[0] == pids[1] != pids[2]


def test_a_worker_that_dies_mid_compile_costs_a_warning_not_the_process(worker_always, monkeypatch):
    monkeypatch.setattr(config, "compile_errors", "warn")
    compile_ = llvm_worker.Worker.compile

    def die_first(self, *args):
        os.kill(self.process.pid, signal.SIGKILL)  # as an LLVM abort would end it
        self.process.wait()
        return compile_(self, *args)

    monkeypatch.setattr(llvm_worker.Worker, "compile", die_first)
    with pytest.warns(RuntimeWarning, match="worker process died compiling .*killed by signal 9"):
        cf = runtime.compile_function(chain_fn((3, 3)))
    assert not cf.native  # the interpreter serves it
    check(cf, (3, 3))
    monkeypatch.setattr(llvm_worker.Worker, "compile", compile_)
    cf = runtime.compile_function(chain_fn((5, 2)))  # a new worker takes over
    assert cf.native
    check(cf, (5, 2))


def test_a_worker_for_another_target_is_not_used(worker_always, monkeypatch):
    here = target.identity()
    monkeypatch.setattr(target, "identity", lambda: dict(here, cpu="another-cpu"))
    before = jit.in_process_compiles
    cf = runtime.compile_function(chain_fn((2, 9)))
    assert cf.native and jit.in_process_compiles == before + 1 and llvm_worker._current is None
    check(cf, (2, 9))


def test_an_ir_error_in_the_worker_is_a_compile_error(worker_always):
    with pytest.raises(runtime.CompileError, match="LLVM rejected the IR of bad"):
        jit.compile_object("define void @f() { ret i32 0 }", {}, (), {}, "bad")
    assert llvm_worker._current.process.poll() is None  # the worker lives on
