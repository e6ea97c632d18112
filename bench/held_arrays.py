"""What checking the user's arrays costs a tape (gradtape/tracer/held_arrays.py), in one run.

    python bench/held_arrays.py [--rounds N]

A tape fingerprints each NumPy array passed to a recorded op that its owner
can still write, and compares the fingerprint before reading the array
again (tape.gradient, a deferred value). Each case runs the same recording
twice, interleaved (best of N rounds of thread time): with writeable arrays
(held and checked) and with read-only copies of them (nothing to check),
and reports the ratio. Before the check existed the ratio was 1.00x.

  W4 forward   logistic regression's loss recorded on a tape, X 4000x50 and
               y 4000 (bench/workloads.py): X is sampled, y compared whole
  W4 step      the same, with tape.gradient and apply_gradients
  16x50 step   a minibatch of 16 rows: both arrays compared whole
  x * a        one recorded op on 100 elements (a chain of 100 per tape)
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import gradtape as gt  # noqa: E402
import workloads as W  # noqa: E402
from _timing import fmt, interleaved_best  # noqa: E402


def _read_only(*arrays):
    out = []
    for a in arrays:
        a = a.copy()
        a.flags.writeable = False
        out.append(a)
    return out


def step_cases(X, y, with_gradient):
    w = gt.Variable(np.zeros(X.shape[1]), name="w")
    opt = gt.optimizers.SGD(0.1)

    def run(X, y):
        def one():
            with gt.GradientTape() as tape:
                loss = W.logreg_loss(w, X, y)
            if with_gradient:
                opt.apply_gradients([(tape.gradient(loss, w), w)])
        return one

    return run(X, y), run(*_read_only(X, y))


def op_cases():
    x = gt.constant(np.linspace(0.0, 1.0, 100))
    a = np.linspace(1.0, 2.0, 100)

    def run(a):
        def chain():
            with gt.GradientTape() as tape:
                tape.watch(x)
                for _ in range(100):
                    x * a
        return chain

    return run(a), run(*_read_only(a))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    X, y = W.logreg_data()
    cases = {"W4 forward": step_cases(X, y, False), "W4 step": step_cases(X, y, True),
             "16x50 step": step_cases(X[:16].copy(), y[:16].copy(), True), "x * a (per op)": op_cases()}
    print(f"{'':16s} {'writeable':>12s} {'read-only':>12s} {'ratio':>7s}")
    for name, (writeable, read_only) in cases.items():
        for _ in range(20):  # compiles the backward plans
            writeable(), read_only()
        gt.runtime.wait_for_compiles()
        # Each pair on its own, in both orders: the first of a round can meet the garbage
        # collector for what the one before left.
        pair = {"writeable": writeable, "read-only": read_only}
        t = interleaved_best(pair, rounds=args.rounds, calls=5, clock=time.thread_time)
        swapped = interleaved_best(dict(reversed(pair.items())), rounds=args.rounds, calls=5, clock=time.thread_time)
        scale = 100 if name.startswith("x * a") else 1
        held, free = (min(t[k], swapped[k]) / scale for k in pair)
        print(f"{name:16s} {fmt(held):>12s} {fmt(free):>12s} {held / free:6.2f}x")

if __name__ == "__main__":
    main()
