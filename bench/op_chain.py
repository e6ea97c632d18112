"""Run time of the gradient of a chain of small elementwise ops (W7), beside JAX and NumPy.

The chain is W7's (bench/workloads.py): 100 ops on 256 float64 values,
repeating sin, * 1.01, + 0.1, tanh, summed; the gradient is taken with
`gt.grad` (compiled, native code in place before timing), `jax.jit(jax.grad)`
and hand-written NumPy (forward values kept, then the backward pass). The
three take turns and each keeps its best round (`interleaved_best`), so
that all meet the same quiet moments of these shared cores (wall time:
JAX computes on threads of its own, which a thread clock would miss). Printed: microseconds per call and each one's ratio to
gradtape (above 1: slower than gradtape).

    python bench/op_chain.py [--rounds 30] [--ops 100]
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import numpy as np  # noqa: E402

import gradtape as gt  # noqa: E402
from gradtape import runtime  # noqa: E402

import workloads as W  # noqa: E402
from _quiet import busy_fraction, wait_quiet  # noqa: E402
from _timing import interleaved_best  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--ops", type=int, default=W.CHAIN)
    args = parser.parse_args()
    W.CHAIN = args.ops
    x = np.random.default_rng(0).uniform(-1.0, 1.0, 256)
    runs = {"gradtape": W.w7_gradtape(x), "numpy": W.w7_numpy(x)}
    if W.jax is not None:
        runs["jax"] = W.w7_jax(x)
    else:
        print("(JAX is not installed: its row is left out)")
    runs["gradtape"]()
    runtime.wait_for_compiles()
    reference = runs["numpy"]()
    for name, run in runs.items():
        got = np.asarray(run())
        np.testing.assert_allclose(got, reference, rtol=1e-10, err_msg=name)
    print(f"(CPUs {wait_quiet():.0%} busy before)")
    best = interleaved_best(runs, rounds=args.rounds, calls=20)
    base = best["gradtape"]
    print(f"grad of a {args.ops}-op elementwise chain, 256 float64 (best of {args.rounds} rounds)")
    for name, seconds in best.items():
        print(f"  {name:9s} {seconds * 1e6:9.2f} us   {seconds / base:6.2f}x gradtape's time")
    if "jax" in best:
        print(f"gradtape is {best['jax'] / base:.2f}x faster than JAX (target: at least 2x)")
    print(f"(CPUs {busy_fraction():.0%} busy after)")


if __name__ == "__main__":
    main()
