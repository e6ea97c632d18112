"""An LLVM abort cannot kill the process, and the program that caused one compiles (issue 14).

LLVM asserts (SIGABRT) inside its X86 DAG combiner on AVX-512 targets for
the issue's program: a select of two FP constants whose condition only the
code generator sees is constant. target.py lets InstCombine forward the
stored value that made it constant, and by default every compile runs in
llvm_worker.py's child process (config.llvm_worker_after = 0), so any other
abort costs a warning and the interpreter, not the program.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import gradtape as gt
from gradtape.runtime import config, jit, llvm_worker
from gradtape.runtime.errors import CompileError


def _issue_program(x0):
    v = gt.pad(gt.sum(x0, axis=0), [(1, 0)])
    v = gt.where(v > -1.289, v * -1.289, v + 1.289)
    return gt.sum(gt.tanh(x0 + v))


def _issue_program_numpy(x0):
    v = np.pad(np.sum(x0, axis=0), [(1, 0)])
    v = np.where(v > -1.289, v * -1.289, v + 1.289)
    return np.sum(np.tanh(x0 + v))


X0 = np.array([[0.1], [-1.2], [0.5]])

# An AArch64 intrinsic: on any x86-64 target LLVM stops in instruction selection ("LLVM ERROR:
# Cannot select"), with SIGABRT in llvmlite's assertion-enabled build: a real LLVM abort.
ABORTING_IR = """
define void @k(ptr %p) {
  %v = load <4 x float>, ptr %p
  %r = call <4 x float> @llvm.aarch64.neon.frecpe.v4f32(<4 x float> %v)
  store <4 x float> %r, ptr %p
  ret void
}
declare <4 x float> @llvm.aarch64.neon.frecpe.v4f32(<4 x float>)
"""


@pytest.fixture
def fresh_worker(monkeypatch):
    """The default settings (every compile in the worker); a worker of this test's own."""
    monkeypatch.setattr(config, "llvm_worker_after", 0)
    monkeypatch.setattr(config, "disk_cache", False)
    monkeypatch.setattr(llvm_worker, "_refused", False)
    monkeypatch.setattr(llvm_worker, "_current", None)
    yield
    if llvm_worker._current is not None:
        llvm_worker._current.close()


def _central_differences(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_every_compile_goes_to_the_worker_by_default():
    env = {k: v for k, v in os.environ.items() if k != "GRADTAPE_LLVM_WORKER_AFTER"}
    script = "from gradtape.runtime import config; print(config.llvm_worker_after)"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


@pytest.mark.parametrize("cpu", ["skylake-avx512", "znver4", "x86-64-v2"])
def test_issue_program_gradient_compiles_for_avx512_targets_without_abort(cpu):
    """Only compiled (not run: this machine may lack AVX-512), in a new process compiling in
    itself, so an LLVM abort shows as that process's death by SIGABRT."""
    script = (
        "import numpy as np, gradtape as gt\n"
        "from gradtape.codegen.lowering import lower_function\n"
        "from gradtape.runtime import fastcall, jit\n"
        "from tests.runtime.test_llvm_abort import _issue_program, X0\n"
        "fn = gt.make_ir(gt.grad(_issue_program), X0)\n"
        "low = lower_function(fn, 'f')\n"
        "if fastcall._preparing is not None:\n"
        "    fastcall._preparing.join()  # the call wrappers, compiled when gt.grad staged a function\n"
        "before = jit.in_process_compiles\n"
        "obj = jit.compile_object(str(low.module), dict(low.externals), tuple(low.libraries), {}, 'f')\n"
        "print('object', len(obj), jit.in_process_compiles - before)\n"
    )
    env = dict(os.environ, GRADTAPE_CPU=cpu, GRADTAPE_LLVM_WORKER_AFTER="-1", GRADTAPE_DISK_CACHE="0")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, f"GRADTAPE_CPU={cpu}: exit {out.returncode}\n{out.stderr[-2000:]}"
    assert out.stdout.startswith("object ") and out.stdout.split()[-1] == "1"  # compiled in that process


def test_issue_program_gradient_compiles_here_and_matches_finite_differences(fresh_worker, monkeypatch):
    monkeypatch.setattr(config, "async_compile", False)
    g = gt.grad(_issue_program)(X0)  # compile_errors is "raise" in these tests: a fallback would raise
    np.testing.assert_allclose(g, _central_differences(_issue_program_numpy, X0), rtol=1e-7, atol=1e-9)


def test_issue_program_in_an_eager_loop_compiles_its_backward_plan_and_stays_right(fresh_worker, monkeypatch):
    monkeypatch.setattr(config, "async_compile", False)
    want = _central_differences(_issue_program_numpy, X0)
    for step in range(8):  # the plan compiles after a few runs (backward_plan.compile_after_runs)
        x = gt.constant(X0)
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = _issue_program(x)
        np.testing.assert_allclose(tape.gradient(y, x), want, rtol=1e-7, atol=1e-9, err_msg=f"step {step}")


def test_a_real_llvm_abort_is_a_compile_error_and_the_next_compile_works(fresh_worker):
    with pytest.raises(CompileError, match=r"LLVM's worker process died compiling k \(killed by signal 6\)"):
        jit.compile_object(ABORTING_IR, {}, (), {}, "k")
    obj = jit.compile_object("define void @k() {\n  ret void\n}\n", {}, (), {}, "k")
    assert obj[:4] == b"\x7fELF"


def test_an_llvm_abort_while_compiling_falls_back_to_the_interpreter_with_a_warning(fresh_worker, monkeypatch):
    """Each compile's IR is swapped for one that makes LLVM abort in the worker."""
    monkeypatch.setattr(config, "compile_errors", "warn")
    monkeypatch.setattr(config, "async_compile", False)
    compile_ = llvm_worker.Worker.compile
    monkeypatch.setattr(llvm_worker.Worker, "compile",
                        lambda self, ir_text, *rest: compile_(self, ABORTING_IR, *rest))
    x = np.array([0.5, -1.0, 2.0])
    with pytest.warns(RuntimeWarning, match=r"worker process died compiling .*killed by signal 6"):
        g = gt.grad(lambda x: gt.sum(gt.sin(x) * x))(x)
    np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=1e-13)
