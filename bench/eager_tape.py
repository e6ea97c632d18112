"""The eager tape against staged gradtape, hand NumPy and PyTorch eager, in one run.

    python bench/eager_tape.py [--rounds N]

Four measurements, each as ratios to baselines timed in the same run,
interleaved (bench/_timing.py's interleaved_best: the best of N rounds that
run every contender in turn, so that all meet the same quiet moments):

  rosenbrock  value and gradient of the 2-D Rosenbrock function on a tape
              (`x[0]`, `x[1]`: scalar indexing), against PyTorch eager
              (target: at least 2x faster) and the analytic NumPy formula;
  index       one recorded `x[0]` against one recorded `x * y` (target: no
              more than the elementwise op);
  hvp         a Hessian-vector product of W5 (bench/transform_workloads.py,
              n = 2000) with a ForwardAccumulator inside a GradientTape
              (reverse over forward), a tape inside an accumulator (forward
              over reverse) and two nested tapes, against the staged
              `gt.hvp` (target: within 1.5x) and PyTorch's double backward;
  jacobian    `tape.jacobian` of W6 (`tanh(W @ x) + x^3`, n = 200) against
              the staged `gt.jacobian` (target: within 3x) and PyTorch's
              `torch.autograd.functional.jacobian(vectorize=True)`.

PyTorch is optional (`pip install torch --index-url
https://download.pytorch.org/whl/cpu`); without it its columns say so. Each
eager contender runs a few times before timing, so that its cached plan is
compiled (as in a loop), and every result is checked against the staged
one first.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import gradtape as gt  # noqa: E402
from _timing import fmt, interleaved_best  # noqa: E402
from transform_workloads import w5_data, w5_f, w6_data, w6_g  # noqa: E402

try:
    import torch

    torch.set_num_threads(1)  # as the rest of this run: one core each
except ImportError:
    torch = None


# --- Rosenbrock value_and_grad -------------------------------------------------------

def rosenbrock(x):
    return 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2


def rosenbrock_cases(x0):
    x = gt.constant(x0)

    def tape():
        with gt.GradientTape() as t:
            t.watch(x)
            y = rosenbrock(x)
        g = t.gradient(y, x)
        return y.numpy(), g.numpy()

    def numpy_by_hand():
        a, b = x0
        r = b - a * a
        return 100.0 * r * r + (1.0 - a) ** 2, np.array([-400.0 * a * r - 2.0 * (1.0 - a), 200.0 * r])

    staged = gt.value_and_grad(rosenbrock)
    cases = {"tape": tape, "staged": lambda: staged(x0), "numpy": numpy_by_hand}
    if torch is not None:
        def torch_eager():
            xt = torch.tensor(x0, requires_grad=True)
            y = rosenbrock(xt)
            y.backward()
            return y.detach().numpy(), xt.grad.numpy()
        cases["torch"] = torch_eager
    return cases


# --- indexing --------------------------------------------------------------------------

CHAIN = 100


def index_cases():
    x, y = gt.constant(np.array([1.2, 0.7])), gt.constant(np.array([0.3, 0.4]))

    def recorded(op):
        def run():
            with gt.GradientTape() as tape:
                tape.watch(x)
                for _ in range(CHAIN):
                    op()
        return run

    return {"x[0]": recorded(lambda: x[0]), "x * y": recorded(lambda: x * y),
            "x[1:, None] (general)": recorded(lambda: x[1:, None])}


# --- Hessian-vector product -----------------------------------------------------------

def hvp_cases(A, x0, v0):
    x, v = gt.constant(x0), gt.constant(v0)

    def reverse_over_forward():
        with gt.GradientTape() as tape:
            tape.watch(x)
            with gt.ForwardAccumulator(x, v) as acc:
                y = w5_f(x, A)
            jv = acc.jvp(y)
        return tape.gradient(jv, x).numpy()

    def forward_over_reverse():
        with gt.ForwardAccumulator(x, v) as acc:
            with gt.GradientTape() as tape:
                tape.watch(x)
                y = w5_f(x, A)
            g = tape.gradient(y, x)
        return acc.jvp(g).numpy()

    def nested_tapes():
        with gt.GradientTape() as outer:
            outer.watch(x)
            with gt.GradientTape() as inner:
                inner.watch(x)
                y = w5_f(x, A)
            gv = gt.sum(inner.gradient(y, x) * v)
        return outer.gradient(gv, x).numpy()

    staged = gt.hvp(w5_f)
    cases = {"staged gt.hvp": lambda: staged(x0, v0, A), "acc in tape": reverse_over_forward,
             "tape in acc": forward_over_reverse, "nested tapes": nested_tapes}
    if torch is not None:
        At, vt = torch.tensor(A), torch.tensor(v0)

        def torch_double_backward():
            xt = torch.tensor(x0, requires_grad=True)
            y = torch.sum(torch.tanh(xt) ** 2 * xt) + 0.5 * torch.sum((At @ xt) ** 2)
            (g,) = torch.autograd.grad(y, xt, create_graph=True)
            (hv,) = torch.autograd.grad(g, xt, vt)
            return hv.numpy()
        cases["torch"] = torch_double_backward
    return cases


# --- Jacobian --------------------------------------------------------------------------

def jacobian_cases(W, x0):
    x = gt.constant(x0)

    def tape_jacobian():
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = w6_g(x, W)
        return tape.jacobian(y, x).numpy()

    staged = gt.jacobian(w6_g)
    cases = {"staged gt.jacobian": lambda: staged(x0, W), "tape.jacobian": tape_jacobian}
    if torch is not None:
        Wt = torch.tensor(W)
        cases["torch"] = lambda: torch.autograd.functional.jacobian(
            lambda xt: torch.tanh(Wt @ xt) + xt ** 3, torch.tensor(x0), vectorize=True).numpy()
    return cases


def _warm_and_check(cases, reference_name, pick=lambda r: r):
    reference = pick(cases[reference_name]())
    for name, fn in cases.items():
        for _ in range(8):  # past compile_after_runs: the cached plans compile
            fn()
        gt.runtime.wait_for_compiles()
        got = pick(fn())
        if got is not None:
            np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(reference, dtype=float),
                                       rtol=1e-9, atol=1e-12, err_msg=name)


def _report(title, best, base, target=None, per=1):
    print(f"\n{title}")
    for name, t in best.items():
        ratio = t / best[base]
        note = ""
        if target is not None and name == target[0]:
            note = f"   target: {target[1]}"
        print(f"  {name:20s} {fmt(t / per):>10s}  {ratio:6.2f}x {base}{note}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds (the best is kept)")
    args = parser.parse_args(argv)
    if torch is None:
        print("PyTorch is not installed: its columns are skipped "
              "(pip install torch --index-url https://download.pytorch.org/whl/cpu)")

    cases = rosenbrock_cases(np.array([1.2, 0.7]))
    _warm_and_check(cases, "numpy", pick=lambda r: np.concatenate([np.ravel(r[0]), np.ravel(r[1])]))
    best = interleaved_best(cases, rounds=args.rounds * 5, calls=20)
    _report("Rosenbrock value_and_grad, 2-D", best, "torch" if torch is not None else "numpy",
            ("tape", "at least 2x faster than torch eager (ratio <= 0.5)"))

    cases = index_cases()
    best = interleaved_best(cases, rounds=args.rounds * 2, calls=5)
    _report(f"one recorded op (a chain of {CHAIN} on a fresh tape, per op)", best, "x * y",
            ("x[0]", "no more than x * y (ratio <= 1)"), per=CHAIN)

    A, x0, v0 = w5_data()
    cases = hvp_cases(A, x0, v0)
    _warm_and_check(cases, "staged gt.hvp")
    best = interleaved_best(cases, rounds=args.rounds, calls=2)
    _report("Hessian-vector product, W5 (n = 2000)", best, "staged gt.hvp",
            ("acc in tape", "within 1.5x of staged gt.hvp"))

    W, x6 = w6_data()
    cases = jacobian_cases(W, x6)
    _warm_and_check(cases, "staged gt.jacobian")
    best = interleaved_best(cases, rounds=args.rounds, calls=5)
    _report("Jacobian of tanh(W @ x) + x^3, n = 200", best, "staged gt.jacobian",
            ("tape.jacobian", "within 3x of staged gt.jacobian"))


if __name__ == "__main__":
    main()
