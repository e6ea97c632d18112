"""runtime/alloc.py: large outputs come from buffers that arrays give back when they die.

What must hold: values are right whichever buffer a result lands in; a buffer is
never handed out while any array (a result, a view of it, an array made from its
memory) can reach it, nor while it is an input of the call; freed buffers are kept
up to max_bytes and truly unmapped when dropped.
"""
import gc
import os
import threading
import types

import numpy as np
import pytest

import gradtape as gt
from gradtape.runtime import alloc

from ..codegen.parallel_helpers import rosen_numpy

N = 700_000  # 5.6 MB of float64: above the default min_bytes (4 MiB)


@pytest.fixture(autouse=True)
def fresh_pool():
    alloc.configure(min_bytes=None, max_bytes=None)
    alloc.release()
    yield
    alloc.configure(min_bytes=None, max_bytes=None)
    alloc.release()


def _rosen_grad_reference(x):
    return rosen_numpy(x)[1]


def _compiled_grad():
    g = gt.grad(lambda x: gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))
    x = np.linspace(-1.0, 1.0, N)
    g(x)
    gt.runtime.wait_for_compiles()
    g(x)
    return g


def _inputs(k):
    return np.random.default_rng(k).uniform(-1.5, 1.5, N)


def test_results_of_freed_calls_reuse_buffers_and_stay_right():
    g = _compiled_grad()
    before = alloc.stats()["reused"]
    for k in range(5):
        x = _inputs(k)
        np.testing.assert_allclose(g(x), _rosen_grad_reference(x), rtol=1e-13, atol=1e-12)
    assert alloc.stats()["reused"] >= before + 4  # each call after the first wrote where the last one did


