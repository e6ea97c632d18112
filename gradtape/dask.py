"""Data-parallel gradients on Dask: a compiled value_and_grad mapped over chunks, then reduced.

    import gradtape.dask as gtd
    vg = gradtape.value_and_grad(loss)                  # loss(w, X, y): a top-level function
    value, grad = gtd.value_and_grad(vg, w, X, y)       # X, y: dask arrays chunked along rows
    result = gtd.minimize(vg, w0, X, y)                 # L-BFGS-B (SciPy), one Dask map-reduce per step

Needs Dask (`pip install gradtape[dask]`). Each chunk's call is one Dask task
running the compiled function on that chunk's rows; the values and gradients
are then reduced by a sum, or by a mean weighted by each chunk's rows (the
full-batch mean of a loss that is a mean over its rows). The function
travels to the workers pickled, with its machine code (gradtape's pickling:
a worker neither traces nor compiles a signature the caller has run). The
tasks run wherever Dask's scheduler sends them: the default client (a
`dask.distributed.Client` made before, on a LocalCluster or a scheduler's
address) or, without one, Dask's local scheduler.
"""
from __future__ import annotations

import weakref

import numpy as np

try:
    import dask
    import dask.array as da
    from dask.delayed import Delayed
except ImportError as e:  # pragma: no cover - the message is the test
    raise ImportError("gradtape.dask needs Dask: pip install 'gradtape[dask]' (or pip install 'dask[distributed]')"
                      ) from e

from .aot import ShapeDtype, compile as compile_ahead
from .staging import StagedFunction
from .tracer import tree

__all__ = ["value_and_grad", "minimize", "shards"]

_REDUCTIONS = ("sum", "mean")
# staged function -> {chunk types: its compiled form as a Dask delayed}: compiled and pickled once,
# not at every evaluation of a minimization
_ahead: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# names of dask arrays -> their shards (see _dask_shards), the most recent few
_blocks: dict = {}
_BLOCKS_KEPT = 8
# (client id, block keys) -> the blocks as futures on that client, the most recent few
_futures: dict = {}
# client id -> {compiled function: its future on that client's workers}
_sent: dict = {}


def shards(*data) -> list:
    """The per-task pieces of `data`: one tuple of arrays (or Dask delayed blocks) per chunk.

    Args:
        *data: dask arrays with the same chunks along axis 0 (other axes are
            joined into one chunk), or lists of NumPy arrays (one per shard,
            the same number in each list).

    Returns:
        A list of `(rows, pieces, specs)`: the chunk's number of rows, its arrays (or delayed
        blocks) and their gradtape.ShapeDtype.

    Raises:
        ValueError: no data, chunks that do not line up, or lists of different lengths.
        TypeError: something that is neither a dask array nor a list of arrays.
    """
    if not data:
        raise ValueError("gradtape.dask: pass the data to map over (dask arrays or lists of shards)")
    if all(isinstance(d, da.Array) for d in data):
        return _dask_shards(data)
    if all(isinstance(d, (list, tuple)) for d in data):
        counts = {len(d) for d in data}
        if len(counts) != 1:
            raise ValueError(f"gradtape.dask: the lists of shards have different lengths {sorted(counts)}; "
                             "pass one shard per chunk in each")
        return [(int(np.shape(pieces[0])[0]) if np.ndim(pieces[0]) else 1, tuple(pieces),
                 tuple(ShapeDtype(np.shape(p), np.asarray(p).dtype) for p in pieces)) for pieces in zip(*data)]
    kinds = ", ".join(type(d).__name__ for d in data)
    raise TypeError(f"gradtape.dask: expected dask arrays or lists of arrays (shards), got {kinds}")


def _dask_shards(arrays) -> list:
    """The shards of dask arrays, made once for the same arrays (a Dask name is a token of
    contents and graph): each is a Delayed over a plain dict graph."""
    key = tuple(a.name for a in arrays)
    cached = _blocks.get(key)
    if cached is None:
        cached = _blocks[key] = _materialized_shards(arrays)
        while len(_blocks) > _BLOCKS_KEPT:
            _blocks.pop(next(iter(_blocks)))
    return cached


