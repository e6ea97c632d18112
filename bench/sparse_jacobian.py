"""Sparse Jacobian of a banded function, n = 10000: gradtape's compressed
Jacobian (pattern from the IR, networkx colouring, one vectorized JVP per
colour) against the dense Jacobian and against a hand-written NumPy/scipy
banded Jacobian, as ratios measured in the same run.

    python bench/sparse_jacobian.py [--n 10000] [--check] [--dense own|jacobian]

The function is pentadiagonal (bandwidth 5):

    r_i = x_{i-2} x_{i-1} - 2 x_i + x_{i+1} + sin(x_i) + 0.1 x_{i+2}^2   (x_j = 0 off the ends)

Dense baselines (--dense):
  jacobian  gradtape.jacobian (jacfwd: n JVPs batched in one compiled call,
            the identity basis built by equations). The default.
  own       the sparse machinery fed the identity seed as an argument (n
            colours).

Target (issue 4): the sparse Jacobian at least 50x faster than the dense one.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import scipy.sparse

sys.path.insert(0, os.path.dirname(__file__))
import gradtape as gt  # noqa: E402
from _timing import fmt, per_call  # noqa: E402
from gradtape.ir.optimize import optimize  # noqa: E402
from gradtape.staging.sparse import compressed_jacobian_function  # noqa: E402

TARGET = 50.0  # sparse speed as a multiple of the dense Jacobian's


def residual(x):
    y = gt.pad(x, (2, 2))
    return y[:-4] * y[1:-3] - 2.0 * y[2:-2] + y[3:-1] + gt.sin(y[2:-2]) + 0.1 * y[4:] ** 2


def residual_numpy(x):
    y = np.pad(x, (2, 2))
    return y[:-4] * y[1:-3] - 2.0 * y[2:-2] + y[3:-1] + np.sin(y[2:-2]) + 0.1 * y[4:] ** 2


def analytic_jacobian(x):
    """The hand-derived banded Jacobian as a scipy csr_array."""
    n = len(x)
    y = np.pad(x, (2, 2))
    diagonals = [
        y[3:n + 1],                # d r_i / d x_{i-2} = x_{i-1}, i = 2..n-1
        y[1:n],                    # d r_i / d x_{i-1} = x_{i-2}, i = 1..n-1
        -2.0 + np.cos(x),          # d r_i / d x_i
        np.ones(n - 1),            # d r_i / d x_{i+1}
        0.2 * x[2:],               # d r_i / d x_{i+2} = 0.2 x_{i+2}
    ]
    return scipy.sparse.diags_array(diagonals, offsets=[-2, -1, 0, 1, 2], shape=(n, n), format="csr")


def own_dense(x):
    """The identity seed through the same compiled compressed-Jacobian code: n JVPs."""
    n = len(x)
    fn = optimize(gt.make_ir(residual, x))
    compiled = gt.runtime.compile_function(compressed_jacobian_function(fn, 0, n))
    seed = np.eye(n)
    # (n, n) JVPs along the columns: J^T; the transpose is a view, as dense as J.
    return lambda: compiled(x, seed)[0].T


def jacobian_dense(x):
    jacobian = gt.jacobian(residual)
    return lambda: jacobian(x)


def check(name, ref, got):
    err = np.max(np.abs(ref - got)) / max(1e-300, np.max(np.abs(ref)))
    status = "ok" if err < 1e-12 else "MISMATCH"
    print(f"  check {name}: max relative deviation {err:.1e} {status}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--check", action="store_true", help="compare results before timing")
    parser.add_argument("--dense", choices=("own", "jacobian"), default="jacobian")
    args = parser.parse_args(argv)
    n = args.n
    x = np.random.default_rng(0).uniform(-1, 1, n)

    jac = gt.sparse_jacobian(residual)
    t0 = time.perf_counter()
    info = jac.sparsity(x)
    t_pattern = time.perf_counter() - t0
    runtime = gt.runtime
    saved, runtime.config.async_compile = runtime.config.async_compile, False
    try:
        t0 = time.perf_counter()
        jac(x)
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        dense = own_dense(x) if args.dense == "own" else jacobian_dense(x)
        dense()
        t_dense_first = time.perf_counter() - t0
    finally:
        runtime.config.async_compile = saved
    sparse = lambda: jac(x)  # noqa: E731
    analytic = lambda: analytic_jacobian(x)  # noqa: E731

    print(f"banded residual, n = {n}: pattern nnz {info.pattern.nnz} ({info.pattern.nnz / n:.1f} per row), "
          f"{info.n_colours} colours")
    print(f"  signature build (trace, pattern, colouring, vmap, optimize) {fmt(t_pattern)}, "
          f"first call (compile, or a disk-cache hit) {fmt(t_first)}")
    print(f"  dense baseline: {'gradtape.jacobian (jacfwd)' if args.dense == 'jacobian' else 'own compiled JVPs with the identity seed (n colours)'}, "
          f"built in {fmt(t_dense_first)}")
    if args.check:
        J = sparse()
        check("sparse vs analytic", analytic().toarray(), J.toarray())
        check("sparse vs dense", np.asarray(dense()), J.toarray())
        fd_col = (residual_numpy(x + 1e-6 * np.eye(1, n, n // 2)[0]) - residual_numpy(x - 1e-6 * np.eye(1, n, n // 2)[0])) / 2e-6
        err = np.max(np.abs(J[:, [n // 2]].toarray()[:, 0] - fd_col))
        print(f"  check sparse vs finite differences (column {n // 2}): max abs deviation {err:.1e}")

    t_sparse = per_call(sparse)
    t_analytic = per_call(analytic)
    t_dense = per_call(dense, repeats=3, min_time=0.0)
    speedup = t_dense / t_sparse
    print(f"{'':24s} {'time':>10s} {'sparse speedup':>15s}")
    print(f"{'gradtape sparse':24s} {fmt(t_sparse):>10s} {1.0:14.2f}x")
    print(f"{'analytic numpy/scipy':24s} {fmt(t_analytic):>10s} {t_analytic / t_sparse:14.2f}x")
    print(f"{'dense Jacobian':24s} {fmt(t_dense):>10s} {speedup:14.2f}x   target >= {TARGET:.0f}x: "
          f"{'met' if speedup >= TARGET else 'NOT MET'}")


if __name__ == "__main__":
    main()
