"""A fresh process for the disk cache tests: compute one gradient, report what it cost.

    python disk_cache_child.py [--wait-for FILE --ready FILE]

The gradient calls BLAS (a 30 x 30 matmul), libmvec (sin) and the inline
polynomials (tanh), so a kernel loaded from disk needs external symbols
registered first. Prints one JSON line: the runtime's and the disk cache's
counters and the gradient's bytes (hex), so the parent can check that two
processes computed bit-identical results. With --wait-for, the process
first imports and prepares everything, creates the --ready file, then waits
until FILE exists: the parent starts two processes and releases them at once.
"""
from __future__ import annotations

import argparse
import json
import os
import time

os.environ["GRADTAPE_ASYNC_COMPILE"] = "0"  # compile in the call: the counters are final at its end

import numpy as np  # noqa: E402

import gradtape as gt  # noqa: E402
from gradtape import runtime  # noqa: E402
from gradtape.runtime import disk_cache  # noqa: E402


def loss(w, x):
    h = gt.tanh(x @ w)
    return gt.sum(gt.sin(h) * h) + gt.sum(w * w)


def data():
    rng = np.random.default_rng(7)
    return rng.normal(size=(30, 30)) * 0.3, rng.normal(size=(30, 30))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--wait-for")
    parser.add_argument("--ready")
    args = parser.parse_args()
    g = gt.value_and_grad(loss)
    w, x = data()
    if args.wait_for:
        runtime.target.initialize()
        open(args.ready, "w").close()
        deadline = time.monotonic() + 60
        while not os.path.exists(args.wait_for) and time.monotonic() < deadline:
            time.sleep(0.001)
    value, grad = g(w, x)
    info = runtime.cache_info()
    disk = disk_cache.cache_info()
    print(json.dumps({
        "compiles": info["compiles"],
        "disk_loads": info["disk_loads"],
        "native": info["native"],
        "disk": {k: disk[k] for k in ("hits", "misses", "writes", "rejected", "entries", "last_rejected")},
        "value": float(value),
        "grad": np.ascontiguousarray(grad).tobytes().hex(),
    }))


if __name__ == "__main__":
    main()
