"""Jacobians by shape: outputs x inputs from 10 x 1,000 to 10,000 x 10, gradtape's
`jacobian` (mode "auto") against its own jacfwd and jacrev and JAX's, in one run.

    python bench/jacobian_shapes.py [--quick] [--rounds N] [--check]
    PYTHONPATH=. /path/to/venv-with-jax/bin/python bench/jacobian_shapes.py

Two functions of x (n inputs) with m outputs, each at every shape:

  dense   y = tanh(A @ sin(x)), A a fixed (m, n) matrix: every output reads
          every input (the Jacobian is dense);
  gather  y = tanh(x[i] * w + x[j]), i and j fixed (m,) indices into x: each
          output reads two inputs (a gather of m rows).

A mode whose basis has more than MAX_BASIS elements (n x n for forward,
m x m for reverse mode) is not run, for gradtape or JAX: `-` in its column.

Columns: the NumPy objective's time, then x that time for gradtape's
`jacobian` (auto), `jacfwd` and `jacrev` and, with JAX, `jax.jit` of
`jax.jacfwd` and `jax.jacrev`; then `auto/best gt` (auto over the faster of
gradtape's two modes: 1.00x when auto picked the faster one), `auto/jax`
(auto over the faster of JAX's two) and the mode auto picked (by its
cost model when the shape is within a factor 32 of square: ir/jacobians.py). Every Jacobian
is checked against the analytic one before timing.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]
from _timing import fmt, interleaved_best  # noqa: E402
from adbench_like import gt, jax, jnp  # noqa: E402  (gradtape; JAX in 64 bits, or None)
from gradtape.ir.jacobians import choose_jacobian  # noqa: E402

SHAPES = {  # (outputs, inputs)
    "full": [(10, 1000), (100, 1000), (300, 300), (1000, 100), (10000, 10)],
    "quick": [(10, 1000), (1000, 100), (10000, 10)],
}


def dense_case(m, n, rng):
    a = rng.standard_normal((m, n)) / np.sqrt(n)

    def f(np_, x):
        return np_.tanh(a @ np_.sin(x))

    def jac(x):
        y = np.tanh(a @ np.sin(x))
        return (1 - y * y)[:, None] * a * np.cos(x)[None, :]
    return f, jac


def gather_case(m, n, rng):
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.standard_normal(m)

    def f(np_, x):
        return np_.tanh(x[i] * w + x[j])

    def jac(x):
        y = np.tanh(x[i] * w + x[j])
        out = np.zeros((m, n))
        np.add.at(out, (np.arange(m), i), (1 - y * y) * w)
        np.add.at(out, (np.arange(m), j), 1 - y * y)
        return out
    return f, jac


CASES = {"dense": dense_case, "gather": gather_case}


MAX_BASIS = 4_000_000  # a mode whose basis (directions x directions) is larger is not run


def contenders(f, x, m):
    """The functions timed; a mode of m x m (reverse) or n x n (forward) basis elements past
    MAX_BASIS is left out (10,000 VJPs of 10,000 outputs: 800 MB of cotangents)."""
    n = x.size
    runs = {"fwd": n * n <= MAX_BASIS, "rev": m * m <= MAX_BASIS}
    fns = {"numpy": lambda: f(np, x), "auto": lambda j=gt.jacobian(lambda x: f(gt, x)): j(x)}
    for mode, transform in (("fwd", gt.jacfwd), ("rev", gt.jacrev)):
        if runs[mode]:
            fns[mode] = lambda j=transform(lambda x: f(gt, x)): j(x)
    if jax is not None:
        xj = jnp.asarray(x)
        for mode, transform in (("fwd", jax.jacfwd), ("rev", jax.jacrev)):
            if runs[mode]:
                compiled = jax.jit(transform(lambda x: f(jnp, x)))
                fns["jax " + mode] = lambda c=compiled: c(xj).block_until_ready()
    return fns


def run(case, m, n, rounds, check_only=False):
    rng = np.random.default_rng(0)
    f, jac = CASES[case](m, n, rng)
    x = rng.standard_normal(n)
    fns = contenders(f, x, m)
    want = jac(x)
    for name, fn in fns.items():
        if name != "numpy":
            got = np.asarray(fn())
            err = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300)
            assert err < 1e-12, f"{case} {m}x{n}: {name} deviates {err:.1e} from the analytic Jacobian"
    if check_only:
        return None
    t = interleaved_best(fns, rounds=rounds, calls=3, warmup=True)
    base = t["numpy"]
    names = ["auto", "fwd", "rev"] + (["jax fwd", "jax rev"] if jax is not None else [])
    line = f"{case:6s} {m:>6d} x {n:<6d} {fmt(base):>9s}" + "".join(
        f" {t[k] / base:8.2f}x" if k in t else f" {'-':>9s}" for k in names)
    line += f" {t['auto'] / min(t.get('fwd', np.inf), t.get('rev', np.inf)):11.2f}x"
    if jax is not None:
        line += f" {t['auto'] / min(t.get('jax fwd', np.inf), t.get('jax rev', np.inf)):8.2f}x"
    line += f"  {choose_jacobian(gt.make_ir(lambda x: f(gt, x), x), [0]).mode}"
    print(line, flush=True)
    return t


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three shapes only")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--check", action="store_true", help="check every Jacobian, time nothing")
    args = parser.parse_args(argv)
    shapes = SHAPES["quick" if args.quick else "full"]
    names = ["auto", "fwd", "rev"] + (["jax fwd", "jax rev"] if jax is not None else [])
    print(f"gradtape {gt.__version__}; jax {jax.__version__ if jax else 'not installed'}; "
          f"load {os.getloadavg()[0]:.1f}")
    print("times: best of rounds in turn; columns after `numpy` are x the NumPy objective's time")
    print(f"{'case':6s} {'m x n':15s} {'numpy':>9s}" + "".join(f" {k:>9s}" for k in names)
          + f" {'auto/best gt':>12s}" + (f" {'auto/jax':>9s}" if jax is not None else "") + "  auto's mode")
    for case in CASES:
        for m, n in shapes:
            run(case, m, n, args.rounds, check_only=args.check)
    if args.check:
        print("every Jacobian matches the analytic one")


if __name__ == "__main__":
    main()
