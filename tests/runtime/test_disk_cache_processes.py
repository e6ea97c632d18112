"""The disk cache across real processes: a second process compiles nothing, two at once are safe.

Every process runs tests/runtime/disk_cache_child.py (a value_and_grad
calling BLAS, libmvec and inline math) against a cache directory of the
test's own, and prints its counters and the gradient's bytes. Damaged
entries of every kind are tested in one process (test_disk_cache.py); here
only what needs a fresh process: symbols not registered yet.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from gradtape.runtime import entry_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHILD = os.path.join(HERE, "disk_cache_child.py")


def _env(cache_dir) -> dict:
    env = dict(os.environ, GRADTAPE_CACHE_DIR=str(cache_dir))
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _start(cache_dir, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, CHILD, *args], env=_env(cache_dir), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{err}"
    return json.loads(out.strip().splitlines()[-1])


def run_child(cache_dir) -> dict:
    return _finish(_start(cache_dir))


def reference():
    """The value and gradient of the child's loss, by hand in NumPy."""
    rng = np.random.default_rng(7)
    w, x = rng.normal(size=(30, 30)) * 0.3, rng.normal(size=(30, 30))
    h = np.tanh(x @ w)
    value = np.sum(np.sin(h) * h) + np.sum(w * w)
    dh = np.cos(h) * h + np.sin(h)
    grad = x.T @ (dh * (1 - h * h)) + 2 * w
    return value, grad


def check_result(result):
    value, grad = reference()
    assert result["value"] == pytest.approx(value, rel=1e-12)
    got = np.frombuffer(bytes.fromhex(result["grad"]), dtype=np.float64).reshape(grad.shape)
    np.testing.assert_allclose(got, grad, rtol=1e-11, atol=1e-12)


def kernel_entries(cache_dir) -> list:
    paths = []
    for name in os.listdir(cache_dir):
        with open(os.path.join(cache_dir, name), "rb") as f:
            meta, _ = entry_file.decode(f.read())
        if meta["kind"] == "kernel":
            paths.append(os.path.join(cache_dir, name))
    return paths


@pytest.fixture(scope="module")
def populated(tmp_path_factory):
    """A cache directory filled by one process, and that process's report."""
    cache_dir = tmp_path_factory.mktemp("populated")
    first = run_child(cache_dir)
    return cache_dir, first


def _copy(populated, tmp_path):
    target = tmp_path / "cache"
    shutil.copytree(populated[0], target)
    return target


def test_first_process_compiles_and_writes(populated):
    _, first = populated
    assert first["compiles"] == 1 and first["disk_loads"] == 0 and first["native"] == 1
    assert first["disk"]["writes"] == 2  # the kernel and the shared call wrappers
    check_result(first)


def test_second_process_compiles_nothing_and_gets_identical_results(populated, tmp_path):
    cache_dir = _copy(populated, tmp_path)
    second = run_child(cache_dir)
    assert second["compiles"] == 0 and second["disk_loads"] == 1 and second["native"] == 1
    assert second["disk"]["hits"] == 2 and second["disk"]["writes"] == 0  # kernel and wrappers loaded
    assert second["value"] == populated[1]["value"]
    assert second["grad"] == populated[1]["grad"]  # bit for bit


def _retouch(path, change):
    with open(path, "rb") as f:
        meta, payload = entry_file.decode(f.read())
    change(meta)
    with open(path, "wb") as f:
        f.write(entry_file.encode(meta, payload))


def test_an_entry_that_does_not_list_its_blas_symbol_is_rebuilt_not_loaded(populated, tmp_path):
    # A fresh process has not registered the BLAS routine: loading this object would
    # leave a call unresolved (a crash inside LLVM). It must be refused and rebuilt.
    cache_dir = _copy(populated, tmp_path)
    [kernel] = kernel_entries(cache_dir)
    _retouch(kernel, lambda meta: meta.update(symbols=[s for s in meta["symbols"] if "cblas" not in s]))
    result = run_child(cache_dir)
    assert result["compiles"] == 1 and result["disk"]["rejected"] == 1
    assert "scipy_cblas" in result["disk"]["last_rejected"]
    check_result(result)
    [kernel] = kernel_entries(cache_dir)
    with open(kernel, "rb") as f:
        assert "scipy_cblas_dgemm64_" in entry_file.decode(f.read())[0]["symbols"]  # rewritten whole


def test_two_processes_compiling_the_same_key_at_once(tmp_path):
    cache_dir = tmp_path / "cache"
    go = tmp_path / "go"
    ready = [tmp_path / f"ready{i}" for i in range(2)]
    procs = [_start(cache_dir, "--wait-for", str(go), "--ready", str(r)) for r in ready]
    try:
        deadline = time.monotonic() + 60
        while not all(r.exists() for r in ready) and time.monotonic() < deadline:
            time.sleep(0.005)
        assert all(r.exists() for r in ready), "the children did not get ready"
        go.touch()  # both compile the same key now
        results = [_finish(p) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for r in results:
        assert r["compiles"] + r["disk_loads"] == 1
        check_result(r)
    assert results[0]["grad"] == results[1]["grad"]
    assert not [n for n in os.listdir(cache_dir) if n.startswith(".tmp")]  # no temporary file left
    [kernel] = kernel_entries(cache_dir)
    with open(kernel, "rb") as f:
        meta, _ = entry_file.decode(f.read())  # complete, and its checksum holds
    assert entry_file.mismatches(meta) == [] and os.path.basename(kernel) == meta["key"] + ".gtc"
