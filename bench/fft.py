"""numpy.fft in staged functions (ir/ops/fourier.py, NumPy's pocketfft in the interpreter)
against NumPy and, where installed, JAX, in the same run, as ratios.

    python bench/fft.py [--sizes 1024 ... 1048576 65537] [--rounds 5]
    PYTHONPATH=. /path/to/jax-venv/bin/python bench/fft.py     # with JAX's columns

The loss is a spectral low-pass of a signal x of n float64 points: keep the
lowest quarter of rfft(x)'s frequencies, transform back, and take the energy
removed, L(x) = sum((x - irfft(rfft(x) * keep, n)) ** 2). Rows:

    forward   gt.differentiable(lowpass)(x)    against NumPy's lowpass(x)   (issue 28 target: <= 1.5x)
    gradient  gt.grad(L)(x)                    against gradtape's forward   (issue 28 target: <= 3x)
              and against the hand NumPy gradient 2 (x - low) (a projection: L's gradient is
              its own residual, computed with one rfft/irfft pair)

JAX's columns are jax.jit of the same functions (x64 on). The sizes are 2^10 to 2^20 and
a prime, 65537 (pocketfft's Bluestein path). Code generation has no complex values yet, so
these run in the interpreter (docs/complex.md): the forward is NumPy's own calls plus
gradtape's per-op cost.

Measured once, JAX 0.10.2, --rounds 3, on 2 cores that other processes kept 100% busy
(the ratios wander by 2x from row to row; rerun on a quiet machine before trusting them):

        n   fwd/np  grad/fwd  grad/hand  fwd/jax  grad/jax
     1024     1.77      1.86       4.43     0.07      1.57
     8192     1.26      2.33       3.07     0.83      1.56
    16384     1.84      9.60      19.86     1.01      8.76
    65536     1.44      2.88       3.76     0.75      1.33
   262144     0.64      6.37       7.39     0.40      0.87
  1048576     0.85      3.09       2.65     0.72      1.04
    65537     0.96      2.25       2.34     0.62      0.72   (prime: Bluestein)
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

SIZES = [2 ** k for k in range(10, 21)] + [65537]


def _problem(n):
    keep = np.arange(n // 2 + 1) < (n // 2 + 1) // 4

    def lowpass(x):
        return np.fft.irfft(np.fft.rfft(x) * keep, n=n)

    def loss(x):
        return np.sum((x - lowpass(x)) ** 2)

    def hand_gradient(x):
        return 2.0 * (x - lowpass(x))

    return lowpass, loss, hand_gradient


def _jax_functions(n):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    keep = jnp.arange(n // 2 + 1) < (n // 2 + 1) // 4

    def lowpass(x):
        return jnp.fft.irfft(jnp.fft.rfft(x) * keep, n=n)

    forward = jax.jit(lowpass)
    gradient = jax.jit(jax.grad(lambda x: jnp.sum((x - lowpass(x)) ** 2)))
    return (lambda x: forward(x).block_until_ready()), (lambda x: gradient(x).block_until_ready())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    print(f"machine busy before timing: {wait_quiet():.0%}")
    jax_note = "" if _jax_functions(8) is not None else " (JAX not installed: its columns are skipped)"
    print("ratios: forward/NumPy, gradient/forward, gradient/hand NumPy gradient, and to JAX" + jax_note)
    print(f"{'n':>8} {'NumPy fwd':>10} {'gt fwd':>10} {'fwd/np':>7} {'gt grad':>10} {'grad/fwd':>8} "
          f"{'grad/hand':>9} {'fwd/jax':>8} {'grad/jax':>8}")
    rng = np.random.default_rng(0)
    for n in opts.sizes:
        lowpass, loss, hand_gradient = _problem(n)
        x = rng.standard_normal(n)
        forward, gradient = gt.differentiable(lowpass), gt.grad(loss)
        for _ in range(4):  # past the served program's first calls (runtime/serving.py)
            forward(x), gradient(x)
        gt.runtime.wait_for_compiles()
        np.testing.assert_allclose(forward(x), lowpass(x), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gradient(x), hand_gradient(x), rtol=1e-9, atol=1e-9)
        fns = {"np": lambda: lowpass(x), "hand": lambda: hand_gradient(x),
               "fwd": lambda: forward(x), "grad": lambda: gradient(x)}
        jax_fns = _jax_functions(n)
        if jax_fns is not None:
            np.testing.assert_allclose(jax_fns[1](x), hand_gradient(x), rtol=1e-9, atol=1e-9)
            fns["jax fwd"], fns["jax grad"] = (lambda: jax_fns[0](x)), (lambda: jax_fns[1](x))
        calls = 2 if n >= 100000 else 10
        best = interleaved_best(fns, rounds=opts.rounds, calls=calls)
        to_jax = (f"{best['fwd'] / best['jax fwd']:>8.2f} {best['grad'] / best['jax grad']:>8.2f}"
                  if jax_fns is not None else f"{'-':>8} {'-':>8}")
        print(f"{n:>8} {fmt(best['np']):>10} {fmt(best['fwd']):>10} {best['fwd'] / best['np']:>7.2f} "
              f"{fmt(best['grad']):>10} {best['grad'] / best['fwd']:>8.2f} {best['grad'] / best['hand']:>9.2f} "
              f"{to_jax}")


if __name__ == "__main__":
    main()
