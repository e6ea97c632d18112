"""Vectorized math from gradtape.codegen.math against NumPy, in ns per element.

The fused kernel `out = tanh(a*b + c) * exp(-a)`,
is generated with llvmlite (noalias pointers, `fast` flags on the arithmetic
around the math calls, one counted loop, O3 with loop and SLP vectorization
for the host) and compared with NumPy's unfused `np.tanh(a*b + c) *
np.exp(-a)` measured in the same run. Each single function is also timed as
`out = f(a)` against `np.f(a, out=out)`. Inputs are uniform in [-3, 3]
(pow: base in [0.1, 3]). Functions NumPy lacks are compared with what a
NumPy user would call (np.logaddexp, scipy.special).

Targets (facts §11): >= 5x NumPy on the f64 fused kernel, >= 4x on f32.

    python bench/math_kernels.py            # fused kernel + every function
    python bench/math_kernels.py --fused    # fused kernel only
"""
from __future__ import annotations

import os
import sys

import numpy as np
from llvmlite import ir

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from _timing import per_call  # noqa: E402

from scipy import special  # noqa: E402

from gradtape.codegen.math import MATH_FUNCTIONS, emit_math  # noqa: E402
from gradtape.codegen.math_loops import hint_math_loops  # noqa: E402
from gradtape.ir import ops  # noqa: E402
from tests.codegen.loop_kernel import jit_loop, loop_module  # noqa: E402  (shared with the tests)

SIZES = (1_000, 100_000, 1_000_000)
FAST = ("fast",)


def _jit(module, n_inputs):
    """Optimize and JIT `module`; returns a ctypes function (out, *ins, n)."""
    return jit_loop(module, n_inputs)[0]


def _fused_body(b, xs):
    a, bb, c = xs
    t = emit_math(b, ops.tanh_p, b.fadd(b.fmul(a, bb, flags=FAST), c, flags=FAST))
    return b.fmul(t, emit_math(b, ops.exp_p, b.fneg(a, flags=FAST)), flags=FAST)


def _time_kernel(kernel, out, ins):
    ptrs = [out.ctypes.data] + [x.ctypes.data for x in ins]
    n = out.size
    return per_call(lambda: kernel(*ptrs, n))


def _hinted(module):
    """`module` with the loop hints lower_function gives loops of 2+ math calls (math_loops.py)."""
    hint_math_loops(module)
    return module


def bench_fused():
    print("fused tanh(a*b + c) * exp(-a): ns/element (ratio = NumPy time / ours; hinted: with the")
    print("loop hints codegen gives loops of two or more math calls, codegen/math_loops.py)")
    print(f"{'dtype':6s} {'n':>9s} {'ours':>8s} {'hinted':>8s} {'numpy':>8s} {'ratio':>7s} {'hinted':>7s}")
    for dtype, ty in ((np.float64, ir.DoubleType()), (np.float32, ir.FloatType())):
        kernel = _jit(loop_module(ty, 3, _fused_body), 3)
        hinted = _jit(_hinted(loop_module(ty, 3, _fused_body)), 3)
        for n in SIZES:
            rng = np.random.default_rng(0)
            a, b, c = (rng.uniform(-3, 3, n).astype(dtype) for _ in range(3))
            out = np.empty(n, dtype)
            kernel(out.ctypes.data, a.ctypes.data, b.ctypes.data, c.ctypes.data, n)
            expect = np.tanh(a * b + c) * np.exp(-a)
            # a*b + c is contracted to an fma here, not in NumPy: compare
            # relative to the largest output, not elementwise
            scale = np.abs(expect).max()
            assert np.abs(out - expect).max() <= (1e-6 if dtype == np.float32 else 1e-14) * scale
            plain = out.copy()
            hinted(out.ctypes.data, a.ctypes.data, b.ctypes.data, c.ctypes.data, n)
            assert np.array_equal(out, plain)  # the same instructions per element, more at a time
            ours = _time_kernel(kernel, out, (a, b, c)) / n * 1e9
            ours_hinted = _time_kernel(hinted, out, (a, b, c)) / n * 1e9
            ref = per_call(lambda: np.tanh(a * b + c) * np.exp(-a)) / n * 1e9
            print(f"{np.dtype(dtype).name:6s} {n:9d} {ours:8.2f} {ours_hinted:8.2f} {ref:8.2f} "
                  f"{ref / ours:6.1f}x {ref / ours_hinted:6.1f}x")


# What a NumPy user calls for the functions that are not ufuncs of that name.
NUMPY_EQUIVALENT = {
    "arctan": np.arctan,
    "pow": np.power,
    "softplus": lambda x, out: np.logaddexp(0, x, out=out),
    "sigmoid": special.expit,
    "erf": special.erf,
    "erfc": special.erfc,
}


def bench_functions(n=100_000):
    print(f"\nsingle functions, n = {n}: ns/element (ratio = np.f(a, out=out) time / ours)")
    print(f"{'function':9s} {'dtype':6s} {'ours':>7s} {'numpy':>7s} {'ratio':>7s}")
    for f in sorted(MATH_FUNCTIONS.values(), key=lambda f: f.name):
        name, arity = f.name, f.arity
        for dtype, ty in ((np.float64, ir.DoubleType()), (np.float32, ir.FloatType())):
            kernel = _jit(loop_module(ty, arity, lambda b, xs, op=f.op: emit_math(b, op, *xs)), arity)
            rng = np.random.default_rng(0)
            lo = 0.1 if name in ("log", "sqrt", "pow") else -0.9 if name == "log1p" else -3.0
            ins = [rng.uniform(lo, 3, n).astype(dtype) for _ in range(arity)]
            out = np.empty(n, dtype)
            ufunc = NUMPY_EQUIVALENT.get(name) or getattr(np, name)
            ours = _time_kernel(kernel, out, ins) / n * 1e9
            ref = per_call(lambda: ufunc(*ins, out=out)) / n * 1e9
            print(f"{name:9s} {np.dtype(dtype).name:6s} {ours:7.2f} {ref:7.2f} {ref / ours:6.1f}x")


def main():
    bench_fused()
    if "--fused" not in sys.argv:
        bench_functions()


if __name__ == "__main__":
    main()
