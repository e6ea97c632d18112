"""Batched small matrix products, (b, k, k) @ (b, k, m) with k, m from 2 to 6: gradtape against
hand NumPy (`np.matmul`, `np.einsum`) and JAX, in one run.

    python bench/batched_matmul.py [--rounds N] [--batch B]
    PYTHONPATH=. /path/to/venv-with-jax/bin/python bench/batched_matmul.py

Two programs per shape:

  matmul    A @ X for A (b, k, k) and X (b, k, m): one small product per point;
  jacobian  the Jacobian by forward mode of r(theta) = A(theta) @ x per point, with m
            parameters theta: its tangents are the same batched product, (b, k, k) @ (b, k, m)
            (A(theta)'s own derivative is computed once per parameter, x's per point).

Columns: `np.matmul`'s time, then x that time for `np.einsum`, gradtape (`differentiable`
for matmul, `jacfwd` for the Jacobian, whose NumPy baseline is its closed form with
`np.matmul`) and JAX (`jax.jit`). Every result is checked against NumPy's first.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]
from _timing import fmt, interleaved_best  # noqa: E402
from adbench_like import gt, jax, jnp  # noqa: E402  (gradtape; JAX in 64 bits, or None)

SHAPES = [(2, 2), (3, 3), (3, 4), (4, 6), (5, 3), (6, 6)]  # (k, m)


def matmul_case(b, k, m, rng):
    a, x = rng.standard_normal((b, k, k)), rng.standard_normal((b, k, m))
    fns = {
        "np.matmul": lambda: np.matmul(a, x),
        "np.einsum": lambda: np.einsum("bij,bjk->bik", a, x),
    }
    staged = gt.differentiable(lambda a, x: a @ x)
    fns["gradtape"] = lambda: staged(a, x)
    if jax is not None:
        compiled, aj, xj = jax.jit(lambda a, x: a @ x), jnp.asarray(a), jnp.asarray(x)
        fns["jax"] = lambda: compiled(aj, xj).block_until_ready()
    return fns, np.matmul(a, x)


def jacobian_case(b, k, m, rng):
    # r(theta)[p] = (base[p] + sum_q theta[q] * basis[q]) @ (w[p] * theta[:k]) ... kept linear in
    # its own parts so that the Jacobian has a closed form: J[p] = (B @ (w * T)) + A[p] @ D[p]
    base = rng.standard_normal((b, k, k))
    basis = rng.standard_normal((m, k, k)) / k
    w = rng.standard_normal((b, k))
    theta = rng.standard_normal(m)
    pick = np.eye(m)[:k] if m >= k else np.eye(m)[np.arange(k) % m]  # theta -> a k-vector

    def r(np_, theta):
        a = base + np_.einsum("q,qij->ij", theta, basis)
        x = w * (pick @ theta)
        return np_.einsum("pij,pj->pi", a, x)

    def closed_form():
        a = base + np.einsum("q,qij->ij", theta, basis)
        dx = w[:, :, None] * pick[None]          # (b, k, m)
        x = w * (pick @ theta)
        return np.matmul(a, dx) + np.einsum("qij,pj->piq", basis, x)

    jac = gt.jacfwd(lambda t: r(gt, t))
    fns = {"np.matmul": closed_form,
           "np.einsum": lambda: np.einsum("pij,pjq->piq", base + np.einsum("q,qij->ij", theta, basis),
                                          w[:, :, None] * pick[None])
           + np.einsum("qij,pj->piq", basis, w * (pick @ theta)),
           "gradtape": lambda: jac(theta)}
    if jax is not None:
        compiled, tj = jax.jit(jax.jacfwd(lambda t: r(jnp, t))), jnp.asarray(theta)
        fns["jax"] = lambda: compiled(tj).block_until_ready()
    return fns, closed_form()


CASES = {"matmul": matmul_case, "jacobian": jacobian_case}


def run(case, b, k, m, rounds):
    fns, want = CASES[case](b, k, m, np.random.default_rng(0))
    for name, fn in fns.items():
        got = np.asarray(fn())
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=f"{case} {name}")
    t = interleaved_best(fns, rounds=rounds, calls=5, warmup=True)
    base = t["np.matmul"]
    names = [n for n in ("np.einsum", "gradtape", "jax") if n in t]
    print(f"{case:8s} {b:>6d} x ({k},{k})@({k},{m}) {fmt(base):>9s}"
          + "".join(f" {t[n] / base:9.2f}x" for n in names)
          + (f" {t['gradtape'] / t['jax']:9.2f}x" if "jax" in t else ""), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=10000)
    args = parser.parse_args(argv)
    print(f"gradtape {gt.__version__}; jax {jax.__version__ if jax else 'not installed'}; "
          f"load {os.getloadavg()[0]:.1f}")
    print("times: best of rounds in turn; columns after `np.matmul` are x its time")
    print(f"{'case':8s} {'b x shapes':22s} {'np.matmul':>9s} {'np.einsum':>10s} {'gradtape':>10s}"
          + (f" {'jax':>10s} {'gt/jax':>10s}" if jax is not None else ""))
    for case in CASES:
        for k, m in SHAPES:
            run(case, args.batch, k, m, args.rounds)


if __name__ == "__main__":
    main()
