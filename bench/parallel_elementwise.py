"""Both cores for large fused loops (issue 18 point 3): the elementwise gradient
(W2's vector Rosenbrock, x -> grad) against the memory-bandwidth time of its
traffic and against JAX, with one thread and with the pool, on a quiet machine
and with a second process holding a core.

    python bench/parallel_elementwise.py [--rounds 15] [--no-busy] [--sweep] [--reductions]

Every figure of one block comes from one interleaved run (bench/_timing.py):
- `copy`: np.copyto of n float64 into a preallocated array, the bytes the
  gradient reads and writes (n in, n out);
- `copy N threads`: the same bytes copied by N threads (memmove of 1/N each,
  ctypes releasing the GIL), into the same preallocated array;
- `bandwidth` = the faster of the two: the memory-bandwidth time;
- `copy+alloc`: x.copy(), the copy plus a fresh output as the gradient returns;
- `gt 1 thread`, `gt N threads`: gt.grad(rosen_sum)(x) with
  gradtape.runtime.parallel set to 1 and to N (the default) threads, the
  result dropped at once, as a loop drops the last step's gradient: its
  buffer comes back to runtime.alloc's pool for the next call, so the
  gradient, like `copy`, writes into memory already mapped;
- `gt N, fresh output`: the same with the pool off (alloc max_bytes=0): every
  call writes a newly mapped output (first-touch page faults included), to
  compare with `copy+alloc`;
- `gt vg`: value_and_grad, N threads: the sum runs in the gradient's loop
  (codegen/parallel_fill_reduce.py), so it reads and writes what `gt` does;
- `jax`: jax.jit(jax.grad(...)), when JAX is installed.
Targets: n = 1e7, N threads and `gt vg` within 1.2x of `bandwidth`; n = 1e6,
at least 1.6x faster than JAX. `--busy` blocks repeat everything while
another process spins on one core: N threads should then be no slower than
1 thread. `--sweep` times a short loop at sizes around
parallel.min_elements; `--reductions` times sums over the leading and the
trailing axis of a 2000 x 5000 matrix, and over all of it, on 1 and N
threads, against NumPy's.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import gradtape as gt  # noqa: E402
import workloads as W  # noqa: E402
from _timing import fmt, interleaved_best  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

from gradtape.runtime import alloc, parallel  # noqa: E402


def _with_threads(threads, f):
    def run():
        parallel.configure(threads=threads)
        return f()
    return run


def _without_pool(f):
    def run():
        alloc.configure(max_bytes=0)
        try:
            return f()
        finally:
            alloc.configure(max_bytes=None)
    return run


def _parallel_copy(dst: np.ndarray, src: np.ndarray, threads: int):
    """Copy src into dst in `threads` slices at once (ctypes.memmove releases the GIL)."""
    pool = ThreadPoolExecutor(threads - 1) if threads > 1 else None
    step = -(-src.nbytes // threads) // 64 * 64
    parts = [(dst.ctypes.data + k, src.ctypes.data + k, min(step, src.nbytes - k)) for k in range(0, src.nbytes, step)]

    def run():
        futures = [pool.submit(ctypes.memmove, *p) for p in parts[1:]] if pool else []
        ctypes.memmove(*parts[0])
        for f in futures:
            f.result()
    return run


def contenders(n: int, threads: int) -> dict:
    x = np.random.default_rng(0).uniform(-1, 1, n)
    dst = np.empty_like(x)
    g, vg = gt.grad(W.rosen_sum), gt.value_and_grad(W.rosen_sum)
    for f in (g, vg):
        f(x)
        gt.runtime.wait_for_compiles()
        f(x)
    want = W.w2_numpy(x)()
    np.testing.assert_allclose(g(x), want, rtol=1e-12, atol=1e-12)
    copy_n = _parallel_copy(dst, x, threads)
    copy_n()
    np.testing.assert_array_equal(dst, x)
    fns = {
        "copy": lambda: np.copyto(dst, x),
        f"copy {threads} threads": copy_n,
        "copy+alloc": lambda: x.copy(),
        "gt 1 thread": _with_threads(1, lambda: g(x)),
        f"gt {threads} threads": _with_threads(threads, lambda: g(x)),
        f"gt vg {threads} threads": _with_threads(threads, lambda: vg(x)),
        # Last of gradtape's: it empties the pool, so whatever runs next pays for fresh memory once.
        f"gt {threads}, fresh output": _with_threads(threads, _without_pool(lambda: g(x))),
    }
    if W.jax is not None:
        j = W.w2_jax(x)
        j()
        fns["jax"] = j
    return fns


def block(n: int, threads: int, rounds: int, label: str):
    fns = contenders(n, threads)
    calls = max(1, int(2e7 // n))
    best = interleaved_best(fns, rounds=rounds, calls=calls)
    parallel.configure(threads=threads)
    print(f"\nn = {n:.0e}, {label}")
    bandwidth = min(best["copy"], best[f"copy {threads} threads"])
    for name, t in best.items():
        print(f"  {name:24s} {fmt(t):>10s}   {t / bandwidth:5.2f}x bandwidth")
    ours = best[f"gt {threads} threads"]
    print(f"  gt {threads} threads / bandwidth: {ours / bandwidth:.2f}x (target <= 1.2 at n = 1e7)")
    print(f"  gt vg {threads} threads / bandwidth: {best[f'gt vg {threads} threads'] / bandwidth:.2f}x"
          " (target <= 1.2 at n = 1e7)")
    print(f"  speedup of {threads} threads over 1: {best['gt 1 thread'] / ours:.2f}x")
    if "jax" in best:
        print(f"  jax time / gradtape time: {best['jax'] / ours:.2f}x (target >= 1.6 at n = 1e6)")
    return best


def sweep(threads: int, rounds: int):
    print("\nwhere splitting pays: sin(x) * x, ns per element")
    for n in (1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 20):
        x = np.random.default_rng(1).uniform(-1, 1, n)
        f = gt.differentiable(lambda x: gt.sin(x) * x)
        f(x)
        gt.runtime.wait_for_compiles()
        parallel.configure(min_elements=0)
        best = interleaved_best({t: _with_threads(t, lambda: f(x)) for t in (1, threads)}, rounds=rounds,
                                calls=max(1, int(2e6 // n)))
        print(f"  n = {n:8d}: 1 thread {best[1] / n * 1e9:6.2f}, {threads} threads {best[threads] / n * 1e9:6.2f}")
    parallel.configure(min_elements=None)


def reductions(threads: int, rounds: int):
    """Sums over the leading and the trailing axis of an 80 MB matrix, and over all of it, 1 and N
    threads, against NumPy's same sum and the copy of the matrix (the time to read its bytes
    once, and write as many)."""
    x = np.random.default_rng(2).uniform(-1, 1, (2000, 5000))
    dst = np.empty_like(x)
    fns = {"copy": lambda: np.copyto(dst, x)}
    axes = {"axis=0": 0, "axis=1": 1, "all": None}
    for label, axis in axes.items():
        f = gt.differentiable(lambda x, axis=axis: gt.sum(x, axis=axis))
        f(x)
        gt.runtime.wait_for_compiles()
        np.testing.assert_allclose(f(x), x.sum(axis=axis), rtol=1e-12, atol=1e-9)
        fns[f"numpy {label}"] = lambda axis=axis: x.sum(axis=axis)
        fns[f"gt {label} 1 thread"] = _with_threads(1, lambda f=f: f(x))
        fns[f"gt {label} {threads} threads"] = _with_threads(threads, lambda f=f: f(x))
    best = interleaved_best(fns, rounds=rounds, calls=2)
    parallel.configure(threads=threads)
    print("\nsums of a 2000 x 5000 matrix")
    for name, t in best.items():
        print(f"  {name:24s} {fmt(t):>10s}   {t / best['copy']:5.2f}x copy")
    for label in axes:
        ours = best[f"gt {label} {threads} threads"]
        print(f"  {label}: {threads} threads {best[f'gt {label} 1 thread'] / ours:.2f}x faster than 1,"
              f" numpy / gt {threads} threads {best[f'numpy {label}'] / ours:.2f}x")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--no-busy", action="store_true", help="skip the blocks with a busy second process")
    parser.add_argument("--sweep", action="store_true", help="time sizes around min_elements")
    parser.add_argument("--reductions", action="store_true", help="time sums over the leading and trailing axis")
    args = parser.parse_args(argv)
    threads = parallel.threads
    print(f"threads {threads} (of {parallel.available_cpus()} available), min_elements {parallel.min_elements}")
    for n in (10**7, 10**6):
        block(n, threads, args.rounds, "quiet")
    if not args.no_busy:
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.5)
            for n in (10**7, 10**6):
                block(n, threads, args.rounds, "another process spinning on a core")
        finally:
            spinner.kill()
            spinner.wait()
    if args.sweep:
        sweep(threads, args.rounds)
    if args.reductions:
        reductions(threads, args.rounds)


if __name__ == "__main__":
    main()
