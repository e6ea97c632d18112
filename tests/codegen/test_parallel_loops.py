"""Large loops split across threads (codegen/parallel.py, runtime/parallel*.py): the same bits
whatever the number of threads, right values against NumPy, safe under concurrent callers."""
from __future__ import annotations

import math
import os
import threading
import time

import numpy as np
import pytest

import gradtape as gt
from gradtape import codegen, ir, runtime
from gradtape.codegen.parallel import PARALLEL_FOR, UNIT_ELEMENTS
from gradtape.runtime import parallel

U = UNIT_ELEMENTS
# Around the smallest split loop (2 units), odd sizes, a last unit of one element.
SIZES = [2 * U - 1, 2 * U, 2 * U + 1, 3 * U + 7, 5 * U + 1]


@pytest.fixture(autouse=True)
def restore_settings():
    saved = parallel.threads, parallel.min_elements
    yield
    parallel.configure(threads=saved[0], min_elements=saved[1])


def _native(f, *args):
    cf = runtime.compile_function(gt.make_ir(f, *args))
    assert cf.native, cf.fallback_reason
    return cf


def _with_threads(cf, args, threads: int):
    """cf's outputs with `threads` threads and every loop worth splitting."""
    parallel.configure(threads=threads, min_elements=0)
    return cf(*args)


def _identical(cf, args):
    """Outputs with one thread, after asserting two and three threads give the same bits."""
    one = _with_threads(cf, args, 1)
    for threads in (2, 3):
        for a, b in zip(one, _with_threads(cf, args, threads)):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.array_equal(a, b, equal_nan=True), f"{threads} threads changed the result"
    return one


def _split(fn) -> bool:
    return PARALLEL_FOR in str(codegen.lower(fn, "f").module)


def _rosen_grad(x):
    return gt.grad(lambda x: gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


@pytest.mark.parametrize("n", SIZES)
def test_elementwise_flat_loop_same_bits_as_one_thread(n):
    x = np.random.default_rng(n).uniform(-2, 2, n)
    f = lambda x: gt.tanh(x) * gt.exp(-x * x) + 3.0 * x  # noqa: E731
    cf = _native(f, x)
    (got,) = _identical(cf, [x])
    np.testing.assert_allclose(got, np.tanh(x) * np.exp(-x * x) + 3.0 * x, rtol=1e-14, atol=1e-15)
    assert _split(gt.make_ir(f, x)) == (n >= 2 * U)


@pytest.mark.parametrize("n", SIZES)
def test_shifted_slices_gradient_same_bits_as_one_thread(n):
    # The Rosenbrock gradient: unslices make a loop cut in pieces at their edges (not flat).
    x = np.random.default_rng(n).uniform(-1, 1, n)
    fn, _ = ir.vjp(gt.make_ir(lambda x: gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2), x), [0])
    cf = runtime.compile_function(fn)
    value, grad = _identical(cf, [x, np.array(1.0)])
    a, b = x[:-1], x[1:]
    d = b - a * a
    want = np.zeros_like(x)
    want[:-1] = -400.0 * d * a - 2.0 * (1.0 - a)
    want[1:] += 200.0 * d
    np.testing.assert_allclose(grad, want, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(value, math.fsum(100.0 * d * d + (1.0 - a) ** 2), rtol=1e-13)


def test_rows_of_a_matrix_with_a_transpose_same_bits():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(301, 257)), rng.normal(size=(257, 301))
    f = lambda a, b: gt.sin(a) * b.T + gt.pad(a[1:, :], ((0, 1), (0, 0)))  # noqa: E731
    cf = _native(f, a, b)
    (got,) = _identical(cf, [a, b])
    np.testing.assert_allclose(got, np.sin(a) * b.T + np.pad(a[1:, :], ((0, 1), (0, 0))), rtol=1e-13, atol=1e-14)
    assert _split(gt.make_ir(f, a, b))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sum_adds_fixed_units_in_order(n, dtype):
    x = np.random.default_rng(n).uniform(0, 1, n).astype(dtype)
    cf = _native(lambda x: gt.sum(x * x), x)
    (got,) = _identical(cf, [x])
    assert got.dtype == dtype
    want = math.fsum((x * x).astype(np.float64))  # the squares in x's dtype, summed exactly
    np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == np.float64 else 1e-6)


@pytest.mark.parametrize("kind", ["max", "min", "prod"])
def test_other_reductions_same_bits(kind):
    n = 3 * U + 5
    x = np.random.default_rng(7).uniform(0.999, 1.001, n)
    x[2 * U + 3] = 1.5 if kind != "min" else 0.5
    f = {"max": gt.max, "min": gt.min, "prod": gt.prod}[kind]
    cf = _native(lambda x: f(x), x)
    (got,) = _identical(cf, [x])
    want = {"max": np.max, "min": np.min, "prod": np.prod}[kind](x)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_max_propagates_nan_from_any_unit():
    x = np.random.default_rng(2).normal(size=4 * U)
    x[3 * U + 11] = np.nan
    (got,) = _identical(_native(lambda x: gt.max(x), x), [x])
    assert np.isnan(got)


def test_integer_sum_is_exact():
    x = np.random.default_rng(3).integers(-1000, 1000, 3 * U + 1).astype(np.int64)
    (got,) = _identical(_native(lambda x: gt.sum(x), x), [x])
    assert int(got) == int(x.sum())


