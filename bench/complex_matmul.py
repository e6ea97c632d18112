"""Complex matrix products in native code (issue 28): staged `A @ B` and the value and
gradient of sum(abs(A @ B) ** 2), against NumPy (whose `A @ B` calls zgemm / cgemm).

    python bench/complex_matmul.py [--rounds 9] [--sizes 8 16 32 64 128 256 512]

Each row times, in one interleaved run (bench/_timing.py), both complex dtypes:
- `mm`: A @ B of complex n x n matrices, compiled (compile_function of its IR) against
  NumPy's A @ B;
- `vg`: value_and_grad of sum(abs(A @ B) ** 2) with respect to A and B, compiled,
  against the same by hand in NumPy (C = A @ B; conj(2 C) @ B^T and A^T @ conj(2 C): three products).
Ratios are time / numpy's time (lower is better). `--path` prints which path the
compiled product took (zgemm/cgemm or four real products).

Measured figures are in docs/complex.md ("A matrix product").
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import gradtape as gt  # noqa: E402
from _timing import interleaved_best  # noqa: E402

from gradtape.runtime import compile_function  # noqa: E402


def loss(a, b):
    return np.sum(np.abs(a @ b) ** 2)


def hand_value_and_grad(a, b):
    c = a @ b
    cc = 2 * c.conj()  # gradients in gradtape's (JAX's) convention: dL/dre - i dL/dim
    return np.sum(np.abs(c) ** 2), cc @ b.T, a.T @ cc


def operands(n, dtype):
    rng = np.random.default_rng(n)

    def one():
        return (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(dtype)

    return one(), one()


def ratios(n, dtype, rounds):
    a, b = operands(n, dtype)
    mm = compile_function(gt.make_ir(np.matmul, a, b))
    vg = compile_function(gt.make_ir(gt.value_and_grad(loss, argnums=(0, 1)), a, b))
    assert mm.native and vg.native, (mm.fallback_reason, vg.fallback_reason)
    tol = (1e-4 if dtype == np.complex64 else 1e-10) * n
    np.testing.assert_allclose(mm(a, b)[0], a @ b, rtol=tol, atol=tol)
    want = hand_value_and_grad(a, b)
    got = vg(a, b)
    for g, w in zip((got[0], got[1][0], got[1][1]) if isinstance(got[1], tuple) else got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * np.abs(w).max())
    calls = max(1, 100_000 // n ** 2)
    t = interleaved_best({
        "mm": lambda: mm(a, b), "mm_numpy": lambda: a @ b,
        "vg": lambda: vg(a, b), "vg_numpy": lambda: hand_value_and_grad(a, b),
    }, rounds=rounds, calls=calls)
    return t["mm"] / t["mm_numpy"], t["vg"] / t["vg_numpy"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--sizes", type=int, nargs="*", default=[8, 16, 32, 64, 128, 256, 512])
    args = p.parse_args()
    for dtype in (np.complex128, np.complex64):
        name = np.dtype(dtype).name
        for n in args.sizes:
            mm, vg = ratios(n, dtype, args.rounds)
            print(f"{name:<10} n={n:<4} mm {mm:.2f}x  vg {vg:.2f}x", flush=True)


if __name__ == "__main__":
    main()
