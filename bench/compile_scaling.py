"""Compile time of a gradient against program size, stage by stage, beside JAX.

The program is a chain of k elementwise ops on a vector of 256 float64
values, repeating the pattern sin, * 1.01, + 0.1, tanh (k counts every op),
summed to a scalar; what is timed is the first call of its gradient
(`gt.grad(f)(x)`, `jax.jit(jax.grad(f))(x)`): trace, transform, compile and
one run. Both start cold: gradtape with its disk cache off
(GRADTAPE_CACHE_DIR="") and compiling in the caller
(GRADTAPE_ASYNC_COMPILE=0, so the first call runs native code, as JAX's
does), JAX with its persistent compilation cache off. Each process first
compiles a small gradient in both, untimed, so that what is paid once per
process (LLVM's target, gradtape's call wrappers and LLVM worker process,
XLA's backend) is not counted at any k.

For gradtape it also prints where the time went: `trace`, `adjoint`
(ir.vjp), `ir_opt` (ir.optimize), then the runtime's stages `lower`
(code generation), `ir_text`, `parse`, `optimize` (LLVM's passes),
`emit_object` (LLVM's code generator), `load`, `entry`, and `other` (the
rest of the call: cache keys, the run itself). The last lines give the
growth exponent of each from the second largest k to the largest
(log(t2/t1) / log(k2/k1); 1.0 is linear).

    python bench/compile_scaling.py [--ks 10 100 1000 3000] [--repeat 2] [--no-jax] [--cpu] [--no-share]

`steps` says how many step functions (loop nests) the kernel calls and how
many of them it compiles (`inlined`: a small kernel's steps are inlined
into its entry): steps with the same code are compiled once
(codegen/shared_steps.py); `--no-share` compiles every copy (`-`), which
shows the cost per step without that saving.

With `--cpu` the totals are CPU seconds of the whole process (every
thread: XLA's and LLVM's included) instead of wall time, and gradtape runs
LLVM in this process (GRADTAPE_LLVM_WORKER_AFTER=-1) so that its CPU time
is counted: steadier than wall time when other processes hold the cores.
The stages stay wall times.

Each k is measured `--repeat` times (a fresh function each time, the
in-memory caches cleared) and the fastest is kept, gradtape and JAX taking
turns, because other processes share this machine's cores.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Cold and synchronous: no disk cache, the compile in the caller.
os.environ["GRADTAPE_CACHE_DIR"] = ""
os.environ["GRADTAPE_ASYNC_COMPILE"] = "0"
CPU_CLOCK = "--cpu" in sys.argv
if CPU_CLOCK:  # LLVM's work in this process, where process_time sees it
    os.environ["GRADTAPE_LLVM_WORKER_AFTER"] = "-1"
CLOCK = time.process_time if CPU_CLOCK else time.perf_counter
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import numpy as np  # noqa: E402

import gradtape as gt  # noqa: E402
from gradtape import runtime  # noqa: E402
from gradtape.codegen import lowering  # noqa: E402
from gradtape.staging import staged, transforms  # noqa: E402

from _quiet import busy_fraction, wait_quiet  # noqa: E402

SIZE = 256
RUNTIME_STAGES = ("lower", "ir_text", "parse", "optimize", "emit_object", "load", "entry")
STAGES = ("trace", "adjoint", "ir_opt") + RUNTIME_STAGES + ("other",)


def chain(np_like, k: int):
    """The k-op chain as a function of x, written with `np_like`'s sin and tanh."""
    sin, tanh = np_like.sin, np_like.tanh

    def f(x):
        for i in range(k):
            r = i % 4
            if r == 0:
                x = sin(x)
            elif r == 1:
                x = x * 1.01
            elif r == 2:
                x = x + 0.1
            else:
                x = tanh(x)
        return np_like.sum(x)

    return f


class StepCounter:
    """Counts the step functions the lowerings call and those they define (see shared_steps.py)."""

    def __init__(self):
        self.called = self.shared = 0
        counter, table = self, lowering.StepTable

        class Counted(table):
            def share(self, fn, operands):
                counter.called += 1
                before = self.shared
                out = super().share(fn, operands)
                counter.shared += self.shared - before
                return out

        lowering.StepTable = Counted

    def take(self) -> tuple:
        out = (self.called, self.called - self.shared)
        self.called = self.shared = 0
        return out


