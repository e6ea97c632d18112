"""Front-end overhead of the NumPy-like functions: what a call such as `y * z`,
`gt.mean(z)` or `X @ w` costs beyond the `bind`s it makes, inside an active
GradientTape (every op deferred, so nothing is computed: only Python runs).

Each case runs a batch of calls on a fresh tape, next to a batch binding the
same ops with the same operands directly; the difference per call is the
front end's overhead (argument handling, dtype promotion, NumPy's dispatch
protocols). It is printed in microseconds and as a ratio to one bare NumPy
ufunc call on a tiny array, measured in the same run. The last column counts
the function calls (Python and built-in, as cProfile sees them) a front-end
call makes beyond its binds: an exact figure where the times are noisy.

    python bench/frontend_overhead.py [--calls 100] [--rounds 100] [--only LABEL]

The operands are those of the eager logistic-regression loss (issue 6,
bench/workloads.py's `logreg_loss`): X a 4000x50 array, y a 4000 array, w a
Variable, z = X @ w a pending tensor.
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gradtape as gt  # noqa: E402
import workloads as W  # noqa: E402
from _quiet import wait_quiet  # noqa: E402
from gradtape.ir.ops import elementwise as ew, reduce as red  # noqa: E402
from gradtape.ir.ops.contract import contract_p  # noqa: E402
from gradtape.tracer.dispatch import bind  # noqa: E402

SPEC = "ij,j->i"  # X @ w


def cases(X, y, w):
    """(label, front-end call of z, the same binds made directly, number of binds)."""
    n = np.float64(len(y))
    two = np.float64(2.0)
    return [
        ("X @ w", lambda z: X @ w, lambda z: bind(contract_p, X, w, spec=SPEC), 1),
        ("gt.matmul(X, w)", lambda z: gt.matmul(X, w), lambda z: bind(contract_p, X, w, spec=SPEC), 1),
        ("y * z", lambda z: y * z, lambda z: bind(ew.mul_p, y, z), 1),
        ("z * y", lambda z: z * y, lambda z: bind(ew.mul_p, z, y), 1),
        ("z - z", lambda z: z - z, lambda z: bind(ew.sub_p, z, z), 1),
        ("z * 2.0", lambda z: z * 2.0, lambda z: bind(ew.mul_p, z, two), 1),
        ("2.0 * z", lambda z: 2.0 * z, lambda z: bind(ew.mul_p, two, z), 1),
        ("np.multiply(y, z)", lambda z: np.multiply(y, z), lambda z: bind(ew.mul_p, y, z), 1),
        ("gt.softplus(z)", gt.softplus, lambda z: bind(ew.softplus_p, z), 1),
        ("gt.exp(z)", gt.exp, lambda z: bind(ew.exp_p, z), 1),
        ("np.exp(z)", np.exp, lambda z: bind(ew.exp_p, z), 1),
        ("-z", lambda z: -z, lambda z: bind(ew.neg_p, z), 1),
        ("gt.sum(z)", gt.sum, lambda z: bind(red.reduce_sum_p, z, axes=(0,)), 1),
        ("gt.mean(z)", gt.mean, lambda z: bind(ew.div_p, bind(red.reduce_sum_p, z, axes=(0,)), n), 2),
        ("z.mean()", lambda z: z.mean(),
         lambda z: bind(ew.div_p, bind(red.reduce_sum_p, z, axes=(0,)), n), 2),
        ("np.mean(z)", np.mean, lambda z: bind(ew.div_p, bind(red.reduce_sum_p, z, axes=(0,)), n), 2),
        ("gt.mean(z, axis=0)", lambda z: gt.mean(z, axis=0),
         lambda z: bind(ew.div_p, bind(red.reduce_sum_p, z, axes=(0,)), n), 2),
    ]


def batch(X, w, body, calls):
    """One timed batch: a fresh tape, z = X @ w on it, then `calls` calls of body(z)."""

    def run():
        gc.disable()  # a collection's cost depends on what earlier batches left, not on this one
        try:
            t0 = time.thread_time()
            with gt.GradientTape():
                z = bind(contract_p, X, w, spec=SPEC)
                for _ in range(calls):
                    body(z)
            return time.thread_time() - t0
        finally:
            gc.enable()

    return run


def extra_calls(X, w, front, direct, calls: int = 20) -> float:
    """Function calls (Python and built-in, as cProfile counts them) per front-end call
    beyond those of its direct binds: a count the machine's noise does not change."""

    def count(body):
        profile = cProfile.Profile()
        with gt.GradientTape():
            z = bind(contract_p, X, w, spec=SPEC)
            profile.enable()
            for _ in range(calls):
                body(z)
            profile.disable()
        return sum(stat[1] for stat in pstats.Stats(profile).stats.values())

    return (count(front) - count(direct)) / calls


def best_of(runs: dict, rounds: int) -> dict:
    """Best time of each run over `rounds` rounds that take them in turn (a shared
    machine drifts; interleaving lets every run meet the same quiet moments)."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for key, run in runs.items():
            best[key] = min(best[key], run())
    return best


def numpy_ufunc_time(calls: int, rounds: int) -> float:
    a = np.ones(8)

    def run():
        t0 = time.thread_time()
        for _ in range(calls):
            np.multiply(a, a)
        return time.thread_time() - t0

    return best_of({"ufunc": run}, rounds)["ufunc"] / calls


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="calls per timed batch")
    parser.add_argument("--rounds", type=int, default=100, help="batches per case (the best counts)")
    parser.add_argument("--only", default="", help="time only the cases whose label contains this")
    args = parser.parse_args(argv)
    X, y = W.logreg_data()
    w = gt.Variable(np.zeros(X.shape[1]), name="w")
    table = [case for case in cases(X, y, w) if args.only in case[0]]
    for _, front, direct, _ in table:  # warm the signature memos and NumPy's dispatch caches
        batch(X, w, front, 3)()
        batch(X, w, direct, 3)()
    busy = wait_quiet()
    ufunc = numpy_ufunc_time(args.calls, args.rounds)
    print(f"one NumPy ufunc call, np.multiply on 8 float64: {ufunc * 1e6:.2f} us "
          f"(machine busy {busy:.0%} before timing)")
    print(f"{'front-end call':22s} {'binds':>5s} {'call':>9s} {'bind(s)':>9s} "
          f"{'overhead':>9s} {'/ ufunc':>8s} {'calls':>6s}")
    total = 0.0
    for label, front, direct, binds in table:
        t = best_of({"front": batch(X, w, front, args.calls), "direct": batch(X, w, direct, args.calls),
                     "empty": batch(X, w, lambda z: None, args.calls)}, args.rounds)
        call = (t["front"] - t["empty"]) / args.calls
        bound = (t["direct"] - t["empty"]) / args.calls
        over = call - bound
        total += over
        print(f"{label:22s} {binds:5d} {call * 1e6:7.2f}us {bound * 1e6:7.2f}us "
              f"{over * 1e6:7.2f}us {over / ufunc:7.1f}x {extra_calls(X, w, front, direct):6.0f}")
    print(f"mean overhead per call {total / len(table) * 1e6:.2f} us "
          f"({total / len(table) / ufunc:.1f} NumPy ufunc calls)")


if __name__ == "__main__":
    main()
