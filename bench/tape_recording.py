"""Recording a forward pass on a GradientTape against the same code on NumPy arrays and
PyTorch eager, in one run (issue 24, point 4: within 1.5x of NumPy, ahead of PyTorch).

    python bench/tape_recording.py [--rounds N] [--only lstm1024|lstm128|gmm] [--read-step]

Workloads: ADBench's LSTM objective (bench/lstm_objective.py: 2 layers,
Python loops over 1,024 and 128 characters; on a tape through gradtape's
functions) and ADBench's GMM objective (bench/gmm_objective.py: N=1000,
K=10, D=8; on a tape through NumPy's own functions, dispatched to gradtape).
Contenders, timed in turn (bench/_timing.py's interleaved_best, thread CPU time):

  numpy   the same code on NumPy arrays;
  record  the tape's `with` block: every parameter watched, the objective
          recorded (ops are deferred: tracer/deferred.py);
  value   record, then read the objective's value (`.numpy()`: what NumPy
          computes), the tape freed first. The first four reads of a program
          compute the deferred ops one by one; from the fifth on, a compiled
          plan computes the value (tracer/value_plans.py);
  torch   PyTorch eager with requires_grad parameters, forward only (when
          PyTorch is installed; it is an optional bench extra);
  step    a training step's tape: record, then `tape.gradient` of every
          parameter (the cached plan computes forward and backward natively),
          then read the loss (which that plan computed);
  read step  the same, the loss read before the gradient (a loop that logs it;
          with --read-step only: in one process with the others it slows them,
          as any contender that leaves the memory in another state does);
  torch step  PyTorch's forward and `backward()`, the loss read.

Ratios are to `numpy` (the forward alone: NumPy has no gradient); `value/torch` is value
over torch, `step/torch` step over torch step. Every contender's objective is checked
against NumPy's first, and the step's gradients against PyTorch's.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import gradtape as gt  # noqa: E402

try:  # reads before that many are computed op by op (none before tracer/value_plans.py existed)
    from gradtape.tracer.value_plans import repeats as REPEATS
except ImportError:
    REPEATS = 1
import gmm_objective as gmm  # noqa: E402
import lstm_objective as lstm  # noqa: E402
from _timing import fmt, interleaved_best  # noqa: E402

try:
    import torch

    torch.set_num_threads(1)  # one core, as NumPy's small ops here
except ImportError:
    torch = None


def workload(name):
    """(objective(module, *params, *data), params, data, module the tape's code calls)."""
    if name.startswith("lstm"):
        main, extra, state, sequence = lstm.inputs(int(name[4:]))
        return lstm.lstm_objective, (main, extra, state), (sequence,), gt
    alphas, means, icf, x = gmm.inputs()
    return gmm.gmm_objective, (alphas, means, icf, x), (), np


def cases(name, read_step=False):
    objective, params, data, tape_module = workload(name)
    if name == "gmm":  # x is data, not a parameter
        params, data = params[:3], params[3:]
    watched = [gt.constant(p) for p in params]

    def record():
        with gt.GradientTape() as tape:
            for p in watched:
                tape.watch(p)
            loss = objective(tape_module, *watched, *data)
        return loss

    def step():  # a training step's tape: record, then the gradient (forward and backward compiled)
        with gt.GradientTape() as tape:
            for p in watched:
                tape.watch(p)
            loss = objective(tape_module, *watched, *data)
        grads = tape.gradient(loss, watched)
        return loss.numpy(), [g.numpy() for g in grads]  # the loss is read after: the plan computed it

    def read_logged_step():  # a loop that logs its loss before the gradient
        with gt.GradientTape() as tape:
            for p in watched:
                tape.watch(p)
            loss = objective(tape_module, *watched, *data)
        value = loss.numpy()
        return value, [g.numpy() for g in tape.gradient(loss, watched)]

    out = {"numpy": lambda: objective(np, *params, *data), "record": record, "value": lambda: record().numpy(),
           "step": step}
    if read_step:
        out["read step"] = read_logged_step
    if torch is not None:
        tparams = [torch.tensor(p, requires_grad=True) for p in params]
        tdata = [torch.tensor(d) for d in data]
        out["torch"] = lambda: objective(torch, *tparams, *tdata)

        def torch_step():
            for p in tparams:
                p.grad = None
            loss = objective(torch, *tparams, *tdata)
            loss.backward()
            return loss.item(), [p.grad.numpy() for p in tparams]
        out["torch step"] = torch_step
    return out


def check(name, fns):
    want = fns["numpy"]()
    steps = [k for k in ("step", "read step") if k in fns]
    for _ in range(REPEATS - 1):  # read op by op, then (below) by the plan
        fns["value"]()
        if "read step" in fns:
            fns["read step"]()
    got = {"value": fns["value"]()}
    if "torch" in fns:
        got["torch"] = fns["torch"]().item()
    for k, v in got.items():
        if not np.allclose(v, want, rtol=1e-12, atol=0):
            sys.exit(f"{name}: {k} gives {v}, NumPy {want}")
    for step in steps:
        loss, grads = fns[step]()
        if not np.allclose(loss, want, rtol=1e-12, atol=0):
            sys.exit(f"{name}: {step}'s loss is {loss}, NumPy's {want}")
        if "torch step" in fns:  # the gradients against PyTorch's autograd
            _, want_grads = fns["torch step"]()
            for i, (g, w) in enumerate(zip(grads, want_grads)):
                if not np.allclose(g, w, rtol=1e-9, atol=1e-12):
                    sys.exit(f"{name}: {step}'s gradient of parameter {i} differs from PyTorch's")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=["lstm1024", "lstm128", "gmm"])
    ap.add_argument("--read-step", action="store_true", help="also time a step that reads the loss first")
    args = ap.parse_args()
    names = [args.only] if args.only else ["lstm1024", "lstm128", "gmm"]
    if torch is None:
        print("PyTorch is not installed: no torch column (pip install torch)")
    print(f"{'workload':10s} {'numpy':>10s} {'record':>16s} {'value':>16s} {'torch':>16s} {'value/torch':>11s}"
          f" {'step':>16s} {'read step':>16s} {'torch step':>16s} {'step/torch':>10s}")
    for name in names:
        fns = cases(name, args.read_step)
        check(name, fns)
        for fn in fns.values():  # warm: memos, the first call's imports
            fn()
        calls = 1 if name == "lstm1024" else 3 if name == "lstm128" else 10
        # warmup: each timed run follows an untimed call of the same function, as a loop's steps follow
        # each other (the call before it was another contender's, which left other memory in the caches)
        best = interleaved_best(fns, rounds=args.rounds, calls=calls, clock=time.thread_time, warmup=True)
        base = best["numpy"]

        def col(k):
            return f"{fmt(best[k])} {best[k] / base:5.2f}x" if k in best else "-"
        vt = f"{best['value'] / best['torch']:10.2f}x" if "torch" in best else "-"
        st = f"{best['step'] / best['torch step']:9.2f}x" if "torch step" in best else "-"
        print(f"{name:10s} {fmt(base):>10s} {col('record'):>16s} {col('value'):>16s} {col('torch'):>16s} {vt:>11s}"
              f" {col('step'):>16s} {col('read step'):>16s} {col('torch step'):>16s} {st:>10s}")


if __name__ == "__main__":
    main()
