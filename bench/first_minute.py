"""A program's first minute with gradtape: named rows, each timed in fresh processes with a new cache.

Every run of a row is a new Python process with a new, empty compile cache
directory (GRADTAPE_CACHE_DIR; a cached row's is filled first by an untimed
run of the same code) and synchronous compiles
(GRADTAPE_ASYNC_COMPILE=0), so it pays for everything a program pays for
once: importing gradtape, starting LLVM (and its worker process),
tracing, compiling. Rows are run interleaved (one run of each, then the
next round), so that a change in the machine's load falls on all of them.
The table gives each row's medians in ms, `import gradtape` and the row's
own timed part (`first call`), and the first call's ratio to its base row.

Rows:

- `W3 worker`: W3's first call (the gradient of a tanh MLP 784-256-10's
  loss, bench/workloads.py) with the default settings: LLVM runs in its
  worker process (runtime/llvm_worker.py), started in the background when
  the function is staged. `worker wait` is the part of the first call spent
  waiting for that process to finish starting.
- `W3 in-process`: the same with GRADTAPE_LLVM_WORKER_AFTER=-1 (LLVM in
  this process, unguarded). Target (issue 24.1): `W3 worker` within 1.2x.
- `W3 cached`: `W3 worker` in a process whose cache directory an untimed
  run of the same code filled first: the first call traces, loads the kernel
  and the call wrappers from the disk cache and compiles nothing (the worker
  is started all the same, when the function is staged, and never used).
- `small worker`, `small in-process`: the same two for the gradient of
  sum(tanh(x) * x) over 3 values, whose trace and lowering are too short to
  hide all of the worker's start-up.

- `GMM worker`, `GMM in-process`, `LSTM worker`, `LSTM in-process`: the same
  two for the staged gradients of ADBench's GMM objective (N=1000, K=10,
  D=8) and LSTM objective (2 layers, 256 characters, a Python loop that
  the tracer re-rolls), as bench/gmm_objective.py and lstm_objective.py
  write them. Target (issue 24.1): each worker row within 1.2x.

- `batch loop`: W3's gradient in three epochs of SGD over 12 batches of
  128 and a last batch of 40 (issue 24.2): the first epoch with its two
  compiles, the third, the slowest call of the first epoch after the first
  against the third's median step (target: 3x) and the first epoch against
  the third plus one compile (target: 2x). The last batch's first call runs
  in the interpreter while the dynamic version builds in the background,
  and its second call (the last of epoch 2) waits for what is left of that
  build: `e2 worst/step` is epoch 2's slowest call against the same step.

To add a row, add a function `row_<name>(timings)` that does the row's work
after `import gradtape` and fills `timings` (ms) with what it measured
(`first call` at least), and a Row naming it in ROWS.

    python bench/first_minute.py [--runs 5] [--rows "W3 worker" ...]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# cached: the row's process finds its cache directory filled by an untimed run of the same row
Row = collections.namedtuple("Row", ["name", "function", "env", "base", "cached"], defaults=(False,))

ROWS = [
    Row("W3 worker", "w3_first_call", {}, "W3 in-process"),
    Row("W3 in-process", "w3_first_call", {"GRADTAPE_LLVM_WORKER_AFTER": "-1"}, None),
    Row("W3 cached", "w3_first_call", {}, "W3 worker", cached=True),
    Row("small worker", "small_first_call", {}, "small in-process"),
    Row("small in-process", "small_first_call", {"GRADTAPE_LLVM_WORKER_AFTER": "-1"}, None),
    Row("GMM worker", "gmm_first_call", {}, "GMM in-process"),
    Row("GMM in-process", "gmm_first_call", {"GRADTAPE_LLVM_WORKER_AFTER": "-1"}, None),
    Row("LSTM worker", "lstm_first_call", {}, "LSTM in-process"),
    Row("LSTM in-process", "lstm_first_call", {"GRADTAPE_LLVM_WORKER_AFTER": "-1"}, None),
    Row("batch loop", "batch_loop", {}, None),
]


def w3_first_call(timings: dict):
    import numpy as np  # noqa: F401

    import gradtape as gt
    import workloads as W

    params, x, onehot = W.mlp_data()
    t = time.perf_counter()
    g = gt.grad(W.mlp_loss)
    g(params, x, onehot)
    timings["first call"] = (time.perf_counter() - t) * 1e3
    _compiled(g, timings)


def small_first_call(timings: dict):
    import numpy as np

    import gradtape as gt

    x = np.array([0.5, -1.0, 2.0])
    t = time.perf_counter()
    g = gt.grad(lambda x: gt.sum(gt.tanh(x) * x))
    g(x)
    timings["first call"] = (time.perf_counter() - t) * 1e3
    _compiled(g, timings)


def gmm_first_call(timings: dict):
    """The staged gradient of ADBench's GMM objective (bench/gmm_objective.py: N=1000, K=10,
    D=8) with respect to its three parameters, first call."""
    import numpy as np

    import gmm_objective as gmm

    alphas, means, icf, x = gmm.inputs()
    _first_gradient(timings, lambda a, m, q: gmm.gmm_objective(np, a, m, q, x), (alphas, means, icf))


def lstm_first_call(timings: dict):
    """The staged gradient of ADBench's LSTM objective (bench/lstm_objective.py: 2 layers, hidden
    16, a Python loop over 256 characters, re-rolled into a scan) with respect to its
    parameters, first call."""
    import gradtape as gt
    import lstm_objective as lstm

    main, extra, state, sequence = lstm.inputs(256)
    _first_gradient(timings, lambda m, e, s: lstm.lstm_objective(gt, m, e, s, sequence), (main, extra, state))


def _first_gradient(timings: dict, objective, params):
    """Time staging `gt.grad(objective)` with respect to every parameter and its first call."""
    import gradtape as gt

    t = time.perf_counter()
    g = gt.grad(objective, argnums=tuple(range(len(params))))
    g(*params)
    timings["first call"] = (time.perf_counter() - t) * 1e3
    _compiled(g, timings)


def batch_loop(timings: dict):
    """Issue 24.2's loop: W3's gradient over 12 batches of 128 and a last one of 40, three epochs
    of SGD. `epoch 1` holds the first call's compile (`first call`) and the one the last batch
    size brings; `worst/step` is the slowest call of epoch 1 after the first against the median
    step of epoch 3, `epoch 1/(3+1st)` epoch 1 against epoch 3 plus the first call (targets:
    3x and 2x), `e2 worst/step` epoch 2's slowest call against that step."""
    import numpy as np

    import gradtape as gt
    import workloads as W

    params, x, onehot = W.mlp_data(batch=12 * 128 + 40)
    g = gt.grad(W.mlp_loss)
    epochs = []
    for _ in range(3):
        calls = []
        for start in range(0, x.shape[0], 128):
            t = time.perf_counter()
            grads = g(params, x[start:start + 128], onehot[start:start + 128])
            calls.append(time.perf_counter() - t)
            params = [p - 0.01 * d for p, d in zip(params, grads)]
        epochs.append(calls)
    step = float(np.median(epochs[2]))
    timings["first call"] = epochs[0][0] * 1e3
    timings["epoch 1"] = sum(epochs[0]) * 1e3
    timings["epoch 3"] = sum(epochs[2]) * 1e3
    timings["worst/step"] = max(epochs[0][1:]) / step
    timings["epoch 1/(3+1st)"] = sum(epochs[0]) / (sum(epochs[2]) + epochs[0][0])
    timings["e2 worst/step"] = max(epochs[1]) / step


