"""Gradients of numpy.linalg losses: gradtape (staged, native LAPACK) against hand-written
NumPy gradients and, when installed, jax.grad under jax.jit, as ratios measured in the
same run.

    python bench/linalg.py [--sizes 100 500] [--rounds 5]

Losses (A: n x n well conditioned, S: symmetric positive definite, b: n):

    solve     c . solve(A, b)         grad: -outer(solve(A^T, c), x)
    inv       sum(W * inv(A))         grad: -inv(A)^T W inv(A)^T
    cholesky  sum(W * cholesky(S))    grad: Murray's formula with two solves
    eigh      sum(eigvalsh(S)^2)      grad: V diag(2 w) V^T, read as its lower triangle
    slogdet   logabsdet(A)            grad: inv(A)^T

(c and W are fixed random weights, so no gradient is a special case.)

Each hand-written gradient also computes what it needs of the forward pass,
as a program would. Target (issue 15): gradtape within 1.5x of hand NumPy.
Times are the best of interleaved rounds (all contenders meet the same quiet
moments of a shared machine). gradtape and hand NumPy run the same LAPACK
(NumPy's OpenBLAS); JAX uses its own. On a shared machine run with
OPENBLAS_NUM_THREADS=1: OpenBLAS's threads spin while another process holds
the cores, which makes multi-threaded timings vary tenfold.

Measured (2 shared cores under load ~8, OPENBLAS_NUM_THREADS=1, ratio to
hand NumPy; jax 0.10.2 in the last column):

    loss      n=100        n=500        jax n=500
    solve     0.81         0.69         0.48
    inv       0.92         1.07         1.35
    cholesky  1.18         0.98         0.63
    eigh      0.95         0.92         1.16
    slogdet   0.99         1.06         1.06
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


def _lower_only(g):
    """The gradient of a function of A's lower triangle, from the one of the symmetric matrix."""
    return np.tril(g) + np.tril(g.T, -1)


def _hand_solve(a, b, c):
    x = np.linalg.solve(a, b)
    return -np.outer(np.linalg.solve(a.T, c), x)


def _hand_inv(a, w):
    ai_t = np.linalg.inv(a).T
    return -ai_t @ w @ ai_t


def _hand_cholesky(s, w):
    low = np.linalg.cholesky(s)
    p = low.T @ w
    p = np.tril(p) - 0.5 * np.diag(np.diag(p))
    x = np.linalg.solve(low.T, p)
    half = np.linalg.solve(low.T, x.T).T
    return np.tril(half) + np.tril(half.T, -1)


def _hand_eigh(s):
    w, v = np.linalg.eigh(s)
    return _lower_only((v * (2 * w)) @ v.T)


def _hand_slogdet(a):
    return np.linalg.inv(a).T


def _problems(n, rng):
    a = rng.standard_normal((n, n)) / np.sqrt(n) + 2 * np.eye(n)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = (q * np.linspace(1.0, 5.0, n)) @ q.T
    b, c, w = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal((n, n))
    return {
        "solve": (lambda t: gt.sum(np.linalg.solve(t, b) * c), _hand_solve, (a, b, c), a,
                  lambda jnp: lambda t: jnp.sum(jnp.linalg.solve(t, b) * c)),
        "inv": (lambda t: gt.sum(np.linalg.inv(t) * w), _hand_inv, (a, w), a,
                lambda jnp: lambda t: jnp.sum(jnp.linalg.inv(t) * w)),
        "cholesky": (lambda t: gt.sum(np.linalg.cholesky(t) * w), _hand_cholesky, (s, w), s,
                     lambda jnp: lambda t: jnp.sum(jnp.linalg.cholesky(t) * w)),
        "eigh": (lambda t: gt.sum(np.linalg.eigvalsh(t) ** 2), _hand_eigh, (s,), s,
                 lambda jnp: lambda t: jnp.sum(jnp.linalg.eigvalsh(t) ** 2)),
        "slogdet": (lambda t: np.linalg.slogdet(t)[1], _hand_slogdet, (a,), a,
                    lambda jnp: lambda t: jnp.linalg.slogdet(t)[1]),
    }


def _jax():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    jax, jnp = _jax()
    print(f"machine busy before timing: {wait_quiet():.0%}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; JAX: {'yes' if jax else 'not installed, skipped'}")
    print(f"{'loss':>9} {'n':>4} {'hand NumPy':>11} {'gradtape':>10} {'ratio':>6} {'jax.jit':>10} {'ratio':>6}  max |diff|")
    rng = np.random.default_rng(0)
    for n in opts.sizes:
        for name, (loss, hand, hand_args, x, jax_loss) in _problems(n, rng).items():
            grad = gt.grad(loss)
            for _ in range(4):  # past the interpreted first calls: native code (runtime/serving.py)
                got = grad(x)
            gt.runtime.wait_for_compiles()
            got = grad(x)
            want = hand(*hand_args)
            diff = np.abs(got - want).max() / max(1.0, np.abs(want).max())
            fns = {"hand": lambda: hand(*hand_args), "gradtape": lambda: grad(x)}
            if jax is not None:
                jgrad = jax.jit(jax.grad(jax_loss(jnp)))
                jgrad(x).block_until_ready()
                fns["jax"] = lambda: jgrad(x).block_until_ready()
            calls = 2 if n >= 500 else 10
            best = interleaved_best(fns, rounds=opts.rounds, calls=calls)
            jax_cols = (f"{fmt(best['jax']):>10} {best['jax'] / best['hand']:>6.2f}" if "jax" in best
                        else f"{'-':>10} {'-':>6}")
            print(f"{name:>9} {n:>4} {fmt(best['hand']):>11} {fmt(best['gradtape']):>10} "
                  f"{best['gradtape'] / best['hand']:>6.2f} {jax_cols}  {diff:.1e}")


if __name__ == "__main__":
    main()
