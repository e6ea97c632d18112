"""Full-batch logistic-regression gradient on Dask against one process, and Dask's overhead per task.

    python bench/dask_gradient.py [--rows 400000] [--features 50] [--chunks 8] [--repeats 5]

Rows:
  one process   value_and_grad compiled, called on the whole batch
  dask, N workers   gradtape.dask.value_and_grad over the chunks, on a LocalCluster of N worker
                processes (one thread each); the data is persisted on the workers first
  empty tasks   the same graph shape with tasks that do nothing: Dask's own cost per
                map-reduce, divided by the number of chunks for the overhead per task

Each figure is the best of --repeats runs (the machine is shared: best-of is the least noisy).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "examples"), ROOT]
# The workers are new processes: they find this checkout's gradtape (and the example) the same way.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.path.join(ROOT, "examples"),
                                                         os.environ.get("PYTHONPATH")]))

import dask  # noqa: E402
import dask.array as da  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402

import gradtape as gt  # noqa: E402
import gradtape.dask as gtd  # noqa: E402
from dask_lbfgs import loss_fn, make_data  # noqa: E402


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _nothing(*_):
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    X, y = make_data(args.rows, args.features)
    w = np.zeros(args.features)
    vg = gt.value_and_grad(loss_fn)
    vg(w, X, y)
    gt.runtime.wait_for_compiles()
    vg(w, X, y)
    one = best(lambda: vg(w, X, y), args.repeats)
    print(f"{args.rows}x{args.features}, {args.chunks} chunks")
    print(f"  one process        {one * 1e3:8.1f} ms per full-batch gradient")
    rows = -(-args.rows // args.chunks)
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None,
                          silence_logs=40) as cluster, Client(cluster) as client:
            with warnings.catch_warnings():  # persisting sends the data once; Dask warns of the big graph
                warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
                Xd = da.from_array(X, chunks=(rows, args.features)).persist()
                yd = da.from_array(y, chunks=rows).persist()
            gtd.value_and_grad(vg, w, Xd, yd, reduce="mean", client=client)  # ships the compiled code
            seconds = best(lambda: gtd.value_and_grad(vg, w, Xd, yd, reduce="mean", client=client), args.repeats)
            blocks = Xd.to_delayed().ravel()

            def empty_map_reduce():  # new keys each time: a repeat must not wait on the last one's release
                empty = [dask.delayed(_nothing, pure=False)(b) for b in blocks]
                return client.compute(dask.delayed(sum, pure=False)(empty)).result()

            overhead = best(empty_map_reduce, args.repeats)
            print(f"  dask, {workers} worker{'s' if workers > 1 else ' '}    {seconds * 1e3:8.1f} ms per full-batch "
                  f"gradient ({one / seconds:4.2f}x one process); empty map-reduce {overhead * 1e3:6.1f} ms, "
                  f"{overhead / args.chunks * 1e3:5.2f} ms per task")


if __name__ == "__main__":
    main()