def test_a_live_result_or_view_is_never_written_by_a_later_call():
    g = _compiled_grad()
    x0, x1 = _inputs(10), _inputs(11)
    kept = g(x0)
    view = g(x0)[5:-5]                    # the result itself is gone, its view holds the buffer
    raw = memoryview(g(x0))               # so does a memoryview of another
    wrapped = np.frombuffer(g(x0), np.float64)
    want0 = _rosen_grad_reference(x0)
    for _ in range(4):
        new = g(x1)
        for old in (kept, view, np.asarray(raw), wrapped):
            assert not np.shares_memory(new, old)
        np.testing.assert_allclose(new, _rosen_grad_reference(x1), rtol=1e-13, atol=1e-12)
        del new
    np.testing.assert_allclose(kept, want0, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(view, want0[5:-5], rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(np.asarray(raw), want0, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(wrapped, want0, rtol=1e-13, atol=1e-12)


def test_a_result_passed_back_as_the_input_is_not_the_output():
    f = gt.differentiable(lambda x: gt.sin(x) * 2.0 + x)
    x = _inputs(20)
    f(x)
    gt.runtime.wait_for_compiles()
    y = x
    for k in range(4):  # each input is the previous pooled result, or a view of it
        want = np.sin(y) * 2.0 + y
        z = f(y)
        assert not np.shares_memory(z, y)
        np.testing.assert_allclose(z, want, rtol=1e-14)
        y = z if k % 2 else z[:]


def test_concurrent_calls_get_disjoint_right_results():
    g = _compiled_grad()
    errors, results = [], {}

    def work(k):
        try:
            x = _inputs(100 + k)
            for _ in range(6):
                r = g(x)
                np.testing.assert_allclose(r, _rosen_grad_reference(x), rtol=1e-13, atol=1e-12)
            results[k] = r
        except Exception as e:  # reported below: an assertion in a thread would be lost
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    kept = list(results.values())
    assert len(kept) == 3
    assert not any(np.shares_memory(a, b) for i, a in enumerate(kept) for b in kept[i + 1:])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_, np.complex128])
def test_empty_makes_ordinary_writeable_arrays(dtype):
    shape = (3, (5 << 20) // np.dtype(dtype).itemsize // 3 + 1)
    a = alloc.empty(shape, dtype)
    assert a.shape == shape and a.dtype == dtype and type(a) is np.ndarray
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned and not a.flags.owndata
    a[...] = np.ones(shape, dtype)
    assert a.sum() == np.prod(shape)
    small = alloc.empty((10,), dtype)
    assert small.flags.owndata  # below min_bytes: plain np.empty


def test_freed_buffers_are_kept_up_to_max_bytes_least_recent_size_first():
    mib = 1 << 20
    alloc.configure(max_bytes=16 * mib)
    a, b, c = (alloc.empty((n * mib,), np.uint8) for n in (5, 6, 7))  # buffers of 6, 6 and 8 MiB
    del a
    assert alloc.stats()["free_bytes"] == 6 * mib
    del b
    assert alloc.stats()["free_bytes"] == 12 * mib
    del c  # 8 more MiB do not fit in 16: one buffer of the size freed least recently (6 MiB) goes
    assert alloc.stats()["free_bytes"] == 14 * mib and alloc.stats()["free_buffers"] == 2
    d = alloc.empty((7 * mib,), np.uint8)  # takes the 8 MiB buffer
    assert alloc.stats()["free_bytes"] == 6 * mib
    del d
    alloc.configure(max_bytes=0)  # off: what it kept is freed, nothing more is kept
    assert alloc.stats()["free_bytes"] == 0
    e = alloc.empty((5 * mib,), np.uint8)
    assert e.flags.owndata
    del e
    assert alloc.stats()["free_bytes"] == 0


def _mapped(address: int) -> bool:
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
            if lo <= address < hi:
                return True
    return False


@pytest.mark.skipif(not os.path.exists("/proc/self/maps") or not hasattr(alloc.mmap, "MADV_HUGEPAGE"),
                    reason="reads the process's mappings (Linux)")
def test_released_buffers_are_unmapped():
    a = alloc.empty((5 << 20,), np.uint8)
    address = a.ctypes.data
    a[:] = 1
    del a
    assert _mapped(address) and alloc.stats()["free_buffers"] == 1
    alloc.release()
    gc.collect()
    assert alloc.stats()["free_buffers"] == 0
    assert not _mapped(address)


def test_a_buffer_freed_while_the_pool_is_busy_is_dropped_not_waited_for():
    a = alloc.empty((5 << 20,), np.uint8)
    with alloc._lock:  # as when a garbage collection inside the pool's own code frees an array
        del a
    assert alloc.stats()["free_buffers"] == 0


def test_without_madvise_buffers_come_from_numpy(monkeypatch):
    monkeypatch.setattr(alloc, "mmap", types.SimpleNamespace())
    a = alloc.empty((700_000,), np.float64)
    a[:] = np.arange(700_000.0)
    address = a.ctypes.data
    assert address % alloc.HUGE_PAGE == 0
    del a
    b = alloc.empty((700_000,), np.float64)
    assert b.ctypes.data == address


def test_configure_refuses_what_is_not_a_byte_count():
    with pytest.raises(ValueError, match=r"alloc.configure: max_bytes must be a non-negative int .*got -1"):
        alloc.configure(max_bytes=-1)
    with pytest.raises(ValueError, match=r"alloc.configure: min_bytes must be a non-negative int .*got '4M'"):
        alloc.configure(min_bytes="4M")
    alloc.configure(min_bytes=0)
    assert alloc.min_bytes == alloc.POOL_FLOOR


def test_settings_come_from_the_environment():
    import subprocess
    import sys
    code = "from gradtape.runtime import alloc; print(alloc.min_bytes, alloc.max_bytes)"
    env = dict(os.environ, GRADTAPE_POOL_MIN_BYTES="8388608", GRADTAPE_POOL_MAX_BYTES="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["8388608", "0"]
    env["GRADTAPE_POOL_MAX_BYTES"] = "lots"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "GRADTAPE_POOL_MAX_BYTES must be an integer, got 'lots'; unset it for the default" in out.stderr


def test_a_buffer_that_cannot_be_mapped_is_a_memory_error_with_its_size():
    """mmap says OSError(ENOMEM); callers of a compiled function catch MemoryError, as np.empty raises.
    256 TiB is more than x86-64's user address space: no machine maps it."""
    with pytest.raises(MemoryError, match=r"^Unable to allocate 256 TiB for an array with shape "
                                          r"\(35184372088832,\) and data type float64$"):
        alloc.empty((1 << 45,), np.float64)
    np.testing.assert_array_equal(alloc.empty((N,), np.float64).shape, (N,))  # and the pool goes on


def test_a_scratch_arena_that_cannot_be_allocated_is_a_memory_error_naming_it():
    from gradtape.runtime import arena
    with pytest.raises(MemoryError, match=r"^compiled code: unable to allocate its scratch arena of "
                                          r"281,474,976,710,656 bytes \(the intermediates of one call\)"):
        arena.thread_arena(1 << 48)
    assert arena.thread_arena(5000).size >= 5000 and arena.thread_arena(5000).ctypes.data % 64 == 0
