"""BLAS steps share the pool's budget of threads (codegen/parallel_blas.py, runtime/blas_serial.py):
OpenBLAS runs on one thread inside them and its count is restored after, large products are
split into units for the pool, and the bits never depend on the number of threads."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import gradtape as gt
from gradtape import codegen, runtime
from gradtape.codegen import blas, parallel_blas
from gradtape.codegen.dynamic import lower_dynamic
from gradtape.codegen.dynamic_generalize import generalize
from gradtape.codegen.parallel import BLAS_SERIAL_ENTER, PARALLEL_FOR
from gradtape.ir.optimize import optimize
from gradtape.runtime import parallel

pytestmark = pytest.mark.skipif(blas.thread_count_functions() is None, reason="no OpenBLAS in this NumPy")


@pytest.fixture(autouse=True)
def restore_settings():
    saved = parallel.threads, parallel.min_elements, blas.thread_count()
    yield
    parallel.configure(threads=saved[0], min_elements=saved[1])
    _set_blas_threads(saved[2])


def _set_blas_threads(n: int):
    ctypes.CFUNCTYPE(None, ctypes.c_int)(blas.thread_count_functions()[1])(n)


def _native(f, *args):
    cf = runtime.compile_function(gt.make_ir(f, *args))
    assert cf.native, cf.fallback_reason
    return cf


def _lowered(f, *args) -> str:
    return str(codegen.lower(gt.make_ir(f, *args), "f").module)


def _same_bits_for_any_budget(cf, args):
    """The outputs with one thread, after asserting two and three give the same bits."""
    parallel.configure(threads=1, min_elements=0)
    one = cf(*args)
    for threads in (2, 3):
        parallel.configure(threads=threads, min_elements=0)
        for a, b in zip(one, cf(*args)):
            assert np.array_equal(a, b), f"{threads} threads changed the result"
    return one


def _gmm_like(ls, xc):
    return gt.sum(gt.einsum("kij,nkj->nki", ls, xc) ** 2)


def test_batched_einsum_gradient_splits_by_batch_and_keeps_its_bits():
    rng = np.random.default_rng(0)
    ls, xc = rng.standard_normal((12, 32, 32)), rng.standard_normal((500, 12, 32))
    cf = runtime.compile_function(gt.make_ir(gt.value_and_grad(_gmm_like, argnums=(0, 1)), ls, xc))
    value, g_ls, g_xc = _same_bits_for_any_budget(cf, [ls, xc])
    lx = np.einsum("kij,nkj->nki", ls, xc)
    np.testing.assert_allclose(value, np.sum(lx ** 2), rtol=1e-13)
    np.testing.assert_allclose(g_ls, 2 * np.einsum("nki,nkj->kij", lx, xc), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(g_xc, 2 * np.einsum("kij,nki->nkj", ls, lx), rtol=1e-12, atol=1e-10)
    module = _lowered(_gmm_like, ls, xc)
    assert PARALLEL_FOR in module and BLAS_SERIAL_ENTER in module


@pytest.mark.parametrize("transposed", [False, True], ids=["rows_of_a", "columns_of_a"])
@pytest.mark.parametrize("m", [130, 255, 600])  # 2 blocks of 64 rows and 2 left over, ragged, many
def test_one_large_product_splits_by_rows_and_keeps_its_bits(m, transposed):
    rng = np.random.default_rng(m)
    a, b = rng.standard_normal((300, m) if transposed else (m, 300)), rng.standard_normal((300, 200))
    f = (lambda a, b: a.T @ b) if transposed else (lambda a, b: a @ b)
    cf = _native(f, a, b)
    (got,) = _same_bits_for_any_budget(cf, [a, b])
    np.testing.assert_allclose(got, (a.T if transposed else a) @ b, rtol=1e-12, atol=1e-12)
    assert PARALLEL_FOR in _lowered(f, a, b)


@pytest.mark.parametrize("m, calls", [(100, 1), (605, 9)], ids=["whole", "blocks_of_rows"])
def test_blas_runs_on_one_thread_inside_and_its_count_is_restored(m, calls):
    # The bits are those of one-thread gemm calls on the product's blocks of rows (row_blocks: the
    # whole product below two units), and NumPy's a[r0:r1] @ b makes the same cblas_dgemm call.
    # OpenBLAS's two-thread dgemm rounds differently at this shape, so the bits show which one ran:
    # the one-thread calls, whatever the count outside. Blocks, not the whole product: a block of
    # rows need not round as those rows of the whole product do (with OpenBLAS's AVX-512 kernels it
    # does not), so NumPy's one-thread a @ b can differ from the split product in the last bits.
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, 558)), rng.standard_normal((558, 522))
    blocks = parallel_blas.row_blocks(m, 522, 558)
    assert len(blocks) == calls

    def numpy_calls():
        return np.concatenate([a[r0:r0 + rows] @ b for r0, rows in blocks])

    _set_blas_threads(1)
    one_thread = numpy_calls()
    _set_blas_threads(2)
    if np.array_equal(one_thread, numpy_calls()):
        pytest.skip("this OpenBLAS rounds alike on one and two threads here")
    cf = _native(lambda a, b: a @ b, a, b)
    for threads in (1, 2):
        parallel.configure(threads=threads)
        assert np.array_equal(cf(a, b)[0], one_thread)
        assert blas.thread_count() == 2  # set back after the call


def test_small_products_leave_blas_alone():
    # OpenBLAS runs these on one thread anyway: no bracket, and no pool needed for them.
    a = np.zeros((30, 30))
    module = _lowered(lambda a, b: a @ b, a, a)
    assert BLAS_SERIAL_ENTER not in module and PARALLEL_FOR not in module


def test_pool_workers_run_blas_units_only_within_the_budget():
    rng = np.random.default_rng(4)
    ls, xc = rng.standard_normal((16, 32, 32)), rng.standard_normal((800, 16, 32))
    cf = _native(lambda ls, xc: gt.einsum("kij,nkj->nki", ls, xc), ls, xc)
    parallel.configure(threads=1, min_elements=0)
    before = parallel.worker_units()
    for _ in range(5):
        cf(ls, xc)
    assert parallel.worker_units() == before  # a budget of one thread: the caller alone
    parallel.configure(threads=2, min_elements=0)
    for _ in range(200):
        cf(ls, xc)
        if parallel.worker_units() > before:
            break
    assert parallel.worker_units() > before


def test_python_threads_in_blas_steps_at_once_restore_the_count():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((300, 300)), rng.standard_normal((300, 300))
    cf = _native(lambda a, b: gt.tanh(a @ b), a, b)
    _set_blas_threads(2)
    parallel.configure(threads=2, min_elements=0)
    (want,) = cf(a, b)
    errors, barrier = [], threading.Barrier(4)

    def work():
        try:
            barrier.wait(10)
            for _ in range(25):
                assert np.array_equal(cf(a, b)[0], want)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]
    assert blas.thread_count() == 2



def _rows(x, w):
    return gt.sum(gt.tanh(x @ w))  # rows of N: counted at run time


def _batch(x, w):
    return gt.sum(gt.einsum("nij,jk->nik", x, w[:40, :40]) ** 2)  # a batch of N products


@pytest.mark.parametrize("f, shape", [(_rows, (200,)), (_batch, (30, 40))], ids=["rows", "batch"])
def test_a_dynamic_version_splits_its_products_with_the_specialized_bits(f, shape):
    rng = np.random.default_rng(6)
    w = rng.standard_normal((200, 150)) / 10
    f1, f2 = (optimize(gt.make_ir(f, np.ones((n, *shape)), w)) for n in (500, 600))
    module = str(lower_dynamic(generalize(f1, 500, f2, 600).fn, "f").module)
    assert PARALLEL_FOR in module and BLAS_SERIAL_ENTER in module
    dynamic = gt.grad(f, argnums=(0, 1))
    for n in (500, 600):  # the second size makes the dynamic version
        dynamic(rng.standard_normal((n, *shape)), w)
    for n in (2, 63, 64, 129, 700, 1000):
        x = rng.standard_normal((n, *shape))
        want = gt.grad(f, argnums=(0, 1), dynamic=False)(x, w)
        for threads in (1, 2, 3):
            parallel.configure(threads=threads, min_elements=0)
            for g, h in zip(dynamic(x, w), want):
                assert np.array_equal(g, h), f"n={n}, {threads} threads"
    assert dynamic.cache_info().compiles == 2


def _narrow(x, y):
    return gt.sum(gt.tanh(x.T @ y))  # (300, N) @ (N, 2), and (300, 2) @ (2, N) in its gradient


def test_a_dynamic_version_counts_rows_per_unit_from_n_as_the_specialized_version_does():
    # A row of these products is few multiply-adds when k (or n) is N, so a specialized version's
    # unit takes several blocks of 64 rows, fewer as N grows: below N=1024 the product is left
    # whole, then two units of 128 rows, from N=2048 four of 64. The dynamic version computes
    # that count from N when it runs. It used to take 64 rows per unit whenever the count held N:
    # other calls, which round differently wherever a block of rows does not round as the whole
    # product does (OpenBLAS's AVX-512 kernels), so the bits depended on which version ran.
    blocks = {n: len(parallel_blas.row_blocks(300, 2, n)) for n in (1023, 1024, 2047, 2048)}
    assert blocks == {1023: 1, 1024: 2, 2047: 2, 2048: 4}
    rng = np.random.default_rng(7)
    dynamic = gt.grad(_narrow, argnums=(0, 1))
    for n in (500, 600):  # the second size makes the dynamic version
        dynamic(rng.standard_normal((n, 300)), rng.standard_normal((n, 2)))
    for n in (700, 1023, 1024, 1300, 2048, 2500):
        x, y = rng.standard_normal((n, 300)), rng.standard_normal((n, 2))
        want = gt.grad(_narrow, argnums=(0, 1), dynamic=False)(x, y)
        for threads in (1, 2):
            parallel.configure(threads=threads, min_elements=0)
            for g, h in zip(dynamic(x, y), want):
                assert np.array_equal(g, h), f"n={n}, {threads} threads"
    assert dynamic.cache_info().compiles == 2


_CHILD = """
import numpy as np, gradtape as gt
from gradtape import runtime
from gradtape.codegen import blas
from gradtape.runtime import parallel
rng = np.random.default_rng(0)
ls, xc = rng.standard_normal((16, 32, 32)), rng.standard_normal((800, 16, 32))
cf = runtime.compile_function(gt.make_ir(lambda ls, xc: gt.einsum("kij,nkj->nki", ls, xc), ls, xc))
parallel.configure(min_elements=0)
for _ in range(50):
    cf(ls, xc)
print(parallel.threads, parallel.worker_units(), blas.thread_count())
"""


def test_the_environment_sets_the_budget_of_blas_steps_too():
    env = dict(os.environ, GRADTAPE_THREADS="1", OPENBLAS_NUM_THREADS="2", GRADTAPE_CACHE_DIR="")
    done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    threads, worker_units, blas_threads = map(int, done.stdout.split())
    assert (threads, worker_units) == (1, 0)  # one thread: the caller ran every unit
    assert blas_threads == 2  # OpenBLAS's count, as the environment set it, after the calls
