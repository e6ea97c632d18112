"""Compile time per stage and kernel speed at each optimization level (GRADTAPE_OPT_LEVEL).

For each level 0..3 it compiles two Functions with the runtime's pipeline:
a small one (4 elementwise ops) and a long one (100 ops), both on 1e5
float64, and prints the milliseconds of each stage (lower, ir_text, parse,
optimize, emit_object, load, entry) and the time per element of the small
kernel, as a ratio to NumPy evaluating the same expression (measured beside
it).

    python bench/compile_pipeline.py

With `--unrolling` it compares LLVM's loop unroller on and off
(config.loop_unrolling) on staged gradients instead: each Function is
compiled both ways in one process and the two are timed alternately, and
it prints the milliseconds of optimize + emit_object (CPU time of the
compiling thread, less disturbed by other processes than wall time) and
the time per call of each.

    python bench/compile_pipeline.py --unrolling

Uses gradtape.codegen.lower when it can lower the Functions, else the
hand-made lowering of the runtime tests (one loop per op, intermediates in
the arena).
"""
from __future__ import annotations

import os
import resource
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# These time compiles: keep the persistent disk cache out of them.
os.environ["GRADTAPE_CACHE_DIR"] = ""
sys.path.insert(0, os.path.dirname(HERE))
from _quiet import wait_quiet  # noqa: E402
from _timing import per_call  # noqa: E402

from gradtape import codegen, ir, runtime  # noqa: E402
from gradtape.ir.ops import add, mul, sub  # noqa: E402
from gradtape.runtime import config  # noqa: E402

N = 100_000
STAGES = ("lower", "ir_text", "parse", "optimize", "emit_object", "load", "entry")


def chain(n_ops: int, size: int):
    b = ir.Builder()
    t = ir.TensorType((size,), np.float64)
    x, y = b.input(t), b.input(t)
    v = x
    for k in range(n_ops):
        v = (mul, add, sub)[k % 3](v, y if k % 2 else x)
    return b.build([x, y], [v])


def numpy_chain(n_ops: int, x, y):
    v = x
    for k in range(n_ops):
        v = (np.multiply, np.add, np.subtract)[k % 3](v, y if k % 2 else x)
    return v


def main():
    runtime.clear_cache()
    if not runtime.compile_function(chain(4, 8)).native:
        from tests.runtime import handmade_lowering

        codegen.lower = handmade_lowering.lower
        print("(hand-made lowering: gradtape.codegen cannot lower these yet)")
    x, y = np.random.default_rng(0).uniform(0.5, 1.5, (2, N))
    print(f"(CPUs {wait_quiet():.0%} busy before)")
    print(f"{'level':5s} {'ops':>4s} {'total ms':>9s}  " + " ".join(f"{s:>8s}" for s in STAGES) + "   ns/elem  / numpy")
    for level in (0, 1, 2, 3):
        config.opt_level = level
        for n_ops in (4, 100):
            runtime.clear_cache()
            # Sizes stay large: a loop with a small constant trip count is fully unrolled,
            # and 100 unrolled loops take seconds to compile (measured: 5 s for 200 loops of 64).
            cf = runtime.compile_function(chain(n_ops, N))
            stages = " ".join(f"{cf.compile_stages.get(s, 0) * 1e3:8.2f}" for s in STAGES)
            speed = ""
            if n_ops == 4:
                np.testing.assert_allclose(cf(x, y)[0], numpy_chain(4, x, y), rtol=1e-12)
                t = per_call(lambda: cf(x, y))
                t_numpy = per_call(lambda: numpy_chain(4, x, y))  # again, beside it: the machine is shared
                speed = f"   {t / N * 1e9:7.2f}  {t / t_numpy:6.2f}x"
            print(f"O{level:<4d} {n_ops:4d} {cf.compile_seconds * 1e3:9.1f}  {stages}{speed}")