def _compiled(staged, timings: dict):
    """The worker's part of `staged`'s first compile, whether it compiled natively, and whether
    its kernel came from the disk cache."""
    from gradtape import runtime

    compiled = next(iter(staged._programs.values())).compiled
    timings["worker wait"] = getattr(compiled, "compile_stages", {}).get("worker_wait", 0.0) * 1e3
    timings["native"] = bool(getattr(compiled, "native", False))
    timings["disk loads"] = runtime.cache_info()["disk_loads"]


def _child(function: str):
    sys.path[:0] = [HERE, ROOT]
    t = time.perf_counter()
    import gradtape  # noqa: F401

    timings = {"import": (time.perf_counter() - t) * 1e3}
    globals()[function](timings)
    print(json.dumps(timings))


def _env() -> dict:
    env = dict(os.environ, GRADTAPE_ASYNC_COMPILE="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # modules load from cached bytecode, as installed
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "gradtape-bench-pycache")
    return env


def run_once(row: Row) -> dict:
    """One run of `row` in a fresh process with an empty cache directory (or, for a cached row, the
    directory an untimed run filled): its timings (ms)."""
    cache = tempfile.mkdtemp(prefix="gradtape-first-minute-")
    try:
        env = dict(_env(), GRADTAPE_CACHE_DIR=cache, **row.env)
        command = [sys.executable, os.path.abspath(__file__), "--child", row.function]
        for _ in range(2 if row.cached else 1):
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=ROOT).stdout
        return json.loads(out.strip().splitlines()[-1])
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _cell(runs, medians, column) -> str:
    """A row's median of `column`, or '-' where the row does not measure it."""
    if column not in runs[0]:
        return f" {'-':>15s}"
    value = medians[column]
    return f" {value:15.1f}" if abs(value) >= 10 else f" {value:15.2f}"


def _median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rows", nargs="*", default=[r.name for r in ROWS], choices=[r.name for r in ROWS])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return
    sys.path.insert(0, HERE)
    from _quiet import busy_fraction, wait_quiet

    rows = [r for r in ROWS if r.name in args.rows]
    for row in rows:
        run_once(row)  # untimed: writes the bytecode cache
    busy = wait_quiet()
    samples = {row.name: [] for row in rows}
    for _ in range(args.runs):
        for row in rows:
            samples[row.name].append(run_once(row))
    columns = []  # every number a row measured, in the order rows report them
    for runs in samples.values():
        for c, value in runs[0].items():
            if c not in columns and type(value) is float:
                columns.append(c)
    print(f"{args.runs} fresh processes per row, interleaved, empty cache each (a cached row's filled by an "
          f"untimed run); medians in ms "
          f"(CPUs {busy:.0%} busy before, {busy_fraction():.0%} after)")
    print(f"  {'row':16s}" + "".join(f" {c:>15s}" for c in columns) + "   first call / base")
    medians = {name: {c: _median([s.get(c, 0.0) for s in runs]) for c in columns} for name, runs in samples.items()}
    for row in rows:
        line = f"  {row.name:16s}" + "".join(_cell(samples[row.name], medians[row.name], c) for c in columns)
        if row.base in medians:
            line += f"   {medians[row.name]['first call'] / medians[row.base]['first call']:.2f}x {row.base}"
        if not all(s.get("native", True) for s in samples[row.name]):
            line += "  (some runs did not compile natively)"
        if row.cached and not all(s.get("disk loads") for s in samples[row.name]):
            line += "  (some runs compiled instead of loading from the cache)"
        print(line)


if __name__ == "__main__":
    main()
