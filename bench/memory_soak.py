"""Memory with many shapes: RSS before and after compiling one function for thousands of them.

Two soaks, each in a fresh process (so neither inherits the other's heap):

- `staged`: one `gt.value_and_grad(f)` called once on each of `--shapes`
  (default 3,000) vector lengths, every call compiling a new signature
  (background compiles off, so each compile finishes inside its call);
- `eager`: a GradientTape loop over `--eager-shapes` (default 1,000)
  vector lengths, `compile_after_runs` steps each, so every length's
  backward plan is compiled once.

Each prints RSS (MiB, from /proc/self/status) at the start (after the
imports and one warm-up shape), after the soak, and after
`gt.clear_cache()` plus a garbage collection, with the runtime's cache
counters, how many compiles ran in the process itself (the rest ran in
LLVM's worker process, runtime/llvm_worker.py, whose RSS is shown apart)
The disk cache is off (GRADTAPE_CACHE_DIR=""): this measures what a
process keeps in memory. Target (issue 14): the staged soak ends within
200 MB of its start.

    python bench/memory_soak.py [--shapes 3000] [--eager-shapes 1000] [--mode staged eager]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

# This checkout's gradtape, not an installed one.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rss_mib(pid="self") -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _staged(n_shapes: int) -> dict:
    import numpy as np

    import gradtape as gt

    f = gt.value_and_grad(lambda x: gt.sum(gt.tanh(x) * x + gt.exp(-x * x)))
    f(np.linspace(-1, 1, 1))  # warm-up: the call wrappers and code generation's first use
    start = rss_mib()
    for n in range(2, n_shapes + 2):
        f(np.linspace(-1, 1, n))
    return {"start": start, "n": n_shapes}


def _eager(n_shapes: int) -> dict:
    import numpy as np

    import gradtape as gt
    from gradtape.tracer import backward_plan

    def steps(n):
        x = gt.constant(np.linspace(-1, 1, n))
        for _ in range(backward_plan.compile_after_runs + 1):
            with gt.GradientTape() as tape:
                tape.watch(x)
                y = gt.sum(gt.tanh(x) * x + gt.exp(-x * x))
            tape.gradient(y, x)

    steps(1)
    start = rss_mib()
    for n in range(2, n_shapes + 2):
        steps(n)
    return {"start": start, "n": n_shapes}


def _child(mode: str, n: int):
    import gc

    result = (_staged if mode == "staged" else _eager)(n)
    import gradtape as gt
    from gradtape.runtime import jit, llvm_worker

    gc.collect()
    result["end"] = rss_mib()
    result["runtime_cache"] = gt.runtime.cache_info()
    result["in_process_compiles"] = jit.in_process_compiles
    worker = llvm_worker._current
    result["worker_rss"] = rss_mib(worker.process.pid) if worker is not None else None
    gt.clear_cache()
    gc.collect()
    result["after_clear"] = rss_mib()
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=int, default=3000, help="shapes in the staged soak")
    parser.add_argument("--eager-shapes", type=int, default=1000, help="shapes in the eager soak")
    parser.add_argument("--mode", nargs="+", choices=["staged", "eager"], default=["staged", "eager"])
    parser.add_argument("--child", choices=["staged", "eager"], help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.n)
        return
    env = dict(os.environ, GRADTAPE_ASYNC_COMPILE="0", GRADTAPE_CACHE_DIR="")
    for mode in args.mode:
        n = args.shapes if mode == "staged" else args.eager_shapes
        out = subprocess.run([sys.executable, __file__, "--child", mode, "--n", str(n)],
                             env=env, capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"{mode} soak failed:\n{out.stderr}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        c = r["runtime_cache"]
        print(f"{mode:7s} {r['n']:5d} shapes: RSS {r['start']:7.1f} -> {r['end']:7.1f} MiB "
              f"(+{r['end'] - r['start']:.1f}), after clear_cache {r['after_clear']:7.1f} MiB; "
              f"runtime cache: {c['entries']} entries, {c['compiles']} compiles, "
              f"{c['evictions']} evictions; {r['in_process_compiles']} compiles in this process, "
              f"the rest in LLVM's worker process" + (f" (RSS now {r['worker_rss']:.1f} MiB)" if r["worker_rss"] else ""))


if __name__ == "__main__":
    main()