def _unrolling_cases():
    import gradtape as gt

    sys.path.insert(0, HERE)
    import workloads as W

    rng = np.random.default_rng(0)
    params, xb, onehot = W.mlp_data()
    X, y = W.logreg_data()
    return [
        ("W1 rosenbrock 2-D v&g", gt.value_and_grad(W.rosen2), (np.array([-1.2, 1.0]),)),
        ("W2 rosenbrock n=1e5", gt.grad(W.rosen_sum), (rng.uniform(-1, 1, 100_000),)),
        ("W3 MLP grad", gt.grad(W.mlp_loss), (params, xb, onehot)),
        ("W4 logreg grad", gt.grad(W.logreg_loss), (np.zeros(50), X, y)),
        ("W7 chain n=256", gt.grad(W.chain), (rng.uniform(-1, 1, 256),)),
        ("log_softmax rows of 10", gt.grad(lambda z: gt.sum(gt.log_softmax(z, axis=-1) ** 2)),
         (rng.normal(size=(64, 10)),)),
        ("center rows of 7", gt.grad(lambda z: gt.sum((z - gt.mean(z, axis=1, keepdims=True)) ** 2)),
         (rng.normal(size=(100, 7)),)),
        ("sum over 3 rows", gt.grad(lambda z: gt.sum(gt.sum(z * z, axis=0) ** 2)), (rng.normal(size=(3, 1000)),)),
        ("tanh * exp n=1e4", gt.grad(lambda z: gt.sum(gt.tanh(z) * gt.exp(-z))), (rng.normal(size=10_000),)),
    ]


def _thread_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def _build_timed(fn):
    """A CompiledFunction built now (never from the cache) and its optimize + emit_object CPU seconds."""
    from gradtape.runtime import build, compiled, jit

    spent = {}
    optimize, emit = jit.target.optimize, jit.target.emit_object

    def timed(stage, inner):
        def run(*args, **kwargs):
            c = _thread_cpu()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[stage] = spent.get(stage, 0.0) + _thread_cpu() - c
        return run

    jit.target.optimize, jit.target.emit_object = timed("optimize", optimize), timed("emit", emit)
    try:
        native = build.build_native(fn)
    finally:
        jit.target.optimize, jit.target.emit_object = optimize, emit
    return compiled.CompiledFunction(fn, native), spent["optimize"] + spent["emit"]


def unrolling():
    from gradtape.tracer import tree

    config.async_compile = False
    print(f"(CPUs {wait_quiet():.0%} busy before; optimize + emit_object in CPU ms, best of 3)")
    print(f"{'kernel':24s} {'compile on':>10s} {'off':>6s}   {'call on':>10s} {'off':>10s}  {'off/on':>6s}")
    for name, f, args in _unrolling_cases():
        f(*args)
        fn = next(iter(f._programs.values())).fn
        leaves = [np.asarray(a) for a in tree.flatten(list(args))]
        cfs, cpu = {}, {}
        for on in (True, False):
            config.loop_unrolling = on
            builds = [_build_timed(fn) for _ in range(3)]
            cfs[on], cpu[on] = builds[0][0], min(c for _, c in builds)
        for got, want in zip(cfs[False](*leaves), cfs[True](*leaves)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        times = {True: [], False: []}
        for _ in range(5):  # alternately: the machine is shared
            for on in (True, False):
                times[on].append(per_call(lambda: cfs[on](*leaves), repeats=5, min_time=0.1))
        t_on, t_off = min(times[True]), min(times[False])
        print(f"{name:24s} {cpu[True] * 1e3:10.1f} {cpu[False] * 1e3:6.1f}   "
              f"{t_on * 1e6:8.2f}us {t_off * 1e6:8.2f}us  {t_off / t_on:6.2f}")
    config.loop_unrolling = True


if __name__ == "__main__":
    unrolling() if "--unrolling" in sys.argv[1:] else main()
