"""Dynamic shapes: 100 distinct sizes through one staged function, compiles and time per call.

    python bench/dynamic_shapes.py [--sizes 100] [--sample 8] [--rounds 60] [--wall]

Two workloads: W3's loss (`value_and_grad` of the mean softmax
cross-entropy of a tanh MLP 784-256-10) over 100 batch sizes, and W2's
(`grad` of the vector Rosenbrock sum, elementwise) over 100 vector lengths.
For each it reports

  - compiles: how many native compiles the 100 sizes made (target: <= 3),
    and what a new size costs without one (its trace, transform and check);
  - per call: at `--sample` of the sizes, the dynamic version's time over
    the same function compiled for that one size (`dynamic=False`), both
    timed in turn in one run (best of `--rounds`, and "paired": the median
    of the ratios of back-to-back measurements; target: <= 1.1), and hand
    NumPy's time for scale.

Time is the calling thread's CPU time (`--wall` for wall time), with
OpenBLAS on one thread (unless OPENBLAS_NUM_THREADS is set): on a shared
2-core machine wall time with BLAS threads measures the other processes
more than the code, and both versions call the same BLAS.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads OpenBLAS (see the docstring)
os.environ["GRADTAPE_CACHE_DIR"] = ""  # compiles are counted: no disk cache
import gradtape as gt  # noqa: E402
import workloads as W  # noqa: E402
from _quiet import wait_quiet  # noqa: E402
from _timing import fmt, interleaved_best  # noqa: E402

from gradtape.runtime import config  # noqa: E402

config.async_compile = False  # each compile finishes in the call that starts it: calls time native code


def mlp_case(sizes):
    params, _, _ = W.mlp_data(batch=1)
    rng = np.random.default_rng(1)

    def args(n):
        return params, rng.normal(size=(n, 784)), np.eye(10)[rng.integers(0, 10, n)]

    return "W3 MLP value_and_grad, batch", W.mlp_loss, gt.value_and_grad, args, lambda a: W.w3_numpy(*a)


def elementwise_case(sizes):
    rng = np.random.default_rng(2)
    return ("W2 elementwise grad, length", W.rosen_sum, gt.grad, lambda n: (rng.uniform(-1, 1, n),),
            lambda a: W.w2_numpy(*a))


def run(case, sizes, sample, rounds, clock):
    title, fun, transform, make_args, numpy_step = case
    dynamic = transform(fun)
    new_size = []
    for n in sizes:
        a = make_args(n)
        t0 = time.perf_counter()
        dynamic(*a)
        new_size.append(time.perf_counter() - t0)
    info = dynamic.cache_info()
    print(f"\n{title} over {len(sizes)} distinct sizes {min(sizes)}..{max(sizes)}:")
    print(f"  compiles: {info.compiles} (traces {info.traces}); first call at a new size after the dynamic "
          f"compile: median {fmt(float(np.median(new_size[2:])))}, of which no compile")
    later = sizes[2:]  # the first size has its own compile; the second made the dynamic version
    picks = [later[int(i)] for i in np.linspace(0, len(later) - 1, sample)]
    ratios = []
    print(f"  {'size':>7} {'dynamic':>10} {'specialized':>12} {'ratio':>6} {'paired':>7} {'hand NumPy':>11}")
    for n in picks:
        a = make_args(n)
        specialized = transform(fun, dynamic=False)
        specialized(*a)
        dyn_out, spec_out = dynamic(*a), specialized(*a)
        for d, s in zip(_leaves(dyn_out), _leaves(spec_out)):
            np.testing.assert_allclose(d, s, rtol=1e-12, atol=1e-14)
        wait_quiet(timeout=10)
        best = interleaved_best({"dyn": lambda: dynamic(*a), "spec": lambda: specialized(*a),
                                 "numpy": numpy_step(a)}, rounds=rounds, clock=clock)
        paired = _paired_ratio(lambda: dynamic(*a), lambda: specialized(*a), rounds, clock)
        ratios.append(paired)
        print(f"  {n:>7} {fmt(best['dyn']):>10} {fmt(best['spec']):>12} {best['dyn'] / best['spec']:>6.3f} "
              f"{paired:>7.3f} {fmt(best['numpy']):>11}")
    print(f"  dynamic / specialized (paired): median {np.median(ratios):.3f}, max {max(ratios):.3f} "
          f"(target <= 1.1); compiles {info.compiles} (target <= 3)")
    return info.compiles, max(ratios)


def _paired_ratio(dyn, spec, rounds, clock, calls=5) -> float:
    """The median over rounds of dyn's time / spec's time measured back to back (in alternating
    order): a slow moment of the shared machine slows both of a pair, so it cancels."""
    ratios = []
    for r in range(rounds):
        times = {}
        for name, fn in ((("dyn", dyn), ("spec", spec)) if r % 2 else (("spec", spec), ("dyn", dyn))):
            t0 = clock()
            for _ in range(calls):
                fn()
            times[name] = clock() - t0
        ratios.append(times["dyn"] / times["spec"])
    return float(np.median(ratios))


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [np.asarray(x)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, default=100, help="distinct sizes per workload")
    parser.add_argument("--sample", type=int, default=8, help="sizes at which time per call is compared")
    parser.add_argument("--rounds", type=int, default=60, help="rounds of interleaved timing")
    parser.add_argument("--wall", action="store_true", help="wall time instead of this thread's CPU time")
    args = parser.parse_args()
    clock = time.perf_counter if args.wall else time.thread_time
    print(f"clock: {clock.__name__}, OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    rng = np.random.default_rng(0)
    batches = [128] + [int(n) for n in rng.permutation(np.setdiff1d(np.arange(16, 1024), [128]))[:args.sizes - 1]]
    lengths = [100_000] + [int(n) for n in rng.choice(np.arange(10_000, 1_000_000), args.sizes - 1, replace=False)]
    for case, sizes in ((mlp_case, batches), (elementwise_case, lengths)):
        run(case(sizes), sizes, args.sample, args.rounds, clock)


if __name__ == "__main__":
    main()
