"""Module-level functions the process tests send to other processes (pickle sends functions by
name), with NumPy references, and the code the receiving processes run."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import numpy as np

import gradtape as gt
from gradtape import runtime
from gradtape.runtime import entry_file


def logistic_loss(w, X, y):
    """Mean logistic loss of labels y in {0, 1}: log(1 + exp(z)) - y z with z = X w."""
    z = X @ w
    return gt.mean(gt.softplus(z) - y * z)


def logistic_grad_np(w, X, y):
    z = X @ w
    return X.T @ (1.0 / (1.0 + np.exp(-z)) - y) / len(y)


def logistic_sum(w, X, y):
    """The summed logistic loss (a chunk's share of the full-batch sum)."""
    z = X @ w
    return gt.sum(gt.softplus(z) - y * z)


def wavy(x):
    return gt.sum(gt.sin(x) * x)


def wavy_grad_np(x):
    return np.cos(x) * x + np.sin(x)


@gt.differentiable
def decorated(x, n):
    return gt.sum(gt.tanh(x) ** n)


def data(seed=0, m=40, n=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    y = (rng.uniform(size=m) < 0.5).astype(np.float64)
    return rng.normal(size=n), X, y


def warm(f, *args):
    """Call `f` until its native code runs (the first calls may be interpreted while it compiles)."""
    f(*args)
    runtime.wait_for_compiles()
    return f(*args)


def run_unpickled(data: bytes, args: tuple, fake_cpu: bool = False):
    """In a receiving process: unpickle, call with `args`, and report the result and the counters.

    With `fake_cpu` this process claims another CPU than the one the code was built on.
    """
    real = entry_file.machine
    if fake_cpu:
        entry_file.machine = lambda: {**real(), "cpu": "another-cpu"}
    try:
        before = runtime.cache_info()
        f = pickle.loads(data)
        result = f(*args)
        runtime.wait_for_compiles()
        result_again = f(*args)
        after = runtime.cache_info()
    finally:
        entry_file.machine = real  # the worker serves the next test as itself
    info = f.cache_info() if hasattr(f, "cache_info") else None
    return result, result_again, info, after["misses"] - before["misses"]


def run_train_step(data: bytes, X, y):
    """In a receiving process: unpickle (params, step), make one step, return the new params and counters."""
    w, step = pickle.loads(data)
    loss = step(w, X, y)
    return w, loss, step.cache_info(), step.optimizer.iterations


def run_script(script: str, cache_dir) -> dict:
    """Run `script` in a fresh Python process whose disk cache is `cache_dir`, with the default
    compile settings: the JSON its last line of output prints."""
    env = dict(os.environ, GRADTAPE_CACHE_DIR=str(cache_dir))
    env.pop("GRADTAPE_ASYNC_COMPILE", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])
