"""Native code for complex values (issue 28): compiled complex programs against the
reference interpreter (NumPy's complex kernels, what served them before) and hand NumPy.

    python bench/complex_elementwise.py [--rounds 15] [--sizes 1000 10000 100000 1000000]

Blocks, each timed in one interleaved run (bench/_timing.py), in both complex dtypes:
- `vg`: value_and_grad of L(x, z) = sum(abs(exp(1j * x) * z) ** 2) with respect to
  x (real) and z (complex): `native` (compile_function of its IR: the complex values
  lowered to pairs of real ones, codegen/complex_split.py), `interp` (the same IR in
  the reference interpreter) and `numpy` (the value and both gradients by hand);
- `matmul`: A @ B of complex n x n matrices: `native` (four real matrix products on
  the parts), `numpy` (NumPy's zgemm/cgemm).
Ratios are time / numpy's time (lower is better).

Measured once (--rounds 9, 2 cores shared with other processes: ratios wander by ~1.5x):

    vg complex128  n=1e3 .. 1e6   native 0.36 0.36 0.45 0.49   interp 2.67 5.88 3.14 2.52
    vg complex64   n=1e3 .. 1e6   native 0.16 0.15 0.13 0.16   interp 2.12 1.28 1.25 1.70
    matmul complex128 16/64/256   native 2.69 0.63 0.61
    matmul complex64  16/64/256   native 2.47 0.31 0.29
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import gradtape as gt  # noqa: E402
from _timing import fmt, interleaved_best  # noqa: E402

from gradtape.runtime import compile_function, interpreted  # noqa: E402


def loss(x, z):
    return np.sum(np.abs(np.exp(1j * x) * z) ** 2)


def hand_value_and_grad(x, z):
    e = np.exp(1j * x)
    w = e * z
    value = np.sum(np.abs(w) ** 2)
    grad_x = -2.0 * np.imag(np.conj(w) * w)  # d/dx |e^{ix} z|^2 = 0, computed as the chain rule does
    grad_z = 2.0 * np.conj(w) * e  # JAX's convention: dL/dre - i dL/dim
    return value, grad_x, grad_z


def vg_block(n, dtype, rounds):
    rng = np.random.default_rng(0)
    real = np.finfo(dtype).dtype
    x = rng.standard_normal(n).astype(real)
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    fn = gt.make_ir(gt.value_and_grad(loss, argnums=(0, 1)), x, z)
    native, interp = compile_function(fn), interpreted(fn)
    assert native.native, native.fallback_reason
    want = hand_value_and_grad(x, z)
    got = native(x, z)
    tol = 1e-4 if dtype == np.complex64 else 1e-10
    np.testing.assert_allclose(got[0], want[0], rtol=tol)
    np.testing.assert_allclose(got[2], want[2], rtol=tol, atol=tol)
    return interleaved_best({
        "native": lambda: native(x, z),
        "interp": lambda: interp(x, z),
        "numpy": lambda: hand_value_and_grad(x, z),
    }, rounds=rounds, calls=max(1, 100_000 // n))


def matmul_block(n, dtype, rounds):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(dtype)
    b = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(dtype)
    native = compile_function(gt.make_ir(np.matmul, a, b))
    assert native.native, native.fallback_reason
    tol = 1e-4 if dtype == np.complex64 else 1e-10
    np.testing.assert_allclose(native(a, b)[0], a @ b, rtol=tol * n, atol=tol * n)
    return interleaved_best({
        "native": lambda: native(a, b),
        "numpy": lambda: a @ b,
    }, rounds=rounds, calls=max(1, 200_000 // n ** 2))


def report(title, times):
    base = times["numpy"]
    cells = "  ".join(f"{k} {fmt(t)} ({t / base:.2f}x)" for k, t in times.items())
    print(f"{title:<28} {cells}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000, 1_000_000])
    p.add_argument("--matrix-sizes", type=int, nargs="*", default=[16, 64, 256])
    args = p.parse_args()
    for dtype in (np.complex128, np.complex64):
        for n in args.sizes:
            report(f"vg {np.dtype(dtype).name} n={n}", vg_block(n, dtype, args.rounds))
        for n in args.matrix_sizes:
            report(f"matmul {np.dtype(dtype).name} {n}x{n}", matmul_block(n, dtype, args.rounds))


if __name__ == "__main__":
    main()
