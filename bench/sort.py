"""Sorting and order statistics in staged functions (the native argsort op, codegen/sort.py)
against NumPy in the same run, as ratios.

    python bench/sort.py [--sizes 1000 100000 1000000] [--rounds 5]

Rows (x: n standard normal float64 values; B: 1000 rows of 101):

    sort          gt.differentiable(np.sort)(x)        against np.sort(x)
    argsort       gt.differentiable(np.argsort)(x)     against np.argsort(x, kind="stable")
    median        gt.differentiable(np.median)(x)      against np.median(x)
    median rows   np.median(B, axis=1), staged         against np.median(B, axis=1)
    sort grad     gt.grad(sum(w * sort(x)))(x)         against hand NumPy: w scattered
                                                       back through np.argsort(x)

NumPy's sort is its introsort/SIMD sort (not stable), its median a
selection (O(n)); gradtape's sorts every row stably (O(n log n)) to keep the
permutation the derivative needs. Times are the best of interleaved rounds.

Measured (2 shared cores under load, --rounds 3, ratio to NumPy in the same run):

    row          n=1e3   n=1e5   n=1e6
    sort         5.74    4.63    5.32
    argsort      0.94    0.29    0.26
    median       1.68    2.13    2.47
    median rows  1.52 (1000 x 101)
    sort grad    1.01    0.32    0.33
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _quiet import wait_quiet  # noqa: E402
from _timing import fmt, interleaved_best  # noqa: E402

import gradtape as gt  # noqa: E402


def _hand_sort_grad(x, w):
    g = np.empty_like(x)
    g[np.argsort(x, kind="stable")] = w
    return g


def _rows(n, rng):
    x = rng.standard_normal(n)
    w = rng.standard_normal(n)
    rows = rng.standard_normal((1000, 101))
    return [
        ("sort", gt.differentiable(lambda t: np.sort(t)), x, np.sort),
        ("argsort", gt.differentiable(lambda t: np.argsort(t)), x, lambda v: np.argsort(v, kind="stable")),
        ("median", gt.differentiable(lambda t: np.median(t)), x, np.median),
        ("median rows", gt.differentiable(lambda t: np.median(t, axis=1)), rows, lambda v: np.median(v, axis=1)),
        ("sort grad", gt.grad(lambda t: gt.sum(w * np.sort(t))), x, lambda v: _hand_sort_grad(v, w)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100000, 1000000])
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    print(f"machine busy before timing: {wait_quiet():.0%}")
    print(f"{'row':>12} {'n':>8} {'NumPy':>10} {'gradtape':>10} {'ratio':>6}  equal")
    rng = np.random.default_rng(0)
    for n in opts.sizes:
        for name, staged, x, reference in _rows(n, rng):
            if name == "median rows" and n != opts.sizes[0]:
                continue  # its size does not depend on n
            for _ in range(4):  # past the interpreted first calls: native code (runtime/serving.py)
                staged(x)
            gt.runtime.wait_for_compiles()
            equal = np.array_equal(np.asarray(staged(x)), reference(x))
            calls = 2 if n >= 100000 else 20
            best = interleaved_best({"numpy": lambda: reference(x), "gradtape": lambda: staged(x)},
                                    rounds=opts.rounds, calls=calls)
            size = "1000x101" if name == "median rows" else str(n)
            print(f"{name:>12} {size:>8} {fmt(best['numpy']):>10} {fmt(best['gradtape']):>10} "
                  f"{best['gradtape'] / best['numpy']:>6.2f}  {equal}")


if __name__ == "__main__":
    main()