def _materialized_shards(arrays) -> list:
    rows = arrays[0].chunks[0]
    for k, a in enumerate(arrays[1:], 1):
        if a.chunks[0] != rows:
            raise ValueError(f"gradtape.dask: data {k} has row chunks {a.chunks[0]}, data 0 has {rows}; "
                             "rechunk them alike (x.rechunk({0: data0.chunks[0]}))")
    blocks = []
    for a in arrays:
        whole = a.rechunk({axis: -1 for axis in range(1, a.ndim)}) if a.ndim > 1 else a
        blocks.append(whole.to_delayed().reshape(-1))
    out = []
    for i, n in enumerate(rows):
        specs = tuple(ShapeDtype((int(n),) + tuple(a.shape[1:]), a.dtype) for a in arrays)
        out.append((int(n), tuple(b[i] for b in blocks), specs))
    return out


def _compiled(fun, params, pieces) -> list:
    """Per chunk, what its task calls: for a staged function, the function compiled here ahead of
    time for that chunk's shapes (once per distinct shape), which the workers receive with its
    machine code and run without tracing or compiling; any other callable as it is."""
    if not isinstance(fun, StagedFunction):
        return [fun] * len(pieces)
    by_shape = _ahead.setdefault(fun, {})
    params_key = tuple((np.shape(p), np.asarray(p).dtype) for p in tree.flatten(params))
    out = []
    for _, _, specs in pieces:
        key = (params_key,) + tuple((s.shape, np.dtype(s.dtype)) for s in specs)
        if key not in by_shape:
            by_shape[key] = compile_ahead(fun, params, *specs)
        out.append(by_shape[key])
    return out


def _call(fun, params, *pieces):
    value, grads = fun(params, *pieces)
    return np.asarray(value), tree.flatten(grads), tree.unflatten(grads, [None] * len(tree.flatten(grads)))


def _reduce(results, weights, how):
    """Sum (or the weighted mean) of per-chunk (value, flat gradients, structure)."""
    total = sum(weights)
    scale = [w / total for w in weights] if how == "mean" else [1.0] * len(weights)
    value = sum(s * np.asarray(r[0]) for s, r in zip(scale, results))
    grads = [sum(s * np.asarray(r[1][k]) for s, r in zip(scale, results)) for k in range(len(results[0][1]))]
    return value, tree.unflatten(results[0][2], grads)


def value_and_grad(fun, params, *data, reduce: str = "sum", client=None):
    """The value and gradient of `fun` over all chunks of `data`, computed by Dask.

    Args:
        fun: `fun(params, *chunk) -> (value, gradient)`, e.g. gradtape.value_and_grad(loss) of a
            function defined at the top level of a module (it is pickled to the workers).
        params: the parameters (an array, or lists/tuples/dicts of arrays), sent to every task.
        *data: dask arrays chunked along axis 0 alike, or lists of shards (see `shards`).
        reduce: "sum" (the sum over chunks: for a loss that sums over rows) or "mean" (the mean
            weighted by each chunk's rows: for a loss that is a mean over rows).
        client: a dask.distributed.Client to run on (default: Dask's current scheduler).

    Returns:
        `(value, gradient)`: NumPy arrays, the gradient in params' structure.

    Raises:
        ValueError: an unknown `reduce`, or data as `shards` says.

    Example:
        >>> import dask.array as da
        >>> import gradtape.dask
        >>> def mean_logistic_loss(w, X, y):
        ...     z = X @ w
        ...     return gradtape.mean(gradtape.softplus(z) - y * z)
        >>> X = da.from_array(np.ones((8, 2)), chunks=(4, 2))   # two chunks of 4 rows
        >>> y = da.from_array(np.ones(8), chunks=4)
        >>> vg = gradtape.value_and_grad(mean_logistic_loss)
        >>> value, grad = gradtape.dask.value_and_grad(vg, np.zeros(2), X, y, reduce="mean")
        >>> round(float(value), 6), grad   # log 2, and (sigmoid(0) - 1) * 1 per column
        (0.693147, array([-0.5, -0.5]))
    """
    if reduce not in _REDUCTIONS:
        raise ValueError(f"gradtape.dask.value_and_grad: reduce must be 'sum' or 'mean', got {reduce!r}")
    pieces = shards(*data)
    fns = _compiled(fun, params, pieces)
    weights = [n for n, _, _ in pieces]
    client = client if client is not None else _scheduler_client()
    if client is not None:
        return _on_client(client, fns, params, pieces, weights, reduce)
    results = [dask.delayed(_call, pure=True)(f, params, *p) for f, (_, p, _) in zip(fns, pieces)]
    return dask.compute(dask.delayed(_reduce, pure=True)(results, weights, reduce))[0]


