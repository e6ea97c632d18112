"""The FFT against NumPy's pocketfft and, where installed, JAX, in the same run, as ratios.

    python bench/fft.py [--sizes 1024 ... 1048576 65537] [--rounds 5] [--skip-staged] [--cpu-time]
    python bench/fft.py     # with JAX's columns when JAX is installed (pip install -e ".[bench]")

Three tables:

1. staged numpy.fft: the loss below written with np.fft on tensors (ir/ops/fourier.py). Its
   complex values are lowered to pairs of real ones (codegen/complex_split.py) and its FFTs to
   the pair ops; the `path` column says whether the forward and gradient programs compiled
   natively.
2. pairs: the same loss written with the pair ops (ir/ops/fourier_pairs.py), as the lowering
   produces it: native code calling the FFT kernels (codegen/fft_kernels.py).
3. kernels: one transform of n points (c2c forward, r2c, c2r) compiled from one pair op,
   against np.fft.fft / rfft / irfft on the same numbers (`c2c` times split-format arrays
   against NumPy's complex128 array), in CPU time of the calling thread (both run on it alone;
   tables 1 and 2 are wall-clock times, as gradtape's programs may use worker threads, unless
   --cpu-time, which needs GRADTAPE_THREADS=1: on a crowded machine the wall clock of a
   program that waits for a worker thread measures the other processes).

The loss is a spectral low-pass of a signal x of n float64 points: keep the lowest quarter
of rfft(x)'s frequencies, transform back, and take the energy removed,
L(x) = sum((x - irfft(rfft(x) * keep, n)) ** 2). Rows of tables 1 and 2:

    forward   gt.differentiable(lowpass)(x)    against NumPy's lowpass(x)   (issue 28 target: <= 1.5x)
    gradient  gt.grad(L)(x)                    against gradtape's forward   (issue 28 target: <= 3x)
              and against the hand NumPy gradient 2 (x - low) (a projection: L's gradient is
              its own residual, computed with one rfft/irfft pair)

JAX's columns are jax.jit of the same functions (x64 on). The sizes are 2^10 to 2^20 and
a prime, 65537 (Bluestein in both pocketfft and the native kernels).

Measured once (JAX 0.10.2 venv, NumPy's pocketfft; 2 cores that other processes kept 100%
busy, so the wall-clock tables wander by 2x from row to row), GRADTAPE_THREADS=1 --cpu-time:

        n  kernels: c2c   r2c   c2r     pairs: fwd/np  grad/fwd   staged (interp): fwd/np  grad/fwd
     1024          0.19  0.22  0.19            0.22      1.45                      1.85      1.89
    16384          0.45  0.54  0.49            0.73      2.01                      1.09      2.22
    65536          0.88  1.08  0.85            0.98      2.00                      1.09      2.30
   262144          0.87  1.12  1.02            0.85      2.24                      1.02      2.59
  1048576          0.54  0.85  0.73            0.81      2.11                      0.95      2.98
    65537          0.49  0.59  0.64            0.51      2.31                      1.12      1.93

Table 1 once the lowering was wired (same venv, a quiet machine: 1% busy before, wall clock,
--rounds 5), forward/NumPy and gradient/forward: 0.25 and 1.28 at 1024, 0.61 and 1.99 at
16384, 1.05 and 2.09 at 65536, 1.15 and 2.00 at 262144, 0.78 and 1.97 at 1048576; against
jax.jit, forward 0.12-0.90x and gradient 0.13-0.81x.

(JAX's columns need the wall clock: its FFT runs on worker threads that --cpu-time does not
count. Wall clock, the pairs table against jax.jit, three runs: forward 0.02-1.15x, gradient
0.1-1.2x.)
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _quiet import wait_quiet  # noqa: E402
from _timing import fmt, interleaved_best  # noqa: E402

import gradtape as gt  # noqa: E402
from gradtape import ir, runtime  # noqa: E402
from gradtape.ir.ops import fourier_pairs as fp  # noqa: E402
from gradtape.tracer.dispatch import bind  # noqa: E402

SIZES = [2 ** k for k in range(10, 21)] + [65537]
HEADER = (f"{'n':>8} {'path':>6} {'NumPy fwd':>10} {'gt fwd':>10} {'fwd/np':>7} {'gt grad':>10} {'grad/fwd':>8} "
          f"{'grad/hand':>9} {'fwd/jax':>8} {'grad/jax':>8}")


def _keep(n):
    return np.arange(n // 2 + 1) < (n // 2 + 1) // 4


def _problem(n):
    keep = _keep(n)

    def lowpass(x):
        return np.fft.irfft(np.fft.rfft(x) * keep, n=n)

    def loss(x):
        return np.sum((x - lowpass(x)) ** 2)

    def hand_gradient(x):
        return 2.0 * (x - lowpass(x))

    return lowpass, loss, hand_gradient


def _pairs_problem(n):
    """The low-pass with the pair ops, as the lowering of complex tensors writes it (the 1 / n
    of irfft folded into the mask)."""
    keep = _keep(n) / n

    def lowpass(x):
        spectrum = bind(fp.rfft_pairs_p, x)
        return bind(fp.irfft_pairs_p, spectrum[0] * keep, spectrum[1] * keep, n=n)

    return lowpass, lambda x: np.sum((x - lowpass(x)) ** 2)


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


def _path(f, loss, x) -> str:
    """native when the forward and the gradient programs both compile, else interp."""
    fwd = runtime.compile_function(gt.make_ir(f, x))
    joint, _ = ir.vjp(gt.make_ir(loss, x), [0])
    return "native" if fwd.native and runtime.compile_function(joint).native else "interp"


def _loss_row(n, x, lowpass, loss, staged_lowpass, staged_loss, rounds, clock):
    """One row of tables 1 and 2: the staged forward and gradient against NumPy and JAX."""
    _, _, hand_gradient = _problem(n)
    forward, gradient = gt.differentiable(staged_lowpass), gt.grad(staged_loss)
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
    best = interleaved_best(fns, rounds=rounds, calls=2 if n >= 100000 else 10, clock=clock)
    to_jax = (f"{best['fwd'] / best['jax fwd']:>8.2f} {best['grad'] / best['jax grad']:>8.2f}"
              if jax_fns is not None else f"{'-':>8} {'-':>8}")
    path = _path(staged_lowpass, staged_loss, x)
    print(f"{n:>8} {path:>6} {fmt(best['np']):>10} {fmt(best['fwd']):>10} {best['fwd'] / best['np']:>7.2f} "
          f"{fmt(best['grad']):>10} {best['grad'] / best['fwd']:>8.2f} {best['grad'] / best['hand']:>9.2f} "
          f"{to_jax}", flush=True)


def _kernel_functions(n):
    """Compiled c2c, r2c and c2r of n float64 points (one pair op each)."""
    def compiled(m, build):
        b = ir.Builder()
        ins = [b.input(ir.TensorType((m,), np.float64)) for _ in range(2)]
        cf = runtime.compile_function(b.build(ins, list(build(*ins))))
        if not cf.native:
            raise SystemExit(f"n={n}: the pair ops did not compile natively ({cf.fallback_reason})")
        return cf

    h = n // 2 + 1
    c2c = compiled(n, lambda re, im: fp.fft_pairs(re, im, False))
    r2c = compiled(n, lambda x, _: fp.rfft_pairs(x))
    c2r = compiled(h, lambda re, im: [fp.irfft_pairs(re, im, n)])
    return c2c, r2c, c2r


def _kernel_row(n, rng, rounds):
    c2c, r2c, c2r = _kernel_functions(n)
    re, im = rng.standard_normal(n), rng.standard_normal(n)
    z = re + 1j * im
    spectrum = np.fft.rfft(re)
    sre, sim = np.ascontiguousarray(spectrum.real), np.ascontiguousarray(spectrum.imag)
    scale = np.linalg.norm(z) * np.sqrt(n)
    got = c2c(re, im)
    assert np.linalg.norm(got[0] + 1j * got[1] - np.fft.fft(z)) <= 1e-14 * np.log2(n) * scale
    got = r2c(re, im)
    assert np.linalg.norm(got[0] + 1j * got[1] - spectrum) <= 1e-14 * np.log2(n) * scale
    assert np.linalg.norm(c2r(sre, sim)[0] / n - re) <= 1e-14 * np.log2(n) * np.linalg.norm(re)
    fns = {"np c2c": lambda: np.fft.fft(z), "c2c": lambda: c2c(re, im),
           "np r2c": lambda: np.fft.rfft(re), "r2c": lambda: r2c(re, im),
           "np c2r": lambda: np.fft.irfft(spectrum, n), "c2r": lambda: c2r(sre, sim)}
    # CPU time of this thread: both sides compute on it alone (one native step calling the kernel
    # row after row; pocketfft), and the time other processes take on the shared cores is left out.
    best = interleaved_best(fns, rounds=rounds, calls=2 if n >= 100000 else 10, clock=time.thread_time)
    cells = " ".join(f"{fmt(best['np ' + k]):>10} {best[k] / best['np ' + k]:>6.2f}" for k in ("c2c", "r2c", "c2r"))
    print(f"{n:>8} {cells}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-staged", action="store_true", help="leave out table 1 (numpy.fft staged)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="tables 1 and 2 in CPU time of this thread too (needs GRADTAPE_THREADS=1; "
                             "JAX's worker threads, if any, are then not counted)")
    opts = parser.parse_args()
    if opts.cpu_time and gt.runtime.config.threads != 1:
        raise SystemExit("--cpu-time measures one thread: run with GRADTAPE_THREADS=1")
    clock = time.thread_time if opts.cpu_time else time.perf_counter
    print(f"machine busy before timing: {wait_quiet():.0%}")
    jax_note = "" if _jax_functions(8) is not None else " (JAX not installed: its columns are skipped)"
    rng = np.random.default_rng(0)
    print("\n3. kernels: NumPy's time and the native kernel's ratio to it, float64, thread CPU time")
    print(f"{'n':>8} {'np.fft':>10} {'c2c':>6} {'np.rfft':>10} {'r2c':>6} {'np.irfft':>10} {'c2r':>6}")
    for n in opts.sizes:
        _kernel_row(n, rng, opts.rounds)
    tables = [("2. pairs (the lowered program)", _pairs_problem)]
    if not opts.skip_staged:
        tables.append(("1. staged numpy.fft", lambda n: _problem(n)[:2]))
    for title, problem in tables:
        print(f"\n{title}: forward/NumPy, gradient/forward, gradient/hand NumPy gradient, and to JAX{jax_note}")
        print(HEADER)
        for n in opts.sizes:
            lowpass, loss, _ = _problem(n)
            staged_lowpass, staged_loss = problem(n)
            _loss_row(n, rng.standard_normal(n), lowpass, loss, staged_lowpass, staged_loss, opts.rounds, clock)


if __name__ == "__main__":
    main()
