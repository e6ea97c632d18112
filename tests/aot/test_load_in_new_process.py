"""A saved compiled function loads and runs in a fresh process that lacks the module defining it."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gradtape as gt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODULE = '''
import gradtape as gt

def loss(params, x):
    h = gt.tanh(x @ params["w"] + params["b"])
    return gt.sum(gt.log1p(h * h)) + 0.1 * gt.sum(params["w"] ** 2)
'''

CHILD = textwrap.dedent('''
    import importlib.util, json, sys
    import numpy as np
    import gradtape as gt
    assert importlib.util.find_spec("mylosses") is None, "the defining module must not be importable here"
    g = gt.load(sys.argv[1])
    data = np.load(sys.argv[2])
    value, grads = g({"b": data["b"], "w": data["w"]}, data["x"])
    print(json.dumps({"value": float(value), "dw": grads["w"].tobytes().hex(), "db": grads["b"].tobytes().hex(),
                      "modules": sorted(m for m in sys.modules if "mylosses" in m), "native": g.native}))
''')


def test_load_runs_without_the_defining_module(tmp_path):
    defs = tmp_path / "defs"
    defs.mkdir()
    (defs / "mylosses.py").write_text(MODULE)
    spec = importlib.util.spec_from_file_location("mylosses", defs / "mylosses.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not on sys.path, not in sys.modules: only this test sees it

    rng = np.random.default_rng(3)
    w, b, x = rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=(6, 4))
    compiled = gt.compile(gt.value_and_grad(module.loss), {"w": gt.ShapeDtype((4, 3)), "b": gt.ShapeDtype((3,))},
                          gt.ShapeDtype((6, 4)))
    value, grads = compiled({"w": w, "b": b}, x)
    compiled.save(tmp_path / "loss.gtc")
    np.savez(tmp_path / "data.npz", w=w, b=b, x=x)

    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    env = dict(os.environ, PYTHONPATH=ROOT, GRADTAPE_CACHE_DIR="")
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "loss.gtc"), str(tmp_path / "data.npz")],
                          cwd=run_dir, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["native"] and result["modules"] == []
    assert result["value"] == float(value)
    assert bytes.fromhex(result["dw"]) == grads["w"].tobytes() and bytes.fromhex(result["db"]) == grads["b"].tobytes()
    # and the numbers are right: the gradient against central differences
    eps = 1e-6
    bump = np.zeros_like(w)
    bump[1, 2] = eps
    numeric = (module.loss({"w": w + bump, "b": b}, x) - module.loss({"w": w - bump, "b": b}, x)) / (2 * eps)
    assert np.frombuffer(bytes.fromhex(result["dw"]))[1 * 3 + 2] == pytest.approx(float(numeric), rel=1e-6)
