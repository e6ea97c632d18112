"""Structured control flow against the same loop unrolled in Python (and JAX's lax.scan).

Two 1,000-step loops, each differentiated in reverse mode (value_and_grad):
an RK4 integrator of y' = -theta y + 0.5 sin(y) (16 states) with the loss
summed along the trajectory, and an RNN cell h = tanh(W h + U x + b)
(16 hidden, 8 inputs). For each: the compile time (trace, transform,
lower, LLVM; disk cache off) and run time of the `gt.scan` version, of
the same loop unrolled in Python, and of `jax.jit(jax.value_and_grad)`
over `lax.scan` when JAX is installed, as ratios to the unrolled loop (kept
unrolled: ir.config.reroll off while it compiles, since otherwise the Python loop
is re-rolled into a scan, which bench/loop_reroll.py measures).
Run times are CPU seconds of the whole process (time.process_time): a
compiled JAX function runs on XLA's own threads while the calling thread
waits, so the calling thread's time (time.thread_time) would leave JAX's
work out (measured: 0.4 ms of the caller's time against 7-12 ms of the
process's for the RK4 gradient); gradtape runs these loops on the calling
thread, and other processes' time is left out either way.
Then the same RK4 loop written as a `gt.while_loop` on a step counter
against its `gt.scan` (value_and_grad, both compiled). Then the memory reverse mode keeps (the compiled gradient's scratch arena,
which holds the stored carries) for n = 100, 1,000, 10,000 steps with and
without `checkpoint_every=round(sqrt(n))`, to show the sqrt(n) growth.

    python bench/control_flow.py [--steps 1000] [--unrolled-steps 1000] [--only while]

The unrolled loop compiles in time that grows faster than its length; with
--unrolled-steps m < steps, its compile time is measured at m steps and
scaled to `steps` per step (a lower bound for the real one), and run times
compare the scan and the unrolled loop at m steps.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ["GRADTAPE_CACHE_DIR"] = ""  # measure compiles, not disk loads
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gradtape as gt  # noqa: E402
from gradtape import codegen, ir  # noqa: E402

from _timing import interleaved_best  # noqa: E402

DT = 0.01
STATES, HIDDEN, INPUTS = 16, 16, 8


def ode(np_):
    """The RK4 problem for one array module (gradtape or jax.numpy)."""
    def f(y, th):
        return -th * y + 0.5 * np_.sin(y)

    def rk4(y, th):
        k1 = f(y, th)
        k2 = f(y + 0.5 * DT * k1, th)
        k3 = f(y + 0.5 * DT * k2, th)
        k4 = f(y + DT * k3, th)
        return y + DT / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return rk4


def rnn(np_):
    def cell(h, x, p):
        w, u, b = p
        return np_.tanh(w @ h + u @ x + b)
    return cell


def problems(n):
    rk4 = ode(gt)
    cell = rnn(gt)

    def rk4_scan(th, y0, k=None):
        def step(c, _):
            y, s = c
            y = rk4(y, th)
            return (y, s + gt.sum(y * y)), None
        (_, s), _ = gt.scan(step, (y0, 0.0), None, length=n, checkpoint_every=k)
        return s

    def rk4_unrolled(th, y0, m=n):
        y, s = y0, 0.0
        for _ in range(m):
            y = rk4(y, th)
            s = s + gt.sum(y * y)
        return s

    def rnn_scan(p, xs, k=None):
        h, _ = gt.scan(lambda h, x: (cell(h, x, p), None), np.zeros(HIDDEN), xs, checkpoint_every=k)
        return gt.sum(h * h)

    def rnn_unrolled(p, xs, m=n):
        h = np.zeros(HIDDEN)
        for i in range(m):
            h = cell(h, xs[i], p)
        return gt.sum(h * h)

    rng = np.random.default_rng(0)
    th, y0 = np.linspace(0.5, 1.5, STATES), np.linspace(-1, 1, STATES)
    p = (rng.normal(size=(HIDDEN, HIDDEN)) * 0.3, rng.normal(size=(HIDDEN, INPUTS)) * 0.3, rng.normal(size=HIDDEN) * 0.1)
    xs = rng.normal(size=(n, INPUTS))
    return {
        "RK4 ODE": (rk4_scan, rk4_unrolled, (th, y0)),
        "RNN cell": (rnn_scan, rnn_unrolled, (p, xs)),
    }


def spec(x):
    if isinstance(x, tuple):
        return tuple(spec(v) for v in x)
    return gt.ShapeDtype(np.shape(x), "float64")


def compile_timed(f, args, unrolled=False):
    """Compiled value_and_grad of f and its compile time; `unrolled`: Python loops kept as
    they were traced (bench/loop_reroll.py measures them re-rolled into scans)."""
    t = time.perf_counter()
    ir.config.reroll = not unrolled
    try:
        code = gt.compile(gt.value_and_grad(f), *[spec(a) for a in args])
    finally:
        ir.config.reroll = True
    return code, time.perf_counter() - t


def jax_versions(n, args_of):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    rk4, cell = ode(jnp), rnn(jnp)

    def rk4_scan(th, y0):
        def step(c, _):
            y, s = c
            y = rk4(y, th)
            return (y, s + jnp.sum(y * y)), None
        (_, s), _ = jax.lax.scan(step, (y0, 0.0), None, length=n)
        return s

    def rnn_scan(p, xs):
        h, _ = jax.lax.scan(lambda h, x: (cell(h, x, p), None), jnp.zeros(HIDDEN), xs)
        return jnp.sum(h * h)

    out = {}
    for name, f in (("RK4 ODE", rk4_scan), ("RNN cell", rnn_scan)):
        if name not in args_of:
            continue
        args = args_of[name]
        t = time.perf_counter()
        jitted = jax.jit(jax.value_and_grad(f)).lower(*args).compile()
        compile_s = time.perf_counter() - t
        out[name] = (lambda j=jitted, a=args: jax.block_until_ready(j(*a)), compile_s)
    return out


def speed(n, unrolled_steps, only=None):
    cases = {k: v for k, v in problems(n).items() if only in (None, k)}
    jx = jax_versions(n, {name: args for name, (_, _, args) in cases.items()})
    print(f"== {n}-step loops, value_and_grad: ratios to the unrolled Python loop ==")
    print(f"{'problem':10} {'compile: scan':>14} {'unrolled':>10} {'scan/unrolled':>14} {'jax/unrolled':>13}"
          f" | {'run: scan/unrolled':>19} {'jax/unrolled':>13}")
    for name, (scan_f, unrolled_f, args) in cases.items():
        scan_code, scan_c = compile_timed(scan_f, args)
        m = unrolled_steps
        unrolled_code, unrolled_c = compile_timed(lambda *a: unrolled_f(*a, m=m), args, unrolled=True)
        if m != n:
            unrolled_c *= n / m  # scaled up per step: a lower bound (its compile grows faster than linearly)
            # run times compare loops of the same length: the scan of m steps
            short, _, args = problems(m)[name]
            unrolled_code, _ = compile_timed(lambda *a: unrolled_f(*a, m=m), args, unrolled=True)
            scan_run = gt.compile(gt.value_and_grad(lambda *a: short(*a)), *[spec(x) for x in args])
        else:
            scan_run = scan_code
        v1, _ = scan_run(*args)
        v2, _ = unrolled_code(*args)
        assert abs(float(v1) - float(v2)) <= 1e-9 * abs(float(v2)), (v1, v2)
        fns = {"scan": lambda: scan_run(*args), "unrolled": lambda: unrolled_code(*args)}
        if jx and m == n:
            fns["jax"] = jx[name][0]
        best = interleaved_best(fns, rounds=15, calls=5, clock=time.process_time)
        run_ratio = best["scan"] / best["unrolled"]
        jax_run = best["jax"] / best["unrolled"] if "jax" in best else float("nan")
        jax_c = jx[name][1] / unrolled_c if jx else float("nan")
        print(f"{name:10} {scan_c:13.2f}s {unrolled_c:9.2f}s {scan_c / unrolled_c:14.3f} {jax_c:13.3f}"
              f" | {run_ratio:19.2f} {jax_run:13.2f}")
        print(f"{'':10} (run at {m} steps: scan {best['scan'] * 1e3:.3f} ms, unrolled {best['unrolled'] * 1e3:.3f} ms"
              + (f", jax {best['jax'] * 1e3:.3f} ms" if "jax" in best else "") + ")")
    if not jx:
        print("(JAX is not installed: its columns are nan)")


def while_against_scan(n):
    """The RK4 loop's value_and_grad as a while_loop on a step counter against the same loop as a scan:
    one forward loop each (a while_loop's value and gradient share it, codegen/control_stack.py)."""
    rk4 = ode(gt)
    scan_f, _, args = problems(n)["RK4 ODE"]

    def rk4_while(th, y0):
        def body(c):
            y, s, i = c
            y = rk4(y, th)
            return y, s + gt.sum(y * y), i + 1
        return gt.while_loop(lambda c: c[2] < n, body, (y0, 0.0, 0))[1]

    codes = {name: gt.compile(gt.value_and_grad(f, argnums=(0, 1)), *[spec(a) for a in args])
             for name, f in (("scan", scan_f), ("while_loop", rk4_while))}
    (v1, g1), (v2, g2) = (codes[name](*args) for name in ("scan", "while_loop"))
    assert abs(float(v1) - float(v2)) <= 1e-12 * abs(float(v1)), (v1, v2)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    best = interleaved_best({name: (lambda c=c: c(*args)) for name, c in codes.items()}, rounds=15, calls=5,
                            clock=time.process_time)
    print(f"\n== RK4, {n} steps, value_and_grad: while_loop against scan ==")
    print(f"while_loop / scan: {best['while_loop'] / best['scan']:.2f}"
          f" (while_loop {best['while_loop'] * 1e3:.3f} ms, scan {best['scan'] * 1e3:.3f} ms)")


def memory():
    print("\n== reverse-mode memory: the gradient's scratch arena (stored carries), RK4, 16 states ==")
    print(f"{'n':>7} {'plain (bytes)':>14} {'checkpoint_every':>17} {'bytes':>12} {'plain/n':>9} {'ckpt/sqrt(n)':>13}")
    for n in (100, 1000, 10000):
        rk4_scan, _, args = problems(n)["RK4 ODE"]
        k = int(round(np.sqrt(n)))
        sizes = []
        for kk in (None, k):
            fn = gt.make_ir(gt.grad(lambda th, y0: rk4_scan(th, y0, kk)), *args)
            sizes.append(codegen.lower(fn, "g").arena_bytes)
        print(f"{n:7d} {sizes[0]:14d} {k:17d} {sizes[1]:12d} {sizes[0] / n:9.1f} {sizes[1] / np.sqrt(n):13.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--unrolled-steps", type=int, default=None)
    ap.add_argument("--only", choices=["RK4 ODE", "RNN cell", "while", "memory"], default=None)
    a = ap.parse_args()
    if a.only not in ("memory", "while"):
        speed(a.steps, a.unrolled_steps or a.steps, a.only)
    if a.only in (None, "while"):
        while_against_scan(a.steps)
    if a.only in (None, "memory"):
        memory()


if __name__ == "__main__":
    main()
