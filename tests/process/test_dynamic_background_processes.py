"""A staged training loop whose last batch is smaller gives the same bits in every process: the
dynamic version's build (in the background) never decides which code serves a call. A second
process with the same disk cache loads the dynamic version instead of compiling it, and still
serves the same calls with the same code (the second size's first call in the interpreter)."""
from __future__ import annotations

import numpy as np

from .functions import run_script

CHILD = r"""
import hashlib, io, json, logging
import numpy as np
import gradtape as gt
from gradtape import runtime

stream = io.StringIO()
logging.getLogger("gradtape").addHandler(logging.StreamHandler(stream))
logging.getLogger("gradtape").setLevel(logging.INFO)

def loss(params, x, y):
    w1, w2 = params
    return gt.mean((gt.tanh(x @ w1) @ w2 - y) ** 2)

rng = np.random.default_rng(0)
params = [rng.normal(size=(8, 16)), rng.normal(size=(16, 2))]
x, y = rng.normal(size=(3 * 32 + 10, 8)), rng.normal(size=(3 * 32 + 10, 2))
g = gt.grad(loss)
digest, grads = hashlib.sha256(), []
for epoch in range(10):  # the last batch: 8 runs interpreted, then the dynamic version
    for start in range(0, x.shape[0], 32):
        d = g(params, x[start:start + 32], y[start:start + 32])
        for a in d:
            digest.update(a.tobytes())
        grads.append([a.tolist() for a in d])
        params = [p - 0.05 * a for p, a in zip(params, d)]
runtime.wait_for_compiles()
info = runtime.cache_info()
print(json.dumps({"digest": digest.hexdigest(), "grads": grads, "log": stream.getvalue(),
                  "compiles": info["compiles"], "disk_loads": info["disk_loads"],
                  "staged_compiles": g.cache_info().compiles}))
"""


def _run(cache_dir) -> dict:
    return run_script(CHILD, cache_dir)


def _numpy_loop():
    rng = np.random.default_rng(0)
    w1, w2 = rng.normal(size=(8, 16)), rng.normal(size=(16, 2))
    x, y = rng.normal(size=(3 * 32 + 10, 8)), rng.normal(size=(3 * 32 + 10, 2))
    for _ in range(10):
        for start in range(0, x.shape[0], 32):
            xb, yb = x[start:start + 32], y[start:start + 32]
            h = np.tanh(xb @ w1)
            r = h @ w2 - yb
            dr = 2 * r / r.size
            d1, d2 = xb.T @ (dr @ w2.T * (1 - h * h)), h.T @ dr
            yield d1, d2
            w1, w2 = w1 - 0.05 * d1, w2 - 0.05 * d2


def test_same_bits_in_every_process_and_the_dynamic_version_from_disk(tmp_path):
    first = _run(tmp_path / "a")
    other = _run(tmp_path / "b")  # another empty cache: compiles everything again
    warm = _run(tmp_path / "a")  # the first one's cache: loads everything
    assert first["digest"] == other["digest"] == warm["digest"]
    for run in (first, other, warm):
        assert "started in the background; this call runs in the interpreter" in run["log"]
        assert "with its dynamic version at N=10 (no compile)" in run["log"]
        assert run["staged_compiles"] == 2  # the first size's, the dynamic version's
    assert "dynamic for (f64[8,16], f64[16,2], f64[N,8], f64[N,2]), N >= 2 a run-time size" in first["log"]
    assert first["compiles"] == 2 and first["disk_loads"] == 0
    assert warm["compiles"] == 0 and warm["disk_loads"] == 2
    assert "loaded from the disk cache" in warm["log"].split("started in the background")[1]
    for got, want in zip(first["grads"], _numpy_loop()):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)
