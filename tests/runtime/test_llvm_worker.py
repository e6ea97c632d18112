"""LLVM's worker process: after config.llvm_worker_after compiles, objects come from a child process
that is replaced every WORKER_COMPILES requests, gives the same machine code, and whose death costs
a warning and the interpreter, never the process."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

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


def test_a_prestarted_worker_is_the_one_the_first_compile_uses(worker_always):
    llvm_worker.prestart()
    worker = llvm_worker._current
    assert worker is not None and worker.identity is None  # started, not waited for
    llvm_worker.prestart()
    assert llvm_worker._current is worker  # once
    cf = runtime.compile_function(chain_fn((3, 7)))
    assert cf.native and llvm_worker._current is worker and worker.served == 1
    assert "worker_wait" in cf.compile_stages and "worker_transfer" in cf.compile_stages
    check(cf, (3, 7))


def test_prestart_starts_nothing_when_compiles_stay_in_this_process(worker_always, monkeypatch):
    for after, dump in ((-1, frozenset()), (5, frozenset()), (0, frozenset({"llvm"}))):
        monkeypatch.setattr(config, "llvm_worker_after", after)
        monkeypatch.setattr(config, "dump", dump)
        llvm_worker.prestart()
        assert llvm_worker._current is None


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/maps"), reason="reads /proc/<pid>/maps")
def test_the_worker_loads_llvm_but_not_numpy(worker_always):
    """The child imports the runtime's compile modules only, not gradtape's __init__ (NumPy, the tracer)."""
    llvm_worker.prestart()
    worker = llvm_worker._current
    assert worker.ready() == target.identity()
    with open(f"/proc/{worker.process.pid}/maps") as f:
        libraries = {line.split()[-1].rsplit("/", 1)[-1] for line in f if "/" in line}
    assert any("llvmlite" in name for name in libraries)
    assert not any("_multiarray_umath" in name for name in libraries)


def test_a_process_that_never_compiles_leaves_no_worker_behind(tmp_path):
    script = (
        "import gradtape as gt\n"
        "from gradtape.runtime import llvm_worker\n"
        "f = gt.grad(lambda x: gt.sum(x * x))  # a staged function: the worker starts\n"
        "print(llvm_worker._current.process.pid, flush=True)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("GRADTAPE_LLVM_WORKER_AFTER", "GRADTAPE_DUMP")}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                         check=True)
    pid = int(out.stdout.split()[-1])
    # The parent killed and reaped it at exit: no process (nor zombie) has that pid any more.
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")  # Python 3.12+: forking on purpose
def test_a_forked_child_starts_its_own_worker(worker_always):
    llvm_worker.prestart()
    parent_worker = llvm_worker._current
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker (and its pipes) is not its own
        code = 1
        try:
            cf = runtime.compile_function(chain_fn((2, 11)))
            a, b = np.ones((2, 11)), np.full((2, 11), 2.0)
            ok = cf.native and np.allclose(cf(a, b)[0], np.cos(a * b) - a)
            os.write(write, str(llvm_worker._current.process.pid).encode())
            code = 0 if ok else 2
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    child_worker = int(os.read(read, 64) or b"0")
    os.close(read)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert child_worker not in (0, parent_worker.process.pid)
    cf = runtime.compile_function(chain_fn((2, 12)))  # the parent's own worker still serves it
    assert llvm_worker._current is parent_worker and parent_worker.served == 1
    check(cf, (2, 12))
