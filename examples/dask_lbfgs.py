"""Logistic regression fitted by L-BFGS over a Dask array, on a LocalCluster of worker processes.

    python examples/dask_lbfgs.py [--small] [--rows 200000] [--chunks 8] [--workers 2]

The data lives in Dask (here made from NumPy; in practice read by Dask from
files). Each L-BFGS evaluation maps the compiled value-and-gradient of the
mean logistic loss over the chunks (one task per chunk, run in the worker
processes on machine code compiled once here) and reduces the values and
gradients. `--small` uses Dask's local scheduler instead of a cluster.
The same code runs on many machines with `Client("tcp://scheduler:8786")`.
"""
import argparse
import time

import numpy as np

import gradtape as gt
import gradtape.dask as gtd


def loss_fn(w, X, y):
    """Mean negative log-likelihood of 0/1 labels: softplus(z) - y z, with z = X w."""
    z = X @ w
    return gt.mean(gt.softplus(z) - y * z)


def make_data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    true_w = rng.normal(size=d)
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-X @ true_w))).astype(np.float64)
    return X, y


def _scattered(client, a, rows: int):
    """A dask array of `a`'s row chunks, each already in a worker's memory."""
    import dask
    import dask.array as da

    pieces = [a[i:i + rows] for i in range(0, len(a), rows)]
    futures = client.scatter(pieces)
    return da.concatenate([da.from_delayed(dask.delayed(f), p.shape, p.dtype) for f, p in zip(futures, pieces)])


def fit(X, y, chunks: int, client=None):
    import dask.array as da  # optional dependency: gradtape[dask]

    rows = -(-len(y) // chunks)
    if client is None:
        Xd = da.from_array(X, chunks=(rows, X.shape[1])).persist()
        yd = da.from_array(y, chunks=rows).persist()
    else:  # send each chunk to the workers once, rather than the whole arrays inside the task graph
        Xd, yd = (_scattered(client, a, rows) for a in (X, y))
    return gtd.minimize(gt.value_and_grad(loss_fn), np.zeros(X.shape[1]), Xd, yd, reduce="mean", client=client,
                        options={"gtol": 1e-9, "ftol": 1e-15})


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a small problem on Dask's local scheduler")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    X, y = make_data(2_000 if args.small else args.rows, args.features)
    started = time.perf_counter()
    if args.small:
        result = fit(X, y, args.chunks)
    else:
        from dask.distributed import Client, LocalCluster

        with LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            result = fit(X, y, args.chunks, client)
    seconds = time.perf_counter() - started
    print(f"L-BFGS-B: {result.nit} iterations, {result.nfev} full-batch gradients over {args.chunks} chunks, "
          f"{seconds:.2f} s; final loss {result.fun:.6f}")
    return {"result": result, "data": (X, y)}


if __name__ == "__main__":
    main()
