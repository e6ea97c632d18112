"""Per-call overhead of a compiled trivial function (c = a + b, n = 8, float64).

Reported as ns per call and as ratios to a Python no-op call and to
`np.add(a, b)` on the same arrays, all measured in the same run. The
kernel does 8 additions, so the time is the call path: the signature check,
the output allocation and the pointer hand-off.

Targets: ≤ 1 µs through
CompiledFunction; the raw generated entry alone is the floor.

    python bench/call_overhead.py

Uses gradtape.codegen.lower when it can lower `add`, else the hand-made
lowering of the runtime tests (tests/runtime/handmade_lowering.py).
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from _quiet import wait_quiet  # noqa: E402
from _timing import fmt, per_call  # noqa: E402

from gradtape import codegen, ir, runtime  # noqa: E402
from gradtape.ir.ops import add  # noqa: E402
from gradtape.runtime import config  # noqa: E402

N = 8
ROUNDS = 7


def add_function():
    b = ir.Builder()
    t = ir.TensorType((N,), np.float64)
    x, y = b.input(t), b.input(t)
    return b.build([x, y], [add(x, y)])


def pick_lowering() -> str:
    runtime.clear_cache()
    if runtime.compile_function(add_function()).native:
        return "gradtape.codegen"
    from tests.runtime import handmade_lowering

    codegen.lower = handmade_lowering.lower
    runtime.clear_cache()
    return "hand-made (tests/runtime/handmade_lowering.py)"


def compiled(fast_call: bool = True, interpreter: bool = False, release_gil: bool = False):
    runtime.clear_cache()
    config.fast_call = fast_call
    threshold = config.release_gil_bytes
    config.release_gil_bytes = 0 if release_gil else threshold
    cf = runtime.interpreted(add_function()) if interpreter else runtime.compile_function(add_function())
    config.fast_call, config.release_gil_bytes = True, threshold
    return cf


def main():
    lowering = pick_lowering()
    a, b, c = np.arange(N, dtype=np.float64), np.ones(N), np.empty(N)
    fast = compiled()
    via_ctypes = compiled(fast_call=False)
    interp = compiled(interpreter=True)
    gil_free = compiled(release_gil=True)
    assert fast.call_path == "fastcall" and via_ctypes.call_path == "ctypes"
    np.testing.assert_array_equal(fast(a, b)[0], a + b)

    def noop(*args):
        pass

    new, into, out = fast.entry, fast._into, [c]
    strided = np.arange(2 * N, dtype=np.float64)[::2]
    cases = [
        ("Python no-op f(a, b)", lambda: noop(a, b)),
        ("np.add(a, b)", lambda: np.add(a, b)),
        ("np.add(a, b, out=c)", lambda: np.add(a, b, out=c)),
        ("cf.entry(a, b): generated, allocates c", lambda: new(a, b)),
        ("generated into-entry, writes c", lambda: into(a, b, c)),
        ("CompiledFunction cf(a, b)", lambda: fast(a, b)),
        ("CompiledFunction cf(a, b, out=[c])", lambda: fast(a, b, out=out)),
        ("cf(a, b), kernel releasing the GIL", lambda: gil_free(a, b)),
        ("cf(strided, b): converted input", lambda: fast(strided, b)),
        ("ctypes path cf(a, b)", lambda: via_ctypes(a, b)),
        ("interpreter cf(a, b)", lambda: interp(a, b)),
    ]
    busy = wait_quiet()
    lam = per_call(lambda: None)  # every case runs inside a lambda: report it, do not subtract it
    # Rounds interleave the cases and each keeps its best round: on a shared machine a co-tenant
    # then slows every case alike instead of whichever ran while it was busy.
    times = {name: float("inf") for name, _ in cases}
    for _ in range(ROUNDS):
        for name, fn in cases:
            times[name] = min(times[name], per_call(fn, repeats=3, min_time=0.03))
    t_noop, t_add = times["Python no-op f(a, b)"], times["np.add(a, b)"]
    print(f"call overhead, c = a + b on float64[{N}]; kernel from {lowering}")
    print(f"(each time includes the benchmark's own lambda call, {fmt(lam)}; CPUs {busy:.0%} busy before)\n")
    print(f"{'call':40s} {'time':>10s} {'/ no-op':>8s} {'/ np.add':>9s}")
    for name, _ in cases:
        t = times[name]
        print(f"{name:40s} {fmt(t):>10s} {t / t_noop:7.2f}x {t / t_add:8.2f}x")
    print(f"\ncompile: {fast.compile_seconds * 1e3:.1f} ms = "
          + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in fast.compile_stages.items()))


if __name__ == "__main__":
    main()
