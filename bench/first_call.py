"""First-call latency of W3 (trace + compile + run), stage by stage, cold and warm.

W3 is the gradient of the mean softmax cross-entropy of a tanh MLP
784-256-10, batch 128, w.r.t. all 4 weights. Each run starts a fresh
Python process, so every run is a first call:

- `cold`: the process has imported gradtape and nothing else; the first
  call pays for everything done once per process (LLVM target, the shared
  call wrappers, code generation's first use, BLAS's first call);
- `warm`: another staged gradient was compiled and run first, as in
  bench/compiled_workloads.py, where W3's first call comes after W1-W7.

For each stage it prints the median and the range over the runs, in ms:
import (not part of the first call), trace, adjoint (vjp, joint function),
ir_opt (gradtape.ir.optimize), then the runtime's stages (lower, ir_text,
worker_wait, parse, optimize, emit_object, worker_transfer, load, entry:
the worker's are LLVM's worker process, runtime/llvm_worker.py), `wrappers` (the shared
METH_FASTCALL entry points, compiled once per process), `run` (the rest:
the kernel's first run, signature and bookkeeping) and `first call`, the
wall time of `g(params, x, onehot)`.

Two more modes measure the disk cache (gradtape.runtime.disk_cache), each
run in a fresh process of the `cold` kind:

- `disk-cold`: an empty cache directory: the first call compiles, as in
  `cold`, and also writes the object code to disk;
- `disk-warm`: a cache directory filled by an untimed run of the same code:
  the first call loads object code (kernel and call wrappers) instead of
  compiling it. Target: under 20 ms.

`cold` and `warm` run with the disk cache off (GRADTAPE_CACHE_DIR=""), so
they measure compiling whatever the machine's cache holds. The summary at
the end gives each mode's first call and its ratio to `cold`'s.

With background compiles (GRADTAPE_ASYNC_COMPILE=1, `--async`) the first
call is served by the reference interpreter while native code is built on
another thread: `first call` is then the interpreted call, `native ready`
the time from the start of the first call until native code is in place,
and `next call` a call made once it is.

Modules load from cached bytecode, as in an installed package (the cache
is kept under the temp directory, out of the work tree, and written by an
untimed first run); `--no-bytecode` compiles every module from source in
each process instead, which adds several hundred ms to `import` and to the
cold first call (code generation's modules are imported by its first use).

    python bench/first_call.py [--runs 7] [--mode cold warm disk-cold disk-warm] [--async] [--no-bytecode]
                               [--blas-threads N] [--no-gc-settle]

The children run a full garbage collection right after their imports
(counted in `import`): the imports' objects otherwise make CPython's first
full collection (25-50 ms) land inside the first call.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

STAGES = (
    "trace", "adjoint", "ir_opt", "lower", "ir_text", "worker_wait", "parse", "optimize", "emit_object",
    "worker_transfer", "disk_read", "load", "entry", "wrappers", "run",
)
MODES = ("cold", "warm", "disk-cold", "disk-warm")


def _child(mode: str, background: bool, settle_gc: bool = True):
    """One measurement, in this (fresh) process; prints a JSON dict of milliseconds."""
    os.environ["GRADTAPE_ASYNC_COMPILE"] = "1" if background else "0"
    sys.path[:0] = [HERE, ROOT]
    t0 = time.perf_counter()
    import numpy as np

    import gradtape as gt
    from gradtape import runtime
    from gradtape.runtime import fastcall
    from gradtape.staging import staged, transforms

    import workloads as W

    if settle_gc:
        # Importing leaves hundreds of thousands of new objects, and CPython's first full collection
        # after that (25-50 ms here) would land in whatever runs next: a cost of the import, counted there.
        import gc

        gc.collect()
    imported = time.perf_counter() - t0
    runtime.config.async_compile = background
    seconds: dict = {}

    def timed(owner, name, stage):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[stage] = seconds.get(stage, 0.0) + time.perf_counter() - t

        setattr(owner, name, wrapper)

    if mode == "warm":
        warm = gt.grad(lambda x, y: gt.sum(gt.tanh(x @ y) * 2.0))
        warm(np.ones((3, 4)), np.ones((4, 2)))
        runtime.wait_for_compiles() if hasattr(runtime, "wait_for_compiles") else None
        warm(np.ones((3, 4)), np.ones((4, 2)))
    timed(staged, "trace_call", "trace")
    timed(transforms.ir, "vjp", "adjoint")
    timed(transforms, "optimize", "ir_opt")
    wrappers_before = dict(fastcall._compiled)

    params, xb, onehot = W.mlp_data()
    runtime.clear_cache()
    g = gt.grad(lambda p, x, o: W.mlp_loss(p, x, o))  # a fresh function: nothing cached
    t = time.perf_counter()
    g(params, xb, onehot)
    first = time.perf_counter() - t
    result = {"import": imported * 1e3, "first call": first * 1e3}
    if background:
        runtime.wait_for_compiles()
        result["native ready"] = (time.perf_counter() - t) * 1e3
        g(params, xb, onehot)  # collects the native code
        t1 = time.perf_counter()
        g(params, xb, onehot)
        result["next call"] = (time.perf_counter() - t1) * 1e3
    cf = runtime.compile_function(g._programs[next(iter(g._programs))].fn)
    stages = dict(cf.compile_stages)
    if not wrappers_before and fastcall._compiled:  # built during this call, inside `entry`
        stages["wrappers"] = sum(fastcall._compiled["timings"].values())
        stages["entry"] = max(0.0, stages.get("entry", 0.0) - stages["wrappers"])
    stages.update(seconds)
    for stage in STAGES[:-1]:
        result[stage] = stages.get(stage, 0.0) * 1e3
    if not background:
        result["run"] = result["first call"] - sum(result[s] for s in STAGES[:-1])
    result["native"] = cf.native
    result["disk_loads"] = runtime.cache_info()["disk_loads"]
    print(json.dumps(result))


def _child_env(bytecode: bool) -> dict:
    """The children's environment: with `bytecode`, modules load from cached bytecode, as
    they do in an installed package (kept out of the work tree, under the temp directory)."""
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "gradtape-bench-pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _measure(mode: str, background: bool, runs: int, bytecode: bool, blas_threads=None, settle_gc=True) -> list:
    process_mode = "warm" if mode == "warm" else "cold"
    cmd = [sys.executable, os.path.abspath(__file__), "--child", process_mode] + (["--async"] if background else [])
    cmd += [] if settle_gc else ["--no-gc-settle"]
    env = _child_env(bytecode)
    if blas_threads:
        env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    env["GRADTAPE_CACHE_DIR"] = ""  # the disk cache off: the compile is what is measured
    with tempfile.TemporaryDirectory(prefix="gradtape-bench-cache-") as cache_root:
        if mode == "disk-warm":
            env["GRADTAPE_CACHE_DIR"] = cache_root
        # Untimed: writes the bytecode cache (and, for disk-warm, the compile cache the runs load).
        subprocess.run(cmd, capture_output=True, check=True, env=env)
        samples = []
        for k in range(runs):
            if mode == "disk-cold":
                env["GRADTAPE_CACHE_DIR"] = os.path.join(cache_root, f"run{k}")  # empty every time
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
            samples.append(json.loads(out.strip().splitlines()[-1]))
    return samples


def _report(title: str, samples: list):
    from _quiet import busy_fraction

    print(f"\n{title} ({len(samples)} runs; CPUs {busy_fraction():.0%} busy after)")
    keys = [k for k in samples[0] if k not in ("native", "disk_loads") and any(s.get(k) for s in samples)]
    print(f"  {'stage':14s} {'median':>8s}  {'range':>17s}")
    for k in keys:
        values = sorted(s[k] for s in samples)
        median = values[len(values) // 2]
        print(f"  {k:14s} {median:8.1f}  {values[0]:7.1f} - {values[-1]:7.1f}")
    if not all(s["native"] for s in samples):
        print("  (some runs did not compile natively)")
    loads = sum(s.get("disk_loads", 0) for s in samples)
    if loads:
        print(f"  ({loads} of {len(samples)} runs loaded W3's kernel from the disk cache)")


def _median(samples: list, key: str) -> float:
    if key == "native code":
        values = sorted(sum(s.get(k, 0.0) for k in _NATIVE_STAGES) for s in samples)
    else:
        values = sorted(s.get(key, 0.0) for s in samples)
    return values[len(values) // 2]


_NATIVE_STAGES = ("lower", "ir_text", "worker_wait", "parse", "optimize", "emit_object", "worker_transfer", "disk_read",
                  "load", "entry", "wrappers")


def _summary(results: dict):
    print("\nsummary: W3's first call in a fresh process, median ms (ratio to `cold`); `native code` is the part\n"
          "spent getting machine code (compiling, or loading it from the disk cache, call wrappers included);\n"
          "with background compiles, `native ready` is when native code took over from the interpreter")
    background = any("native ready" in s for samples in results.values() for s in samples)
    columns = ["first call", "native code"] + (["native ready"] if background else [])
    base = {c: _median(results["cold"], c) for c in columns} if "cold" in results else {}
    print(f"  {'mode':10s}" + "".join(f" {c:>18s}" for c in columns))
    for mode, samples in results.items():
        row = f"  {mode:10s}"
        for c in columns:
            ms = _median(samples, c)
            ratio = f"({ms / base[c]:5.3f}x)" if base.get(c) else ""
            row += f" {ms:8.1f} {ratio:9s}"
        if mode == "disk-warm":
            row += "  target < 20 ms: " + ("met" if _median(samples, "first call") < 20 else "NOT met")
        print(row)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--mode", nargs="*", default=list(MODES), choices=list(MODES))
    parser.add_argument("--async", dest="background", action="store_true",
                        help="compile in the background (GRADTAPE_ASYNC_COMPILE=1); default: synchronous")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="compile every module from source in each process (PYTHONDONTWRITEBYTECODE=1)")
    parser.add_argument("--blas-threads", type=int,
                        help="OPENBLAS_NUM_THREADS of the children (on a busy shared machine, 1 keeps BLAS's "
                             "threads from waiting for a core)")
    parser.add_argument("--no-gc-settle", action="store_true",
                        help="do not run a full garbage collection after the imports (then the first full "
                             "collection, which the imports' objects cause, lands in the first call)")
    parser.add_argument("--child", choices=["cold", "warm"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.background, not args.no_gc_settle)
        return
    sys.path.insert(0, HERE)
    label = "background compile (interpreter serves the first call)" if args.background else "synchronous compile"
    results = {}
    for mode in args.mode:
        target = "< 20 ms" if mode == "disk-warm" else "< 200 ms"
        results[mode] = _measure(mode, args.background, args.runs, not args.no_bytecode, args.blas_threads,
                                 not args.no_gc_settle)
        _report(f"W3 first call, {mode} process, {label}; target {target}", results[mode])
    _summary(results)


if __name__ == "__main__":
    main()
