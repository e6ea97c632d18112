"""The `gradtape` logger says why a staged function traced and compiled again."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape import runtime
from gradtape.staging import compile_log
from gradtape.tracer import backward_cache


def scaled_power(x, n):
    return gt.sum(gt.tanh(x) ** n)


@pytest.fixture
def log(caplog):
    caplog.set_level(logging.INFO, logger="gradtape")
    return caplog


def _lines(caplog, start: str) -> list:
    return [r.getMessage() for r in caplog.records if r.name == "gradtape" and r.getMessage().startswith(start)]


def test_first_trace_and_compile_are_logged_with_their_stages(log, monkeypatch):
    monkeypatch.setattr(runtime.config, "async_compile", False)
    g = gt.grad(scaled_power, static_argnums=(1,))
    x = np.linspace(0.0, 1.0, 3)
    np.testing.assert_allclose(g(x, 2), 2 * np.tanh(x) * (1 - np.tanh(x) ** 2), rtol=1e-13)
    (trace,) = _lines(log, "trace ")
    assert trace.startswith("trace grad(scaled_power) #1 for (x: f64[3], n=2): first call [trace ")
    assert "transform+optimize " in trace
    (compiled,) = _lines(log, "compile ")
    assert compiled.startswith("compile grad(scaled_power) for (x: f64[3], n=2): ")
    assert "LLVM optimize" in compiled or "loaded from the disk cache" in compiled


def test_a_background_compile_is_logged_when_it_finishes_not_at_the_next_call(log, monkeypatch):
    monkeypatch.setattr(runtime.config, "async_compile", True)
    g = gt.grad(scaled_power, static_argnums=(1,))
    x = np.linspace(0.0, 1.0, 4)
    np.testing.assert_allclose(g(x, 3), 3 * np.tanh(x) ** 2 * (1 - np.tanh(x) ** 2), rtol=1e-13)
    assert runtime.wait_for_compiles(timeout=60)
    # The compile's thread logs in the future's done-callback, which runs just after waiters wake.
    deadline = time.monotonic() + 30
    while not _lines(log, "compile ") and time.monotonic() < deadline:
        time.sleep(0.01)
    (compiled,) = _lines(log, "compile ")  # no second call: the compile's own thread logged it
    assert compiled.startswith("compile grad(scaled_power) for (x: f64[4], n=3): ")
    g(x, 3)
    assert len(_lines(log, "compile ")) == 1  # and only once


def test_a_shape_change_names_the_argument_and_both_shapes(log):
    f = gt.differentiable(scaled_power, static_argnums=(1,))
    f(np.ones(3), 2)
    f(np.ones(4), 2)
    assert _lines(log, "trace differentiable(scaled_power) #2")[0].startswith(
        "trace differentiable(scaled_power) #2 for (x: f64[4], n=2): argument x: shape (3,) -> (4,) [trace ")


def test_a_static_argument_change_names_both_values(log):
    f = gt.value_and_grad(scaled_power, static_argnums=(1,))
    f(np.ones(3), 3)
    f(np.ones(3), 4)
    (line,) = _lines(log, "trace value_and_grad(scaled_power) #2")
    assert "for (x: f64[3], n=4): static argument n: 3 -> 4 [" in line


def test_a_dtype_change_names_both_dtypes(log):
    f = gt.differentiable(scaled_power, static_argnums=(1,))
    f(np.ones(3), 2)
    f(np.ones(3, np.float32), 2)
    (line,) = _lines(log, "trace differentiable(scaled_power) #2")
    assert "for (x: f32[3], n=2): argument x: dtype float64 -> float32 [" in line


def test_the_change_is_against_the_nearest_signature(log):
    f = gt.differentiable(scaled_power, static_argnums=(1,))
    f(np.ones(3), 2)
    f(np.ones(5), 7)
    f(np.ones(5), 8)  # nearest: (f64[5], 7), one static change; (f64[3], 2) differs in both arguments
    (line,) = _lines(log, "trace differentiable(scaled_power) #3")
    assert "n=8): static argument n: 7 -> 8 [" in line


def test_a_function_traced_again_and_again_warns_once_naming_the_argument(monkeypatch):
    monkeypatch.setattr(compile_log, "retrace_warning_after", 3)
    f = gt.differentiable(scaled_power, static_argnums=(1,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 8):
            f(np.ones(2), n)
    retraces = [w for w in caught if issubclass(w.category, compile_log.RetraceWarning)]
    assert len(retraces) == 1
    assert str(retraces[0].message).startswith(
        "differentiable(scaled_power) was traced 4 times; argument n changed in 3 of the retraces "
        "(last: (x: f64[2], n=4))")


def test_nothing_is_logged_by_default_and_gradtape_log_turns_it_on():
    code = ("import numpy as np, gradtape as gt\n"
            "gt.grad(lambda x: gt.sum(x * x))(np.ones(3))\n")
    env = {k: v for k, v in os.environ.items() if k != "GRADTAPE_LOG"}
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert quiet.returncode == 0 and "gradtape: trace" not in quiet.stderr
    loud = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(env, GRADTAPE_LOG="compiles"), timeout=120)
    assert loud.returncode == 0, loud.stderr
    assert "gradtape: trace grad(<lambda>) #1 for (x: f64[3]): first call [trace " in loud.stderr


def _tape_gradient(x, scale):
    with gt.GradientTape() as tape:
        tape.watch(x)
        loss = gt.sum(gt.tanh(x) * x) * scale
    return tape.gradient(loss, x).numpy()


def test_a_tape_whose_python_scalar_changes_says_so(log):
    backward_cache.clear_cache()
    x = gt.constant(np.linspace(0.1, 0.9, 3))
    t = np.tanh(x.numpy())
    for scale in (0.5, 0.5, 0.25):
        np.testing.assert_allclose(_tape_gradient(x, scale), scale * (t + x.numpy() * (1 - t * t)), rtol=1e-13)
    plans = _lines(log, "tape backward plan #")
    assert len(plans) == 2 and plans[-1].endswith(" ms]")  # 0.5 twice: one plan
    assert ": the Python scalar 0.5 -> 0.25 in mul (op " in plans[-1]
    assert "pass a value that changes as gradtape.constant(...) so that the plan is reused" in plans[-1]


def test_a_tape_whose_shapes_change_says_which_input(log):
    # The log compares with the nearest plan cached before: clear plans earlier tests cached.
    backward_cache.clear_cache()
    _tape_gradient(gt.constant(np.ones(3)), 2.0)
    _tape_gradient(gt.constant(np.ones(5)), 2.0)
    assert "input 0 is now f64[5] (another shape or dtype than before)" in _lines(log, "tape backward plan #")[-1]


def _stages_and_total(line: str):
    """{stage: ms} of a compile line `... compiled in T ms [a 1.0 ms, b 2.0 ms]`, and T."""
    total = float(line.split(" in ", 1)[1].split(" ms [", 1)[0])
    stages = {}
    for part in line[line.index(" ms [") + 5:-1].split(", "):
        name, ms, _ = part.rsplit(" ", 2)
        stages[name] = float(ms)
    return stages, total


def test_a_compiles_stages_add_up_to_its_total(log, monkeypatch):
    monkeypatch.setattr(runtime.config, "async_compile", False)
    monkeypatch.setattr(runtime.config, "disk_cache", False)
    g = gt.grad(scaled_power, static_argnums=(1,))
    g(np.linspace(0.0, 1.0, 6), 5)
    (compiled,) = _lines(log, "compile ")
    stages, total = _stages_and_total(compiled)
    assert {"lower", "LLVM optimize", "load"} <= set(stages)
    assert abs(sum(stages.values()) - total) <= 0.05 * len(stages) + 0.05  # each rounded to 0.1 ms


def test_a_compile_that_waits_for_llvms_worker_names_the_wait(tmp_path):
    """The worker may be starting or busy with another thread's compile (the call wrappers are
    compiled in the background when a function is staged): here a thread holds it for 2 s,
    longer than tracing and lowering take."""
    code = ("import threading, time, numpy as np, gradtape as gt\n"
            "from gradtape.runtime import llvm_worker\n"
            "held = threading.Event()\n"
            "def hold():\n"
            "    with llvm_worker.lock():\n"
            "        held.set()\n"
            "        time.sleep(2.0)\n"
            "threading.Thread(target=hold).start()\n"
            "held.wait()\n"
            "gt.grad(lambda x: gt.sum(gt.tanh(x) * x))(np.ones(3))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("GRADTAPE_LLVM_WORKER_AFTER", "GRADTAPE_DUMP")}
    env.update(GRADTAPE_LOG="compiles", GRADTAPE_ASYNC_COMPILE="0", GRADTAPE_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    (line,) = [s for s in out.stderr.splitlines() if s.startswith("gradtape: compile grad(<lambda>)")]
    stages, total = _stages_and_total(line)
    assert "to and from LLVM's worker" in stages
    assert stages["waiting for LLVM's worker"] > 0
    assert abs(sum(stages.values()) - total) <= 0.05 * len(stages) + 0.05
