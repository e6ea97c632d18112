"""optimizer.apply_gradients on one Variable, timed against the same update
written by hand in NumPy, in the same run.

    python bench/apply_gradients.py [--size 50] [--rounds 300]

Each row is one optimizer configuration: apply_gradients([(g, w)]) with `g`
a gradtape Tensor (read-only float64, as tape.gradient returns it) and `w` a
Variable, against the NumPy loop a user would write for the same rule
(slots updated in place, the parameter too, the step count and bias
correction in Python). Times are CPU time of this thread, the best of
`--rounds` rounds that run the two in turn (a shared machine drifts); the
ratio is gradtape's time over NumPy's (issue 6: the eager step must be no
slower than NumPy's, and apply_gradients is part of it). Before timing,
both make 21 updates from the same start and their parameters are compared.
"""
from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gradtape as gt  # noqa: E402
from _quiet import wait_quiet  # noqa: E402
from _timing import fmt, interleaved_best  # noqa: E402

O = gt.optimizers
LR = 0.01


def numpy_sgd(momentum=0.0, nesterov=False, weight_decay=None):
    def make(w):
        m = np.zeros_like(w)

        def update(g):
            nonlocal w, m  # updated in place (the names are rebound to the same arrays)
            if weight_decay is not None:
                w -= w * (weight_decay * LR)
            if momentum == 0.0:
                w -= LR * g
                return
            m *= momentum
            m -= LR * g
            w += momentum * m - LR * g if nesterov else m

        return update

    return make


def numpy_adam(weight_decay=None, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    def make(w):
        m, v, t = np.zeros_like(w), np.zeros_like(w), 0

        def update(g):
            nonlocal w, m, v, t
            t += 1
            if weight_decay is not None:
                w -= w * (weight_decay * LR)
            m += (1.0 - beta_1) * (g - m)
            v += (1.0 - beta_2) * (g * g - v)
            alpha = LR * math.sqrt(1.0 - beta_2 ** t) / (1.0 - beta_1 ** t)
            w -= alpha * m / (np.sqrt(v) + epsilon)

        return update

    return make


def numpy_rmsprop(rho=0.9, momentum=0.0, centered=False, epsilon=1e-7):
    def make(w):
        v, a, m = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)

        def update(g):
            nonlocal w, v, a, m
            v *= rho
            v += (1.0 - rho) * (g * g)
            if centered:
                a *= rho
                a += (1.0 - rho) * g
                step = LR * g / np.sqrt(v - a * a + epsilon)
            else:
                step = LR * g / np.sqrt(v + epsilon)
            if momentum > 0.0:
                m *= momentum
                m += step
                w -= m
            else:
                w -= step

        return update

    return make


CASES = [  # (label, gradtape optimizer, the NumPy update for a parameter array)
    ("SGD", lambda: O.SGD(LR), numpy_sgd()),
    ("SGD momentum", lambda: O.SGD(LR, momentum=0.9), numpy_sgd(0.9)),
    ("SGD nesterov", lambda: O.SGD(LR, momentum=0.9, nesterov=True), numpy_sgd(0.9, nesterov=True)),
    ("Adam", lambda: O.Adam(LR), numpy_adam()),
    ("AdamW", lambda: O.AdamW(LR, weight_decay=0.004), numpy_adam(weight_decay=0.004)),
    ("RMSprop", lambda: O.RMSprop(LR), numpy_rmsprop()),
    ("RMSprop centered+mom", lambda: O.RMSprop(LR, momentum=0.9, centered=True),
     numpy_rmsprop(momentum=0.9, centered=True)),
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=50, help="elements of the variable (float64)")
    parser.add_argument("--rounds", type=int, default=300, help="interleaved timing rounds")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=args.size)
    # Gradients taken in turn: with one constant gradient the moments converge to it and their differences
    # decay into subnormal numbers, whose arithmetic is many times slower and would be what is timed.
    arrays = [rng.normal(size=args.size) for _ in range(7)]
    for a in arrays:
        a.flags.writeable = False
    grads = [(gt.constant(a), a) for a in arrays]
    busy = wait_quiet()
    print(f"apply_gradients on one float64[{args.size}] Variable vs the same update in NumPy "
          f"(thread CPU time, best of {args.rounds} interleaved rounds; machine {busy:.0%} busy before)")
    print(f"{'optimizer':22s} {'gradtape':>10s} {'numpy':>10s} {'ratio':>7s}  check")
    for label, make_opt, make_numpy in CASES:
        opt, w = make_opt(), gt.Variable(w0, name="w")
        mine = w0.copy()
        update = make_numpy(mine)
        for g, g_array in grads * 3:
            opt.apply_gradients([(g, w)])
            update(g_array)
        same = np.allclose(w.numpy(), mine, rtol=1e-12, atol=1e-15)
        tensors, plain = itertools.cycle(g for g, _ in grads), itertools.cycle(a for _, a in grads)
        t = interleaved_best({"gradtape": lambda: opt.apply_gradients([(next(tensors), w)]),
                              "numpy": lambda: update(next(plain))}, args.rounds, calls=20, clock=time.thread_time)
        print(f"{label:22s} {fmt(t['gradtape']):>10s} {fmt(t['numpy']):>10s} "
              f"{t['gradtape'] / t['numpy']:6.2f}x  {'ok' if same else 'MISMATCH'}")


if __name__ == "__main__":
    main()
