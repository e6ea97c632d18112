"""W4 (logistic regression 4000x50, 100 full-batch gradient-descent steps) written
three ways with gradtape, timed against hand-written NumPy in the same run.

    python bench/training_step.py [--check] [--runs 3]

  eager     GradientTape records the loss each step (deferred: nothing is computed op by
            op), tape.gradient runs forward and backward as one cached compiled
            function, SGD.apply_gradients updates a Variable
  tape+staged  the same loop with the loss a @differentiable function (recorded as one
            deferred `call`, which tape.gradient inlines and fuses with the backward):
            informational, no target
  staged    value_and_grad (one compiled call) + the functional SGD.update in NumPy
  compiled  gradtape.train_step(..., return_loss=False): gradient and update in one native
            call per step, the work the NumPy loop does (the target row)
  compiled+loss  the default train_step, which also computes and returns the mean loss
  numpy     the baseline: the same loop by hand (bench/workloads.py's w4_numpy)
  jax       jax.jit of the gradient, when JAX is installed

Each run times every loop in turn, ROUNDS times, and keeps each one's best
round. Ratios are NumPy's time over each one's (> 1: faster than NumPy). Targets
(issue 6): compiled >= 2.0x, eager >= 1.0x. With --check the final weights
of every implementation are compared with NumPy's first; --breakdown times
the parts of one eager step (where its time goes).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gradtape as gt  # noqa: E402
import workloads as W  # noqa: E402
from _quiet import wait_quiet  # noqa: E402
from _timing import fmt, interleaved_best  # noqa: E402

STEPS, LR = 100, 0.1
ROUNDS = 15  # interleaved timing rounds per run
TARGETS = {"compiled": 2.0, "eager": 1.0}


def w4_eager(X, y, loss_fn=W.logreg_loss):
    def loop():
        w = gt.Variable(np.zeros(X.shape[1]), name="w")
        opt = gt.optimizers.SGD(LR)
        for _ in range(STEPS):
            with gt.GradientTape() as tape:
                loss = loss_fn(w, X, y)
            opt.apply_gradients([(tape.gradient(loss, w), w)])
        return w.numpy()

    return loop


def w4_tape_staged_loss(X, y):
    return w4_eager(X, y, gt.differentiable(W.logreg_loss))


def w4_staged(X, y):
    value_and_grad = gt.value_and_grad(W.logreg_loss)

    def loop():
        w = np.zeros(X.shape[1])
        opt = gt.optimizers.SGD(LR)
        state = opt.init(w)
        for _ in range(STEPS):
            _, g = value_and_grad(w, X, y)
            w, state = opt.update(g, state, w)
        return w

    return loop


def w4_compiled(X, y, return_loss=False):
    # traced and compiled on the first call
    step = gt.train_step(W.logreg_loss, gt.optimizers.SGD(LR), return_loss=return_loss)

    def loop():
        w = np.zeros(X.shape[1])
        for _ in range(STEPS):
            step(w, X, y)
        return w

    return loop


IMPLEMENTATIONS = {"eager": w4_eager, "tape+staged": w4_tape_staged_loss, "staged": w4_staged,
                   "compiled": w4_compiled, "compiled+loss": lambda X, y: w4_compiled(X, y, return_loss=True)}


def eager_breakdown(X, y):
    """Time the parts of one eager step, to see where it spends its time."""
    w = gt.Variable(np.zeros(X.shape[1]), name="w")
    opt = gt.optimizers.SGD(LR)

    def forward():
        with gt.GradientTape() as tape:
            loss = W.logreg_loss(w, X, y)
        return tape, loss

    def step():
        tape, loss = forward()
        opt.apply_gradients([(tape.gradient(loss, w), w)])

    def forward_and_gradient():
        tape, loss = forward()
        return tape.gradient(loss, w)

    def same_ops_in_numpy():  # what logreg_loss's ops compute, as gradtape's softplus computes it
        z = X @ w.numpy()
        return np.sum(np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z))) - y * z) / len(y)

    for _ in range(20):
        step()
    gt.runtime.wait_for_compiles()
    g = forward_and_gradient()
    t = interleaved_best({
        "step": step, "forward": forward, "forward_and_gradient": forward_and_gradient,
        "unrecorded": lambda: W.logreg_loss(w, X, y), "numpy_ops": same_ops_in_numpy,
        "apply": lambda: opt.apply_gradients([(g, w)]), "numpy_step": W.w4_numpy(X, y, 1, LR)})
    print(f"one eager step {fmt(t['step'])} (one NumPy step {fmt(t['numpy_step'])}), "
          "best of 30 interleaved rounds:")
    print(f"  forward recorded on the tape (deferred: not computed)  {fmt(t['forward']):>10s}")
    print(f"    the same gradtape ops computed, no tape              {fmt(t['unrecorded']):>10s}")
    print(f"    the same ops in bare NumPy                           {fmt(t['numpy_ops']):>10s}")
    print(f"  tape.gradient (forward and backward, one native call)  {fmt(t['forward_and_gradient'] - t['forward']):>10s}")
    print(f"  apply_gradients                                        {fmt(t['apply']):>10s}")


def check(name, ref, got) -> bool:
    err = float(np.max(np.abs(np.asarray(ref) - np.asarray(got))) / np.max(np.abs(ref)))
    ok = err < 1e-8
    print(f"  check {name}: max relative deviation from NumPy {err:.1e} {'ok' if ok else 'MISMATCH'}")
    return ok


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare final weights before timing")
    parser.add_argument("--runs", type=int, default=3, help="timing runs (each waits for a quiet machine)")
    parser.add_argument("--breakdown", action="store_true", help="time the parts of one eager step")
    args = parser.parse_args(argv)
    X, y = W.logreg_data()
    if args.breakdown:
        wait_quiet()
        eager_breakdown(X, y)
        return
    loops = {"numpy": W.w4_numpy(X, y, STEPS, LR)}
    loops.update({name: make(X, y) for name, make in IMPLEMENTATIONS.items()})
    if W.jax is not None:
        loops["jax"] = W.w4_jax(X, y, STEPS, LR)
    reference = loops["numpy"]()
    for name, loop in loops.items():
        result = loop()  # warm: traces, compiles (the tape's backward plan compiles from its 5th run)
        gt.runtime.wait_for_compiles()
        result = loop()
        if args.check and name != "numpy":
            check(name, reference, result)
    ratios = {name: [] for name in loops if name != "numpy"}
    print(f"W4: logistic regression {X.shape[0]}x{X.shape[1]}, {STEPS} steps of SGD (lr {LR}); "
          "time per 100-step loop, and NumPy's time / its time")
    for run in range(args.runs):
        busy = wait_quiet()
        # Best of interleaved rounds: every loop meets the same quiet moments, so the
        # baseline's drift (one NumPy loop took 11 to 20 ms in one session) does not
        # become the ratio's.
        times = interleaved_best(loops, rounds=ROUNDS, calls=1)
        cells = [f"numpy {fmt(times['numpy'])}"]
        for name in ratios:
            ratios[name].append(times["numpy"] / times[name])
            cells.append(f"{name} {fmt(times[name])} ({ratios[name][-1]:.2f}x)")
        print(f"run {run + 1} (machine {busy:.0%} busy before): " + ", ".join(cells))
    print(f"{'':14s} {'median ratio':>13s} {'range':>13s} {'target':>8s}")
    for name, values in ratios.items():
        median = statistics.median(values)
        target = TARGETS.get(name)
        verdict = "" if target is None else ("  met" if median >= target else "  MISSED")
        spread = f"{min(values):.2f}-{max(values):.2f}x"
        print(f"{name:14s} {median:12.2f}x {spread:>13s} {(f'{target:.1f}x' if target else '-'):>8s}{verdict}")


if __name__ == "__main__":
    main()