def _on_client(client, fns, params, pieces, weights, how):
    """The map-reduce as futures of a dask.distributed Client: a `submit` per chunk costs far less
    than a `dask.delayed` call, which Dask optimizes one by one (about 20 ms per evaluation of
    a minimization). The chunks' blocks become futures once per client and data."""
    blocks = _block_futures(client, pieces)
    fns = _function_futures(client, fns)
    calls = [client.submit(_call, f, params, *b, pure=False) for f, b in zip(fns, blocks)]
    return client.submit(_reduce, calls, weights, how, pure=False).result()


def _block_futures(client, pieces) -> list:
    if not any(isinstance(x, Delayed) for _, p, _ in pieces for x in p):
        return [p for _, p, _ in pieces]  # lists of arrays: sent with their tasks
    key = (client.id,) + tuple(x.key for _, p, _ in pieces for x in p)
    cached = _futures.get(key)
    if cached is None:
        flat = client.compute([x for _, p, _ in pieces for x in p])
        it = iter(flat)
        cached = _futures[key] = [tuple(next(it) for _ in p) for _, p, _ in pieces]
        while len(_futures) > _BLOCKS_KEPT:
            _futures.pop(next(iter(_futures)))
    return cached


def _function_futures(client, fns) -> list:
    """The compiled functions, each sent to every worker once per client: loading one (its
    machine code checked and linked) takes about 25 ms, which a task must not pay each time."""
    sent = _sent.setdefault(client.id, weakref.WeakKeyDictionary())
    out = []
    for f in fns:
        try:
            future = sent.get(f)
        except TypeError:  # not weak-referenceable: sent with each task
            out.append(f)
            continue
        if future is None:
            future = sent[f] = client.scatter(f, broadcast=True, hash=False)
        out.append(future)
    return out


def _scheduler_client():
    """The dask.distributed Client that Dask's current scheduler is, if it is one."""
    scheduler = dask.base.get_scheduler()
    owner = getattr(scheduler, "__self__", None)
    return owner if type(owner).__name__ == "Client" and hasattr(owner, "submit") else None


def minimize(fun, x0, *data, reduce: str = "mean", client=None, method: str = "L-BFGS-B", **options):
    """Minimize over a dataset held by Dask: SciPy's minimizer, each evaluation one Dask map-reduce.

    Args:
        fun: `fun(x, *chunk) -> (value, gradient)` for a 1-D float64 array x (value_and_grad of a
            top-level function).
        x0: the starting point (1-D).
        *data, reduce, client: as in `value_and_grad`. Persist dask arrays first
            (`X = X.persist()`) so that each evaluation does not recompute them.
        method: a gradient-based method of scipy.optimize.minimize (default L-BFGS-B).
        **options: passed to scipy.optimize.minimize (tol, options={"maxiter": ...}, ...).

    Returns:
        scipy.optimize.OptimizeResult.

    Raises:
        ImportError: SciPy is not installed.

    Example:
        >>> import dask.array as da
        >>> import gradtape.dask
        >>> def loss(w, X, y):
        ...     return gradtape.mean((X @ w - y) ** 2)
        >>> X = np.random.default_rng(0).normal(size=(40, 3))
        >>> y = X @ np.array([1.0, -2.0, 0.5])
        >>> Xd, yd = da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10)
        >>> result = gradtape.dask.minimize(gradtape.value_and_grad(loss), np.zeros(3), Xd, yd)
        >>> result.x.round(4)
        array([ 1. , -2. ,  0.5])
    """
    from scipy import optimize  # optional dependency

    def objective(x):
        value, grad = value_and_grad(fun, x, *data, reduce=reduce, client=client)
        return float(value), np.asarray(grad, dtype=np.float64)

    return optimize.minimize(objective, np.asarray(x0, dtype=np.float64), jac=True, method=method, **options)
