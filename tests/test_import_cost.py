"""`import gradtape` loads NumPy, the IR, the tracer and the functions, and what a compile needs
at the first compile: not llvmlite, networkx, SciPy nor the code generator (issue 24.7).

What is imported is deterministic, so that is what these tests check (the time
it takes is bench/import_time.py's). The public names loaded at first use
(gradtape/_lazy.py) are the objects their modules define, listed by dir()
and given by `from gradtape import *`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import gradtape as gt
from gradtape import codegen, ir, runtime

_FIRST_CALL = """
import json, sys
import gradtape as gt
import numpy as np

loaded = [m for m in ("llvmlite", "networkx", "scipy", "gradtape.codegen") if m in sys.modules]
x = np.array([0.5, -1.0, 2.0])
g = gt.grad(lambda x: gt.sum(gt.tanh(x) * x))
gradient = g(x)
compiled = next(iter(g._programs.values())).compiled
print(json.dumps({"loaded_at_import": loaded, "gradient": gradient.tolist(), "native": compiled.native,
                  "llvmlite_after": "llvmlite" in sys.modules}))
"""


def _run(code: str, tmp_path, **env) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in ("GRADTAPE_LLVM_WORKER_AFTER", "GRADTAPE_DUMP")}
    environ.update(GRADTAPE_CACHE_DIR=str(tmp_path), GRADTAPE_ASYNC_COMPILE="0", **env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("worker_after", ["0", "-1"])  # LLVM in its worker process (the default), or here
def test_import_loads_no_llvm_networkx_or_scipy_and_the_first_staged_call_compiles(tmp_path, worker_after):
    result = json.loads(_run(_FIRST_CALL, tmp_path, GRADTAPE_LLVM_WORKER_AFTER=worker_after))
    assert result["loaded_at_import"] == []
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(result["gradient"], np.tanh(x) + x * (1 - np.tanh(x) ** 2), rtol=1e-13)
    assert result["native"] and result["llvmlite_after"]


def test_every_public_name_is_listed_and_star_import_gives_it(tmp_path):
    code = ("import json, gradtape as gt\n"
            "names = {}\n"
            "exec('from gradtape import *', names)\n"
            "print(json.dumps({'all': gt.__all__, 'dir': dir(gt), 'star': sorted(names)}))\n")
    result = json.loads(_run(code, tmp_path))
    assert len(result["all"]) > 300
    assert set(result["all"]) <= set(result["dir"])
    assert set(result["all"]) <= set(result["star"])


def test_names_loaded_at_first_use_are_their_modules_objects():
    from gradtape import aot, caches, training
    from gradtape.codegen import api, lowered
    from gradtape.ir import graph
    from gradtape.runtime import cache, compiled, serving
    from gradtape.staging import sparse

    assert (gt.compile, gt.load, gt.export_c, gt.AotFunction, gt.ShapeDtype, gt.cache_info) == (
        aot.compile, aot.load, aot.export_c, aot.AotFunction, aot.ShapeDtype, aot.cache_info)
    assert gt.clear_cache is caches.clear_cache and gt.train_step is training.train_step
    assert (gt.sparse_jacobian, gt.sparse_hessian, gt.COOTriple) == (sparse.sparse_jacobian, sparse.sparse_hessian,
                                                                     sparse.COOTriple)
    assert gt.optimizers.Adam.__module__ == "gradtape.optimizers.adam" and gt.random.key
    assert runtime.compile_function is cache.compile_function and runtime.ServedFunction is serving.ServedFunction
    assert runtime.CompiledFunction is compiled.CompiledFunction and compiled.compile_function is cache.compile_function
    assert codegen.lower is api.lower and codegen.Unsupported is lowered.Unsupported
    assert ir.reachable is graph.reachable and ir.dependency_graph is graph.dependency_graph
    assert "Example" in gt.compile.__doc__ and gt.sparse_jacobian.__doc__


def test_an_unknown_name_is_an_attribute_error():
    for module, name in ((gt, "no_such_name"), (runtime, "no_such_module"), (codegen, "no_such_module"),
                         (ir, "no_such_pass")):
        assert not hasattr(module, name)
        with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
            getattr(module, name)
