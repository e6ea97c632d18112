"""One budget of threads (issue 27 point 1): a BLAS-heavy gradient on a quiet
machine and while other processes keep every core busy, with gradtape's
threads and OpenBLAS's at their defaults and with both forced to one thread.

    python bench/thread_budget.py [--seconds 3] [--workloads gmm,matmul] [--configs default,one]

Workloads (staged `gt.value_and_grad`, timed after warm-up):
- `gmm`: ADBench's GMM objective (bench/gmm_objective.py) at N=1000, K=25,
  D=32: its einsum `kij,nkj->nki` is 25 products of 32 x 32 by 32 x 1000
  (and its gradient as many again), large enough for OpenBLAS to thread;
- `matmul`: sum(tanh(A @ B)) over 384 x 384 matrices, one product each way.

Configurations, each in its own process (OpenBLAS reads its environment
when NumPy loads it):
- `default`: GRADTAPE_THREADS and OPENBLAS_NUM_THREADS unset;
- `one`: both set to 1.

Each process times its calls quiet, then starts one busy-loop process per
core (`python -c "while True: pass"`) and times them again. Printed: the
median and 90th percentile per call, the ratio loaded / quiet, and the
ratios to `one` quiet and to `one` loaded (well above 1: the threads
fight). The machine is shared: the load average and the busy fraction of
the CPUs just before each block are printed with it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = {"default": {}, "one": {"GRADTAPE_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}}


def _workload(name):
    sys.path.insert(0, HERE)
    import numpy as np

    import gradtape as gt
    if name == "gmm":
        import gmm_objective as gmm
        args = gmm.inputs(1000, 25, 32)
        f = gt.value_and_grad(lambda a, m, i, x: gmm.gmm_objective(gt, a, m, i, x), argnums=(0, 1, 2))
        return lambda: f(*args)
    if name == "matmul":
        rng = np.random.default_rng(0)
        a, b = rng.standard_normal((384, 384)) / 20, rng.standard_normal((384, 384)) / 20
        f = gt.value_and_grad(lambda a, b: gt.sum(gt.tanh(a @ b)), argnums=(0, 1))
        return lambda: f(a, b)
    raise SystemExit(f"unknown workload {name!r}")


def _time(fn, seconds: float) -> dict:
    samples, deadline = [], time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(samples) < 10:
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    samples.sort()
    return {"median": samples[len(samples) // 2], "p90": samples[int(len(samples) * 0.9)], "calls": len(samples)}


def child(names, seconds: float):
    """Time every workload quiet, then beside one busy process per core; print JSON."""
    from _quiet import busy_fraction
    fns = {name: _workload(name) for name in names}
    for fn in fns.values():  # compile and warm up
        for _ in range(3):
            fn()
    import gradtape
    out = {"quiet": {}, "loaded": {}, "load": {}, "gradtape": os.path.dirname(os.path.dirname(gradtape.__file__))}
    out["load"]["quiet"] = (os.getloadavg()[0], busy_fraction(0.5))
    for name, fn in fns.items():
        out["quiet"][name] = _time(fn, seconds)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.5)
        out["load"]["loaded"] = (os.getloadavg()[0], busy_fraction(0.5))
        for name, fn in fns.items():
            out["loaded"][name] = _time(fn, seconds)
    finally:
        for p in hogs:
            p.kill()
            p.wait()
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="time per workload and load (default 3)")
    ap.add_argument("--workloads", default="gmm,matmul")
    ap.add_argument("--configs", default="default,one")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = args.workloads.split(",")
    if args.child:
        return child(names, args.seconds)
    results = {}
    for config in args.configs.split(","):
        env = {k: v for k, v in os.environ.items() if k not in ("GRADTAPE_THREADS", "OPENBLAS_NUM_THREADS")}
        env.update(CONFIGS[config])
        run = subprocess.run([sys.executable, __file__, "--child", "--seconds", str(args.seconds),
                              "--workloads", args.workloads], env=env, capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"{config}: {run.stderr}")
        results[config] = json.loads(run.stdout.strip().splitlines()[-1])
    ms = lambda s: f"{s * 1e3:8.2f}"  # noqa: E731
    print(f"gradtape from {next(iter(results.values()))['gradtape']}; {os.cpu_count()} CPUs; "
          "per call in ms (median / p90); loaded = one busy-loop process per CPU")
    print(f"{'workload':8s} {'config':8s} {'quiet':>17s} {'loaded':>17s} {'loaded/quiet':>12s} "
          f"{'loaded/one quiet':>16s} {'loaded/one loaded':>17s}")
    for name in names:
        one = results.get("one", {})
        base, base_loaded = (one.get(load, {}).get(name, {}).get("median") for load in ("quiet", "loaded"))
        for config, r in results.items():
            q, l = r["quiet"][name], r["loaded"][name]
            vs_one = f"{l['median'] / base:16.2f} {l['median'] / base_loaded:17.2f}" if base else ""
            print(f"{name:8s} {config:8s} {ms(q['median'])} / {ms(q['p90'])} {ms(l['median'])} / {ms(l['p90'])} "
                  f"{l['median'] / q['median']:12.2f} {vs_one}")
    for config, r in results.items():
        (lq, bq), (ll, bl) = r["load"]["quiet"], r["load"]["loaded"]
        print(f"{config}: before quiet: load average {lq:.2f}, CPUs {bq:.0%} busy; "
              f"before loaded: load average {ll:.2f}, CPUs {bl:.0%} busy")


if __name__ == "__main__":
    main()
