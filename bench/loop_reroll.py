"""Compile time of Python `for` loops re-rolled into scans (ir/reroll.py), against gt.scan.

Each figure is the first call of a gradient in a fresh process (cold: disk
cache in an empty directory, GRADTAPE_ASYNC_COMPILE=0 so that the compile
happens in the call, LLVM in the process so that its CPU time is counted),
the best of `--repeat` processes, in CPU seconds and wall seconds:

  w7      the gradient of W7's 100-op chain (bench/workloads.py) on 256 values:
          the Python loop, re-rolled (GRADTAPE_REROLL_MIN_EQUATIONS=0), against
          the same chain as a gt.scan of 25 steps of its 4 ops (target: the
          loop's compile within 1.3x of the scan's), and as it is by default:
          100 equations, under the 128 a loop needs to be rolled, so unrolled
  rk4     the gradient of bench/control_flow.py's RK4 loop (1,000 steps, 16
          states) as a Python loop against its gt.scan version (target: the
          compile within 1.3x; the first call as a whole also runs the Python
          loop once per step while tracing, and re-rolls what it traced, which
          grow with the loop's length)
  lstm    ADBench's LSTM objective (bench/lstm_objective.py: 2 layers, hidden
          16, written with Python loops) differentiated staged (`gt.grad`) and
          on a GradientTape (its plan compiled at the first gradient), at 256,
          1,024 and 4,096 characters (targets: first call under 3 s at 1,024;
          compile at 4,096 within 1.3x of 256), and the gt.scan version at 1,024

For the LSTM, `trace` is tracing the Python program (staged) or recording it
(tape; `to IR` then makes the recording's equations), `reroll` the pass,
`compile` the rest of the first call (the adjoint, the optimizer, code
generation, LLVM, the run, and on a tape the plan's bookkeeping), of which
`backend` is code generation and LLVM (wall time of the compile's stages):
what should depend on the loop body, not on its length; the ratio lines also give
the compile less the backend's CPU time (the backend is most of the noise on a
shared machine). `free` is the unrolled program let go of: the trace the pass
replaced (staged), or the recording the tape drops after the gradient (its
objects, and its pending values registered as orphans); it grows with the
program as `trace` and `to IR` do: `cpu` counts it, `compile` does not. Then the
run time of W7's gradient, rolled against unrolled (the default), in this
process (interleaved rounds, thread time).

    python bench/loop_reroll.py [--repeat 2] [--lengths 256 1024 4096] [--only w7|rk4|lstm-staged|lstm-tape|run]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]


# --- one measurement, in a child process ---------------------------------------------------

def child(case: str, n: int):
    os.environ["GRADTAPE_ASYNC_COMPILE"] = "0"
    os.environ["GRADTAPE_LLVM_WORKER_AFTER"] = "-1"
    import numpy as np

    import gradtape as gt
    from gradtape.ir import reroll as reroll_module
    from gradtape.staging import staged
    from gradtape.tracer import backward, backward_cache, backward_plan

    spent = {"reroll": 0.0}
    original = reroll_module.reroll
    unrolled = []  # what the pass was given: freed apart (`free`), as a tape's recording is

    def timed_reroll(fn, where=""):
        unrolled.append(fn)
        t = time.process_time()
        try:
            return original(fn, where)
        finally:
            spent["reroll"] += time.process_time() - t

    staged.reroll = backward.reroll = timed_reroll
    gt.grad(lambda x: gt.sum(gt.sin(x) * x))(np.ones(3))  # what a process pays once
    from gradtape.runtime import cache as runtime_cache
    built = runtime_cache.build_native

    def timed_build(fn, *a, **k):  # code generation and LLVM, in CPU seconds
        t = time.process_time()
        try:
            return built(fn, *a, **k)
        finally:
            spent["backend_cpu"] = spent.get("backend_cpu", 0.0) + time.process_time() - t

    runtime_cache.build_native = timed_build
    f, args, tape = _problem(gt, np, case, n)
    cpu, wall = time.process_time(), time.perf_counter()
    if tape:
        backward_plan.compile_after_runs = 1
        vars_ = [gt.Variable(a) for a in args[:2]]
        with gt.GradientTape() as t:
            y = f(*vars_, *[gt.constant(a) for a in args[2:]])
        spent["trace"] = time.process_time() - cpu
        recording = t._tape
        recording.eqns  # the recording as IR equations (kept by the recording), at its length's cost
        spent["to_ir"] = time.process_time() - cpu - spent["trace"]
        [np.asarray(g) for g in t.gradient(y, vars_)]
        plan = backward_cache._recent[1]
        compiled = plan._compiled or plan._served.compiled
        # The tape lets go of its recording in `gradient`; held here, it is freed apart (the
        # recording's objects, and its pending values registered as orphans: recording.py).
        t0 = time.process_time()
        del recording
        spent["free"] = time.process_time() - t0
    else:
        program = gt.grad(f, argnums=(0, 1))
        traced = staged.trace_call

        def timed_trace(*a):
            t0 = time.process_time()
            out = traced(*a)
            spent["trace"] = time.process_time() - t0
            return out

        staged.trace_call = timed_trace
        [np.asarray(g) for g in program(*args)]
        compiled = program.programs()[0][1].compiled
        t0 = time.process_time()
        del unrolled[:]
        spent["free"] = time.process_time() - t0
    spent["cpu"] = time.process_time() - cpu
    spent["wall"] = time.perf_counter() - wall
    spent["compile"] = (spent["cpu"] - spent.get("trace", 0.0) - spent.get("to_ir", 0.0) - spent["reroll"]
                        - spent.get("free", 0.0))
    # code generation and LLVM alone (wall seconds of the compile's stages), and the rest of the
    # compile without them (CPU): what a long loop may still add (the adjoint, the optimizer, the
    # plan's bookkeeping, collections of the recording's objects, the run)
    spent["backend"] = sum(compiled.compile_stages.values())
    spent["rest"] = spent["compile"] - spent.get("backend_cpu", 0.0)
    print(json.dumps(spent))


def _problem(gt, np, case, n):
    """(f, args, on a tape) for a case; f's first two arguments are differentiated."""
    if case.startswith("w7"):
        import workloads as W
        x = np.random.default_rng(0).uniform(-1.0, 1.0, 256)
        if case == "w7-scan":
            def f(x, _):
                def step(x, _):
                    return gt.tanh(gt.sin(x) * 1.01 + 0.1), None
                return gt.sum(gt.scan(step, x, None, length=W.CHAIN // 4)[0])
        else:
            def f(x, _):
                return W.chain(x)
        return f, (x, np.zeros(1)), False
    if case.startswith("rk4"):
        import control_flow as C
        scan_f, unrolled_f, (th, y0) = C.problems(n)["RK4 ODE"]
        return (scan_f if case == "rk4-scan" else unrolled_f), (th, y0), False
    import lstm_objective as L
    args = L.inputs(n)
    if case == "lstm-scan":
        def f(main, extra, state, sequence):
            def step(carry, xs):
                s, total = carry
                x, following = xs
                ypred, s = L.lstm_predict(gt, main, extra, list(s), x)
                ynorm = ypred - gt.log(gt.sum(gt.exp(ypred)) + 2)
                return (tuple(s), total + gt.sum(following * ynorm)), None
            s0 = tuple(state[i] for i in range(state.shape[0]))
            (_, total), _ = gt.scan(step, (s0, 0.0), (sequence[:-1], sequence[1:]))
            return -total / ((sequence.shape[0] - 1) * sequence.shape[1])
    else:
        def f(main, extra, state, sequence):
            return L.lstm_objective(gt, main, extra, state, sequence)
    return f, args, case == "lstm-tape"


def measure(case: str, n: int, repeat: int, **settings) -> dict:
    """The fastest of `repeat` fresh processes (by CPU time), with these environment settings."""
    best = None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="gradtape-bench-") as cache:
            env = dict(os.environ, GRADTAPE_CACHE_DIR=cache, **settings)
            out = subprocess.run([sys.executable, __file__, "--child", case, str(n)], env=env,
                                 capture_output=True, text=True, check=True)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        if best is None or got["cpu"] < best["cpu"]:
            best = got
    return best


# --- the report -------------------------------------------------------------------------------

def row(name, m, base=None):
    # against the scan: the first call's CPU time, and its compile (what issue 24's 1.3x is about)
    ratio = f"{m['cpu'] / base['cpu']:6.2f}x (compile {m['compile'] / base['compile']:.2f}x)" if base else ""
    to_ir = f"  to IR {m['to_ir']:5.2f}" if "to_ir" in m else ""
    free = f"  free {m['free']:5.2f}" if "free" in m else ""
    parts = (f"trace {m.get('trace', 0.0):6.2f}{to_ir}  reroll {m['reroll']:5.2f}  compile {m['compile']:6.2f}"
             f" (backend {m['backend']:5.2f} wall){free}")
    print(f"  {name:34s} cpu {m['cpu']:7.2f} s  wall {m['wall']:7.2f} s  [{parts}]  {ratio}")


def run_time():
    """W7's gradient, the loop re-rolled against kept unrolled: seconds per call."""
    import numpy as np

    import gradtape as gt
    from gradtape import ir, runtime
    import workloads as W
    from _timing import interleaved_best

    x = np.random.default_rng(0).uniform(-1.0, 1.0, 256)
    unrolled = gt.grad(W.chain)
    unrolled(x)
    ir.config.reroll_min_equations = 0
    rolled = gt.grad(W.chain)
    rolled(x)
    runtime.wait_for_compiles()
    np.testing.assert_allclose(rolled(x), unrolled(x), rtol=1e-13)
    best = interleaved_best({"rolled": lambda: rolled(x), "unrolled": lambda: unrolled(x)}, rounds=20, calls=50,
                            clock=time.thread_time)
    print(f"\nW7 gradient run time: re-rolled {best['rolled'] * 1e6:.1f} us, unrolled {best['unrolled'] * 1e6:.1f} us"
          f" ({best['rolled'] / best['unrolled']:.2f}x)")


def w7(r):
    print("W7 chain, 100 ops, 256 values:")
    scan = measure("w7-scan", 0, r)
    row("gt.scan (25 x 4 ops)", scan)
    row("Python loop, re-rolled", measure("w7", 0, r, GRADTAPE_REROLL_MIN_EQUATIONS="0"), scan)
    row("Python loop (default: < 128, unrolled)", measure("w7", 0, r), scan)


def rk4(r):
    print("RK4, 1,000 steps, 16 states, gradient:")
    scan = measure("rk4-scan", 1000, r)
    row("gt.scan", scan)
    row("Python loop, re-rolled", measure("rk4", 1000, r), scan)


def lstm(r, lengths, kinds):
    print("ADBench LSTM, 2 layers, hidden 16 (gradient of main and extra):")
    scan = measure("lstm-scan", 1024, r)
    row("gt.scan, 1,024 characters", scan)
    for kind in kinds:
        first = None
        for n in lengths:
            m = measure("lstm" if kind == "staged" else "lstm-tape", n, r)
            first = first or m
            row(f"{kind} Python loop, {n:,} characters", m)
            if n != lengths[0]:
                print(f"    at {n:,} / at {lengths[0]:,} characters: compile {m['compile'] / first['compile']:.2f}x,"
                      f" backend {m['backend'] / first['backend']:.2f}x (CPU"
                      f" {m.get('backend_cpu', 0.0) / max(first.get('backend_cpu', 0.0), 1e-9):.2f}x); compile less backend (CPU)"
                      f" {m['rest']:.2f} s against {first['rest']:.2f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--lengths", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--only", choices=["w7", "rk4", "lstm-staged", "lstm-tape", "run"])
    ap.add_argument("--child", nargs=2)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]))
        return
    r = a.repeat
    print("first call of a gradient, cold, fresh process (best of %d); ratios of CPU time, and of the compile" % r)
    if a.only in (None, "w7"):
        w7(r)
    if a.only in (None, "rk4"):
        rk4(r)
    if a.only in (None, "lstm-staged", "lstm-tape"):
        lstm(r, a.lengths, ("staged", "tape") if a.only is None else (a.only[5:],))
    if a.only in (None, "run"):
        run_time()

if __name__ == "__main__":
    main()
