"""gradtape.dask: a compiled value_and_grad mapped over the chunks of a dask array on a LocalCluster
of worker processes, reduced to the full-batch value and gradient."""
from __future__ import annotations

import numpy as np
import pytest

dask_array = pytest.importorskip("dask.array", reason="gradtape.dask needs the optional extra gradtape[dask]")
distributed = pytest.importorskip("distributed")

import gradtape as gt  # noqa: E402
import gradtape.dask as gtd  # noqa: E402

from . import functions as fx  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


def _data(m=800, n=5, seed=7):
    w, X, y = fx.data(seed, m, n)
    return w, X, y


def test_full_batch_gradient_over_8_chunks_on_2_worker_processes(client):
    w, X, y = _data()
    Xd, yd = dask_array.from_array(X, chunks=(100, 5)), dask_array.from_array(y, chunks=100)
    assert Xd.numblocks == (8, 1)
    value, grad = gtd.value_and_grad(gt.value_and_grad(fx.logistic_sum), w, Xd, yd, reduce="sum", client=client)
    one_value, one_grad = gt.value_and_grad(fx.logistic_sum)(w, X, y)
    np.testing.assert_allclose(grad, one_grad, rtol=1e-12)
    np.testing.assert_allclose(value, one_value, rtol=1e-12)
    np.testing.assert_allclose(grad, fx.logistic_grad_np(w, X, y) * len(y), rtol=1e-12)
    # Each worker process ran the machine code compiled here: it compiled nothing itself.
    compiles = client.run(lambda: gt.runtime.cache_info()["compiles"])
    assert len(compiles) == 2 and set(compiles.values()) == {0}


def test_mean_weights_uneven_chunks_by_their_rows(client):
    w, X, y = _data(730, 3, 8)
    Xd, yd = dask_array.from_array(X, chunks=(100, 3)), dask_array.from_array(y, chunks=100)  # last chunk: 30 rows
    value, grad = gtd.value_and_grad(gt.value_and_grad(fx.logistic_loss), w, Xd, yd, reduce="mean", client=client)
    np.testing.assert_allclose(grad, fx.logistic_grad_np(w, X, y), rtol=1e-12)
    z = X @ w
    np.testing.assert_allclose(value, np.mean(np.logaddexp(0.0, z) - y * z), rtol=1e-12)


def test_lists_of_shards_and_the_local_scheduler():
    w, X, y = _data(90, 3, 9)
    value, grad = gtd.value_and_grad(gt.value_and_grad(fx.logistic_sum), w, np.array_split(X, 3),
                                     np.array_split(y, 3))
    np.testing.assert_allclose(grad, fx.logistic_grad_np(w, X, y) * len(y), rtol=1e-12)


def test_minimize_with_lbfgs_over_a_dask_array(client):
    pytest.importorskip("scipy")
    w, X, y = _data(400, 3, 10)
    Xd, yd = dask_array.from_array(X, chunks=(100, 3)).persist(), dask_array.from_array(y, chunks=100).persist()
    result = gtd.minimize(gt.value_and_grad(fx.logistic_loss), np.zeros(3), Xd, yd, client=client,
                          options={"gtol": 1e-10, "ftol": 1e-15})
    assert result.success
    w_newton = np.zeros(3)  # the independent reference: Newton's method (IRLS) in NumPy
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-X @ w_newton))
        w_newton -= np.linalg.solve(X.T @ (X * (p * (1 - p))[:, None]), X.T @ (p - y))
    np.testing.assert_allclose(result.x, w_newton, atol=1e-6)


def test_errors_name_the_fix():
    w, X, y = _data(40, 3, 1)
    vg = gt.value_and_grad(fx.logistic_sum)
    with pytest.raises(ValueError, match="reduce must be 'sum' or 'mean', got 'max'"):
        gtd.value_and_grad(vg, w, [X], [y], reduce="max")
    with pytest.raises(ValueError, match=r"data 1 has row chunks \(20, 20\), data 0 has \(10, 10, 10, 10\); rechunk"):
        gtd.value_and_grad(vg, w, dask_array.from_array(X, chunks=(10, 3)), dask_array.from_array(y, chunks=20))
    with pytest.raises(TypeError, match="expected dask arrays or lists of arrays"):
        gtd.value_and_grad(vg, w, X, y)
