"""Benchmarks of the compiled path (W1-W4, W7, and the first call of W3),
as ratios to hand-written NumPy measured in the same run, and to jax.jit
when JAX is installed.

    python bench/compiled_workloads.py [--check]

Ratios > 1 mean gradtape is faster than the baseline. With --check, the
results of each implementation are compared first (a benchmark of a wrong
answer is worthless).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
# These time compiles: keep the persistent disk cache out of them.
os.environ["GRADTAPE_CACHE_DIR"] = ""
import gradtape as gt  # noqa: E402
import workloads as W  # noqa: E402
from _timing import fmt, per_call  # noqa: E402

TARGETS = {  # gradtape speed as a multiple of hand NumPy (issue 3)
    "W1": 0.5, "W2": 16.0, "W3": 1.0, "W4": 1.5, "W7": 3.0,
}


def cases():
    rng = np.random.default_rng(0)
    x2 = np.array([-1.2, 1.0])
    x_big = rng.uniform(-1, 1, 1_000_000)
    params, xb, onehot = W.mlp_data()
    X, y = W.logreg_data()
    x256 = rng.uniform(-1, 1, 256)
    return [
        ("W1", "value_and_grad of 2-D Rosenbrock, per call", (x2,), W.w1_numpy, W.w1_gradtape, W.w1_jax),
        ("W2", "grad of vector Rosenbrock, n=1e6", (x_big,), W.w2_numpy, W.w2_gradtape, W.w2_jax),
        ("W3", "grad of MLP 784-256-10 softmax CE, batch 128", (params, xb, onehot), W.w3_numpy, W.w3_gradtape, W.w3_jax),
        ("W4", "logistic regression 4000x50, 100 GD steps", (X, y), W.w4_numpy, W.w4_gradtape, W.w4_jax),
        ("W7", "grad of a 100-op elementwise chain, n=256", (x256,), W.w7_numpy, W.w7_gradtape, W.w7_jax),
    ]


def check(name, ref, got):
    ref = [np.asarray(r) for r in (ref if isinstance(ref, (list, tuple)) else [ref])]
    got = [np.asarray(g) for g in (got if isinstance(got, (list, tuple)) else [got])]
    flat_ref = np.concatenate([r.ravel() for r in ref])
    flat_got = np.concatenate([g.ravel() for g in got])
    err = np.max(np.abs(flat_ref - flat_got)) / max(1e-300, np.max(np.abs(flat_ref)))
    status = "ok" if err < 1e-8 else "MISMATCH"
    print(f"  check {name}: max relative deviation {err:.1e} {status}")
    return err < 1e-8


def first_call_w3(async_compile: bool):
    """Seconds of the first call of a fresh W3 gradient (nothing cached).

    With async_compile the interpreter serves this call while native code
    is built in the background; without, the call waits for the compile.
    """
    from gradtape import runtime

    params, xb, onehot = W.mlp_data()
    runtime.wait_for_compiles()
    runtime.clear_cache()
    saved, runtime.config.async_compile = runtime.config.async_compile, async_compile
    try:
        g = gt.grad(lambda p, x, o: W.mlp_loss(p, x, o))  # a fresh function
        t0 = time.perf_counter()
        g(params, xb, onehot)
        first = time.perf_counter() - t0
        runtime.wait_for_compiles()
        return first, time.perf_counter() - t0
    finally:
        runtime.config.async_compile = saved


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare results before timing")
    parser.add_argument("--only", nargs="*", help="workload names to run (e.g. W1 W3)")
    args = parser.parse_args(argv)
    print(f"{'':4s} {'workload':46s} {'numpy':>10s} {'gradtape':>10s} {'speedup':>8s} {'target':>7s} {'jax':>10s}")
    for name, label, data, np_impl, gt_impl, jax_impl in cases():
        if args.only and name not in args.only:
            continue
        base, ours = np_impl(*data), gt_impl(*data)
        if args.check:
            check(name, base(), ours())
        ours()  # warm: trace and compile outside the timing
        gt.runtime.wait_for_compiles()  # the first calls may be served by the interpreter
        ours()
        t_np, t_gt = per_call(base), per_call(ours)
        jax_col = "-"
        if W.jax is not None:
            j = jax_impl(*data)
            j()
            jax_col = f"{t_np / per_call(j):.2f}x"
        print(f"{name:4s} {label:46s} {fmt(t_np):>10s} {fmt(t_gt):>10s} {t_np / t_gt:7.2f}x {TARGETS[name]:6.1f}x {jax_col:>10s}")
    if not args.only or "W3first" in args.only:
        sync, _ = first_call_w3(async_compile=False)
        served, ready = first_call_w3(async_compile=True)
        print(f"W3 first call, compiled before returning: {sync * 1e3:.0f} ms (target < 200 ms)")
        print(f"W3 first call, interpreter serves while compiling: {served * 1e3:.0f} ms "
              f"(native code ready after {ready * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