def test_sum_of_a_matrix_read_through_a_transpose():
    x = np.random.default_rng(4).normal(size=(400, 300))
    f = lambda x: gt.sum(gt.exp(x.T) * gt.pad(x[:, 1:], ((0, 0), (1, 0))).T)  # noqa: E731
    cf = _native(f, x)
    (got,) = _identical(cf, [x])
    np.testing.assert_allclose(got, math.fsum((np.exp(x.T) * np.pad(x[:, 1:], ((0, 0), (1, 0))).T).ravel()),
                               rtol=1e-12)


def test_workers_take_part():
    """With two threads, the worker runs some units (within a generous time on a busy machine)."""
    x = np.random.default_rng(5).normal(size=64 * U)
    cf = _native(lambda x: gt.sin(x) * gt.cos(x) + gt.tanh(x), x)
    parallel.configure(threads=2, min_elements=0)
    before = parallel.worker_units()
    deadline = time.monotonic() + 30
    while parallel.worker_units() == before and time.monotonic() < deadline:
        cf(x)
    assert parallel.worker_units() > before


def test_below_min_elements_the_caller_runs_alone():
    x = np.random.default_rng(6).normal(size=4 * U)
    cf = _native(lambda x: gt.sin(x) * 2.0, x)
    parallel.configure(threads=2, min_elements=10**12)
    before = parallel.worker_units()
    for _ in range(20):
        (got,) = cf(x)
    assert parallel.worker_units() == before
    np.testing.assert_allclose(got, np.sin(x) * 2.0, rtol=1e-14, atol=1e-15)


def test_python_threads_calling_one_function_at_once():
    n = 6 * U + 3
    f = lambda x: gt.sum(gt.tanh(x) * x), lambda x: gt.tanh(x) * x + 1.0  # noqa: E731
    inputs = [np.random.default_rng(s).normal(size=n) for s in range(6)]
    cf_sum, cf_map = (_native(g, inputs[0]) for g in f)
    parallel.configure(threads=1)
    want = [(cf_sum(x)[0], cf_map(x)[0]) for x in inputs]
    parallel.configure(threads=2, min_elements=0)
    errors, barrier = [], threading.Barrier(len(inputs))

    def work(i):
        try:
            barrier.wait(10)
            for _ in range(30):
                s, m = cf_sum(inputs[i])[0], cf_map(inputs[i])[0]
                assert s == want[i][0] and np.array_equal(m, want[i][1])
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]


def test_export_without_runtime_leaves_loops_whole():
    x = np.zeros(4 * U)
    fn = gt.make_ir(lambda x: gt.sum(gt.sin(x)), x)
    assert PARALLEL_FOR in str(codegen.lower(fn, "f").module)
    assert PARALLEL_FOR not in str(codegen.lower(fn, "f", blas=False).module)


@pytest.mark.parametrize("bad", [0, 65, 1.5, True])
def test_configure_rejects_bad_thread_counts(bad):
    with pytest.raises(ValueError, match=r"threads must be an int from 1 to 64 .* got"):
        parallel.configure(threads=bad)


def test_default_threads_are_the_available_cpus():
    parallel.configure(threads=None)
    assert parallel.threads == min(64, len(os.sched_getaffinity(0)))


@pytest.mark.parametrize("shape,axis", [((3000, 37), -1), ((64, 9, 301), (1, 2)), ((257, 2, 129), -1)])
def test_reductions_of_trailing_axes_split_by_rows(shape, axis):
    x = np.random.default_rng(8).normal(size=shape)
    f = lambda x: gt.sum(gt.exp(x) * x, axis=axis) + gt.max(x[..., ::-1] + 1.0, axis=axis)  # noqa: E731
    cf = _native(f, x)
    (got,) = _identical(cf, [x])
    np.testing.assert_allclose(got, np.sum(np.exp(x) * x, axis=axis) + np.max(x[..., ::-1] + 1.0, axis=axis),
                               rtol=1e-13, atol=1e-13)
    assert _split(gt.make_ir(f, x))


def test_sum_over_a_leading_axis_is_split_and_right():
    # Units of rows into partial sums (codegen/parallel_leading.py); more in test_parallel_reductions.py.
    x = np.random.default_rng(9).normal(size=(3000, 40))
    f = lambda x: gt.sum(x * x, axis=0)  # noqa: E731
    (got,) = _identical(_native(f, x), [x])
    np.testing.assert_allclose(got, np.sum(x * x, axis=0), rtol=1e-13)
    assert _split(gt.make_ir(f, x))


def _child_result(cf, x, conn):
    try:
        deadline, before = time.monotonic() + 30, parallel.worker_units()
        while True:
            (got,) = cf(x)
            if parallel.worker_units() > before or time.monotonic() > deadline:
                break
        conn.send((got, parallel.worker_units() > before))
    finally:
        conn.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")  # Python 3.12+: forking on purpose
def test_a_forked_child_starts_its_own_workers():
    import multiprocessing

    x = np.random.default_rng(10).normal(size=64 * U)
    cf = _native(lambda x: gt.sin(x) * gt.cos(x) + gt.tanh(x), x)
    (want,) = _with_threads(cf, [x], 2)  # the parent's pool is running
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_child_result, args=(cf, x, child))
    p.start()
    got, workers_helped = parent.recv()
    p.join(60)
    assert p.exitcode == 0
    assert np.array_equal(got, want) and workers_helped


def test_a_bad_thread_count_in_the_environment_is_named():
    import subprocess
    import sys

    env = dict(os.environ, GRADTAPE_THREADS="0")
    run = subprocess.run([sys.executable, "-c", "import gradtape"], env=env, capture_output=True, text=True)
    assert run.returncode != 0
    assert "GRADTAPE_THREADS must be an int from 1 to 64 (or unset for the default" in run.stderr
