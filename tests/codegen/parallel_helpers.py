"""Shared by the tests of split loops: the pool's settings restored after each test, results
checked to be the same bits for 1, 2 and 3 threads, and W2's objective with its NumPy reference."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.runtime import parallel


@pytest.fixture(autouse=True)
def restore_settings():
    """(autouse where imported) the pool's thread count and threshold as they were."""
    saved = parallel.threads, parallel.min_elements
    yield
    parallel.configure(threads=saved[0], min_elements=saved[1])


def same_bits_for_any_thread_count(f, *args) -> list:
    """f(*args)'s results (a list of arrays) with 1 thread, after asserting that 2 and 3 threads,
    with every loop worth splitting, give the same bits."""
    results = []
    for threads in (1, 2, 3):
        parallel.configure(threads=threads, min_elements=0)
        out = f(*args)
        results.append([np.asarray(r) for r in (out if isinstance(out, tuple) else [out])])
    for threads, got in zip((2, 3), results[1:]):
        for a, b in zip(results[0], got):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.array_equal(a, b, equal_nan=True), f"{threads} threads changed the result"
    return results[0]


def rosen(x):
    return gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_numpy(x):
    """(value, gradient) of rosen."""
    a, b = x[:-1], x[1:]
    d = b - a * a
    g = np.zeros_like(x)
    g[:-1] = -400.0 * d * a - 2.0 * (1.0 - a)
    g[1:] += 200.0 * d
    return np.sum(100.0 * d * d + (1.0 - a) ** 2), g