class StageTimer:
    """Wraps the staging layer's trace, vjp and optimize to add up their seconds."""

    def __init__(self):
        self.seconds: dict = {}
        self._wrap(staged, "trace_call", "trace")
        self._wrap(transforms.ir, "vjp", "adjoint")
        self._wrap(transforms, "optimize", "ir_opt")

    def _wrap(self, owner, name, stage):
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - t

        setattr(owner, name, timed)


def gradtape_first_call(k: int, x, timer: StageTimer, steps: StepCounter) -> dict:
    runtime.clear_cache()
    timer.seconds.clear()
    steps.take()
    g = gt.grad(chain(gt, k))
    t, wall = CLOCK(), time.perf_counter()
    g(x)
    total, wall = CLOCK() - t, time.perf_counter() - wall
    program = g._programs[next(iter(g._programs))]
    compiled = runtime.compile_function(program.fn)  # the cached one: nothing compiles here
    if not compiled.native:
        raise SystemExit(f"k={k}: gradtape did not compile natively ({compiled.fallback_reason})")
    stages = {s: compiled.compile_stages.get(s, 0.0) for s in RUNTIME_STAGES}
    stages.update(timer.seconds)
    stages["other"] = max(0.0, wall - sum(stages.values()))
    stages["total"] = total
    stages["steps"] = steps.take()
    return stages


def jax_first_call(k: int, x) -> float:
    import jax
    import jax.numpy as jnp

    f = jax.jit(jax.grad(chain(jnp, k)))
    t = CLOCK()
    f(x).block_until_ready()
    return CLOCK() - t


def load_jax():
    try:
        import jax
    except ImportError:
        print("(JAX is not installed: its column is left out)")
        return False
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)
    return True


def exponent(t1: float, t2: float, k1: int, k2: int) -> float:
    return math.log(t2 / t1) / math.log(k2 / k1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100, 1000, 3000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--cpu", action="store_true", help="CPU time of the process instead of wall time")
    parser.add_argument("--no-share", action="store_true", help="compile steps with the same code once each")
    args = parser.parse_args()
    lowering.SHARE_EQUAL_STEPS = not args.no_share
    with_jax = not args.no_jax and load_jax()
    x = np.linspace(-1.0, 1.0, SIZE)
    timer, steps = StageTimer(), StepCounter()
    # Untimed warm-up: what each system pays once per process.
    gradtape_first_call(8, x, timer, steps)
    if with_jax:
        jax_first_call(8, x)
    print(f"(CPUs {wait_quiet():.0%} busy before)")
    rows = {}
    for k in args.ks:
        best, best_jax = None, math.inf
        for _ in range(args.repeat):
            r = gradtape_first_call(k, x, timer, steps)
            best = r if best is None or r["total"] < best["total"] else best
            if with_jax:
                best_jax = min(best_jax, jax_first_call(k, x))
        rows[k] = (best, best_jax if with_jax else None)

    clock = "CPU time of the process" if CPU_CLOCK else "wall time"
    print(f"\nfirst call of grad of a k-op chain ({SIZE} float64), ms, {clock} (fastest of {args.repeat});"
          " stages in wall time")
    head = f"{'k':>5s} {'gradtape':>9s} {'jax':>9s} {'gt/jax':>7s}  " + " ".join(f"{s[:8]:>8s}" for s in STAGES)
    print(head + "  steps (called/compiled)")
    for k, (r, tj) in rows.items():
        jax_text = f"{tj * 1e3:9.1f} {r['total'] / tj:7.2f}" if tj else f"{'-':>9s} {'-':>7s}"
        called, compiled = r["steps"]
        print(f"{k:5d} {r['total'] * 1e3:9.1f} {jax_text}  " + " ".join(f"{r[s] * 1e3:8.1f}" for s in STAGES)
              + (f"  {called}/{compiled}" if called else "  -" if args.no_share else "  inlined"))
    ks = list(rows)
    if len(ks) >= 2:
        k1, k2 = ks[-2], ks[-1]
        (r1, j1), (r2, j2) = rows[k1], rows[k2]
        print(f"\ngrowth exponent from k={k1} to k={k2} (1.0 = linear):")
        print(f"  gradtape total {exponent(r1['total'], r2['total'], k1, k2):.2f}"
              + (f", jax {exponent(j1, j2, k1, k2):.2f}" if j1 else ""))
        print("  gradtape by stage: " + ", ".join(
            f"{s} {exponent(r1[s], r2[s], k1, k2):.2f}" for s in STAGES if r1[s] > 1e-3 and r2[s] > 1e-3))
    print(f"(CPUs {busy_fraction():.0%} busy after)")


if __name__ == "__main__":
    main()
