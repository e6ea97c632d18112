"""Benchmarks of the transforms (issue 4): W5, a Hessian-vector product, and
W6, a full Jacobian, as ratios to hand-derived analytic NumPy in the same
run, and to JAX when installed.

    python bench/transform_workloads.py [--check]

W5: f(x) = sum(tanh(x)^2 * x) + 0.5 * sum((A @ x)^2), n = 2000; H(x) @ v.
W6: g(x) = tanh(W @ x) + x^3, n = 200; the full 200x200 Jacobian.

A ratio is NumPy time / gradtape time: the targets are "within 1.3x" (W5,
ratio >= 1/1.3) and "within 4x" (W6, ratio >= 1/4) of the analytic NumPy.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import gradtape as gt  # noqa: E402
from _timing import fmt, per_call  # noqa: E402

try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = None

TARGETS = {"W5": 1 / 1.3, "W6": 1 / 4}


# --- W5: Hessian-vector product ---------------------------------------------------

def w5_data(n=2000):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((n, n)) / np.sqrt(n)
    return A, rng.standard_normal(n), rng.standard_normal(n)


def w5_f(x, A):
    return gt.sum(gt.tanh(x) ** 2 * x) + 0.5 * gt.sum((A @ x) ** 2)


def w5_numpy(A, x, v):
    """H v with H = diag(d2) + A^T A, d2 the second derivative of tanh(x)^2 * x."""
    def hvp():
        t = np.tanh(x)
        s = 1.0 - t * t  # tanh'
        # d/dx (t^2 x) = 2 t s x + t^2 ; d2/dx2 = 2 s^2 x - 4 t^2 s x + 4 t s
        d2 = 2.0 * s * s * x - 4.0 * t * t * s * x + 4.0 * t * s
        return d2 * v + A.T @ (A @ v)
    return hvp


def w5_gradtape(A, x, v):
    h = gt.hvp(w5_f)
    return lambda: h(x, v, A)


def w5_jax(A, x, v):
    def f(x):
        return jnp.sum(jnp.tanh(x) ** 2 * x) + 0.5 * jnp.sum((A @ x) ** 2)
    h = jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])
    return lambda: h(x, v).block_until_ready()


# --- W6: full Jacobian ------------------------------------------------------------

def w6_data(n=200):
    rng = np.random.default_rng(6)
    return rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n)


def w6_g(x, W):
    return gt.tanh(W @ x) + x ** 3


def w6_numpy(W, x):
    def jac():
        s = 1.0 - np.tanh(W @ x) ** 2
        J = s[:, None] * W
        J[np.diag_indices_from(J)] += 3.0 * x * x
        return J
    return jac


def w6_gradtape(W, x):
    j = gt.jacobian(w6_g)
    return lambda: j(x, W)


def w6_jax(W, x):
    j = jax.jit(jax.jacfwd(lambda x: jnp.tanh(W @ x) + x ** 3))
    return lambda: j(x).block_until_ready()


def check(name, ref, got):
    err = np.max(np.abs(ref - got)) / max(1e-300, np.max(np.abs(ref)))
    print(f"  check {name}: max relative deviation {err:.1e} {'ok' if err < 1e-10 else 'MISMATCH'}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare results before timing")
    args = parser.parse_args(argv)
    cases = [
        ("W5", "Hessian-vector product, n=2000", w5_data(), w5_numpy, w5_gradtape, w5_jax),
        ("W6", "full Jacobian of tanh(W@x)+x^3, n=200", w6_data(), w6_numpy, w6_gradtape, w6_jax),
    ]
    print(f"{'':4s} {'workload':40s} {'numpy':>10s} {'gradtape':>10s} {'ratio':>7s} {'target':>7s} {'jax':>8s}")
    for name, label, data, np_impl, gt_impl, jax_impl in cases:
        base, ours = np_impl(*data), gt_impl(*data)
        ours()
        gt.runtime.wait_for_compiles()
        if args.check:
            check(name, base(), ours())
        t_np, t_gt = per_call(base), per_call(ours)
        jax_col = "-"
        if jax is not None:
            j = jax_impl(*data)
            j()
            jax_col = f"{t_np / per_call(j):.2f}x"
        print(f"{name:4s} {label:40s} {fmt(t_np):>10s} {fmt(t_gt):>10s} {t_np / t_gt:6.2f}x "
              f"{TARGETS[name]:6.2f}x {jax_col:>8s}")


if __name__ == "__main__":
    main()
