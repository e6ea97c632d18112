"""Complex matrix products in native code (issue 28): staged `A @ B` and the value and
gradient of sum(abs(A @ B) ** 2), against NumPy (whose `A @ B` calls zgemm / cgemm).

    python bench/complex_matmul.py [--rounds 9] [--sizes 8 16 32 64 128 256 512]

On a shared machine run it as `GRADTAPE_THREADS=1 OPENBLAS_NUM_THREADS=1 python ...`: NumPy's
threaded BLAS, meeting other processes on the cores, made ratios swing tenfold.

Each row times, in one interleaved run (bench/_timing.py), both complex dtypes:
- `mm`: A @ B of complex n x n matrices, compiled (compile_function of its IR) against
  NumPy's A @ B;
- `vg`: value_and_grad of sum(abs(A @ B) ** 2) with respect to A and B, compiled,
  against the same by hand in NumPy (C = A @ B; conj(2 C) @ B^T and A^T @ conj(2 C): three products).
Ratios are time / numpy's time (lower is better). `mm` and `vg` are what compile_function
does (its choice of path by size); `_four` and `_zgemm` force one path for every product
(codegen/complex_contract.py: four real products, or one zgemm / cgemm). `--path` prints which path the
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

from gradtape.codegen import complex_contract  # noqa: E402
from gradtape.codegen.complex_split import split_complex  # noqa: E402
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


def forced(fn, zgemm: bool):
    """fn compiled with every complex product on one path: zgemm / cgemm, or four real ones
    (the real kernel complex_split.py makes, which takes and returns the parts side by side)."""
    saved = complex_contract.ZGEMM_MIN_MNK
    complex_contract.ZGEMM_MIN_MNK = 0 if zgemm else float("inf")
    try:
        kernel = compile_function(split_complex(fn))
    finally:
        complex_contract.ZGEMM_MIN_MNK = saved
    assert kernel.native, kernel.fallback_reason
    return kernel


def ratios(n, dtype, rounds):
    a, b = operands(n, dtype)
    mm_fn = gt.make_ir(np.matmul, a, b)
    mm = compile_function(mm_fn)
    vg_fn = gt.make_ir(gt.value_and_grad(loss, argnums=(0, 1)), a, b)
    vg = compile_function(vg_fn)
    pa, pb = (x[..., None].view(np.finfo(dtype).dtype) for x in (a, b))  # the parts, no copy
    paths = {f"{what}_{path}": forced(fn, path == "zgemm") for what, fn in (("mm", mm_fn), ("vg", vg_fn))
             for path in ("four", "zgemm")}
    assert mm.native and vg.native, (mm.fallback_reason, vg.fallback_reason)
    tol = (1e-4 if dtype == np.complex64 else 1e-10) * n
    np.testing.assert_allclose(mm(a, b)[0], a @ b, rtol=tol, atol=tol)
    want = hand_value_and_grad(a, b)
    got = vg(a, b)
    for g, w in zip((got[0], got[1][0], got[1][1]) if isinstance(got[1], tuple) else got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * np.abs(w).max())
    calls = max(1, 100_000 // n ** 2)
    fns = {"mm": lambda: mm(a, b), "mm_numpy": lambda: a @ b,
           "vg": lambda: vg(a, b), "vg_numpy": lambda: hand_value_and_grad(a, b)}
    fns.update({name: (lambda f=f: f(pa, pb)) for name, f in paths.items()})
    t = interleaved_best(fns, rounds=rounds, calls=calls)
    return {name: t[name] / t[name[:2] + "_numpy"] for name in t if not name.endswith("numpy")}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--sizes", type=int, nargs="*", default=[8, 16, 32, 64, 128, 256, 512])
    args = p.parse_args()
    for dtype in (np.complex128, np.complex64):
        name = np.dtype(dtype).name
        for n in args.sizes:
            cells = "  ".join(f"{k} {r:.2f}x" for k, r in ratios(n, dtype, args.rounds).items())
            print(f"{name:<10} n={n:<4} {cells}", flush=True)


if __name__ == "__main__":
    main()
