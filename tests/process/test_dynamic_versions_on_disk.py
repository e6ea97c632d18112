"""A dynamic version is built like any other kernel: stored in the disk cache, loaded from it by
the next process (no compile), counted in runtime.cache_info(), and logged when it starts and
ends (runtime/dynamic_kernel.py). Both processes' gradients are NumPy's, and each other's bits."""
from __future__ import annotations

import numpy as np

from .functions import run_script

CHILD = r"""
import json, logging, io
import numpy as np
import gradtape as gt
from gradtape import runtime

stream = io.StringIO()
handler = logging.StreamHandler(stream)
logging.getLogger("gradtape").addHandler(handler)
logging.getLogger("gradtape").setLevel(logging.INFO)
rng = np.random.default_rng(0)
w = gt.Variable(rng.normal(size=(5, 3)))
grads = []
for n in [40, 41, 7, 100, 64, 33]:
    x, y = rng.normal(size=(n, 5)), rng.normal(size=(n, 3))
    with gt.GradientTape() as tape:
        loss = gt.mean((gt.tanh(x @ w) - y) ** 2)
    grads.append(tape.gradient(loss, w).numpy().tolist())
info = runtime.cache_info()
print(json.dumps({"grads": grads, "log": stream.getvalue(),
                  "compiles": info["compiles"], "disk_loads": info["disk_loads"]}))
"""


def _run(cache_dir) -> dict:
    return run_script(CHILD, cache_dir)


def _numpy_gradients():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(5, 3))
    for n in [40, 41, 7, 100, 64, 33]:
        x, y = rng.normal(size=(n, 5)), rng.normal(size=(n, 3))
        h = np.tanh(x @ w)
        r = h - y
        yield x.T @ (2 * r / r.size * (1 - h * h))


def test_a_dynamic_version_is_stored_on_disk_and_loaded_by_the_next_process(tmp_path):
    first, second = _run(tmp_path), _run(tmp_path)
    assert "building a dynamic version" in first["log"]
    assert "compiled a dynamic version" in first["log"]
    assert "loaded a dynamic version from the disk cache" in second["log"]
    assert "compiled a dynamic version" not in second["log"]
    assert first["compiles"] >= 1 and second["compiles"] == 0  # every kernel, the dynamic one too, from disk
    assert second["disk_loads"] == first["compiles"]
    assert first["grads"] == second["grads"]
    for got, want in zip(first["grads"], _numpy_gradients()):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
