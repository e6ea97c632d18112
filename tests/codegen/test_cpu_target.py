"""GRADTAPE_CPU: which CPU the code generator targets (gradtape.codegen.cpu).

The levels are checked against the host, unknown names are refused, the
choice reaches the runtime's cache key, code built for the baseline level
runs and matches the interpreter, and every op's code (forward and
gradient) also builds as aarch64 object code: the code generator makes no
x86-only assumption beyond the choices it asks the target about.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import llvmlite.binding as llvm
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.codegen import cpu
from gradtape.codegen.lowering import lower_function

from ..ir.op_specs import all_specs
from .jit_helper import jit
from .lower_helpers import assert_matches, compiles_natively


def test_levels_add_features_in_order():
    v1, v2, v3, v4 = (cpu.level_features(level) for level in cpu.LEVELS)
    assert v1 < v2 < v3 < v4
    assert "sse4.2" in v2 and "avx2" not in v2
    assert {"avx2", "fma"} <= v3 and "avx512f" not in v3
    assert {"avx512f", "avx512vl"} <= v4


def test_the_baseline_level_assumes_no_avx():
    target = cpu.resolve("x86-64-v2")
    assert (target.name, target.features) == ("x86-64-v2", "")
    assert target.has("sse4.2") and not target.has("avx")


def test_host_is_the_default_with_every_feature_it_has():
    host = cpu.resolve("host")
    assert host.name == llvm.get_host_cpu_name()
    assert host.known == {name for name, on in llvm.get_host_cpu_features().items() if on}


def test_an_unknown_cpu_name_is_refused_with_the_choices():
    with pytest.raises(cpu.TargetError, match=r"GRADTAPE_CPU='pentium9' is not a CPU LLVM knows.*x86-64-v2"):
        cpu.resolve("pentium9")


def test_a_level_above_this_cpu_is_refused_naming_what_it_lacks(monkeypatch):
    sse_only = cpu.Cpu(llvm.get_process_triple(), "nehalem", "", cpu.level_features("x86-64-v2"))
    monkeypatch.setattr(cpu, "_host", lambda: sse_only)
    with pytest.raises(cpu.TargetError, match=r"x86-64-v3: this CPU \(nehalem\) lacks avx, avx2, bmi"):
        cpu.resolve("x86-64-v3")
    assert cpu.resolve("x86-64-v2").name == "x86-64-v2"


def test_baseline_code_uses_no_avx_and_matches_the_interpreter():
    fn = gt.make_ir(gt.grad(lambda x: gt.sum(gt.tanh(x) * gt.exp(-x) + x * x)), np.ones(64))
    x = np.linspace(-3, 3, 64)
    with cpu.targeting(cpu.resolve("x86-64-v2")):
        jitted = jit(lower_function(fn, "f"), assembly=True)
    assert re.search(r"\b(add|mul)pd\s+%xmm", jitted.assembly), "no packed SSE arithmetic"
    assert not re.search(r"%[yz]mm|\bv(add|mul|fmadd\w*)[ps]d\b", jitted.assembly)
    (got,) = jitted(x)
    assert_matches(got, ir.eval_function(fn, [x])[0], rtol=1e-13)


def test_the_choice_reaches_the_cache_key_and_the_results():
    """In a new process (the choice is read once): GRADTAPE_CPU=x86-64-v2 is what the runtime's
    identity reports, and a compiled gradient is right."""
    script = (
        "import json, numpy as np, gradtape as gt\n"
        "from gradtape.runtime import target\n"
        "g = gt.grad(lambda x: gt.sum(gt.sin(x) * x))(np.arange(5.0))\n"
        "print(json.dumps({'cpu': target.identity()['cpu'], 'g': g.tolist()}))\n"
    )
    env = dict(os.environ, GRADTAPE_CPU="x86-64-v2", GRADTAPE_DISK_CACHE="0", GRADTAPE_ASYNC_COMPILE="0")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    x = np.arange(5.0)
    assert report["cpu"] == "x86-64-v2"
    np.testing.assert_allclose(report["g"], np.sin(x) + x * np.cos(x), rtol=1e-13)


def test_a_bad_choice_fails_the_first_compile_with_the_message():
    env = dict(os.environ, GRADTAPE_CPU="pentium9", GRADTAPE_DISK_CACHE="0")
    script = "import gradtape.runtime.target as t; t.initialize()"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "GRADTAPE_CPU='pentium9' is not a CPU LLVM knows" in out.stderr


def _forward_and_gradient(spec):
    """The spec's forward Function, and its gradient's when every argument is a float array."""
    arrays = spec.args(np.random.default_rng(0))
    forward = gt.make_ir(spec.fn, *arrays)
    floats = all(np.asarray(a).dtype.kind == "f" for a in arrays)
    loss = spec.fn if forward.outvars[0].type.shape == () else (lambda *xs, f=spec.fn: gt.sum(f(*xs)))
    gradient = gt.make_ir(gt.grad(loss), *arrays) if floats else None
    return [forward] + ([gradient] if gradient is not None else [])


_ARM = cpu.foreign("aarch64-unknown-linux-gnu")


# One test per spec, so that pytest-xdist shares them out (together they take minutes).
@pytest.mark.parametrize("spec", all_specs(), ids=str)
def test_every_op_builds_as_aarch64_object_code(spec):
    machine = llvm.Target.from_triple(_ARM.triple).create_target_machine(cpu=_ARM.name, features="", opt=2)
    for fn in _forward_and_gradient(spec):
        if not compiles_natively(fn):
            continue  # an op of test_native_coverage.INTERPRETED_ONLY
        with cpu.targeting(_ARM):
            lowered = lower_function(fn, "f")
        module = llvm.parse_assembly(str(lowered.module))
        module.triple, module.data_layout = machine.triple, str(machine.target_data)
        module.verify()
        obj = machine.emit_object(module)
        assert obj[:4] == b"\x7fELF" and obj[18] == 183, f"{spec.name}: not an aarch64 ELF object"  # EM_AARCH64


def test_most_specs_build_native_code_for_aarch64():
    """The per-spec test above skips only the interpreted-only ops: most specs do build."""
    native = sum(compiles_natively(gt.make_ir(spec.fn, *spec.args(np.random.default_rng(0)))) for spec in all_specs())
    assert native > 0.9 * len(all_specs())
