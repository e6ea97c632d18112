"""Many threads calling compiled functions at once get right answers (per-thread arenas, GIL release)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from gradtape import runtime
from gradtape.runtime import arena, config

from .samples import chain_fn, chain_reference

THREADS = 8
CALLS = 50


def _hammer(cf, shape):
    """Each thread calls cf with its own inputs, fresh and out=, and checks every answer."""
    errors = []
    barrier = threading.Barrier(THREADS)

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            a, b = rng.standard_normal((2, *shape))
            want = chain_reference(a, b)
            out = [np.empty(shape), np.empty(shape)]
            barrier.wait(10)
            for k in range(CALLS):
                got = cf(a, b) if k % 2 else cf(a, b, out=out)
                for g, w in zip(got, want):
                    np.testing.assert_allclose(g, w, rtol=1e-15)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[0]


@pytest.mark.parametrize("release_gil", [False, True], ids=["gil_held", "gil_released"])
def test_eight_threads_calling_at_once(handmade, monkeypatch, release_gil):
    monkeypatch.setattr(config, "release_gil_bytes", 0 if release_gil else 1 << 62)
    shape = (64, 33)
    cf = runtime.compile_function(chain_fn(shape))
    assert cf.native and cf.arena_bytes > 0 and cf._native.release_gil == release_gil
    _hammer(cf, shape)


def test_eight_threads_on_the_ctypes_path(handmade, monkeypatch):
    monkeypatch.setattr(config, "fast_call", False)
    cf = runtime.compile_function(chain_fn((16, 5)))
    _hammer(cf, (16, 5))


def test_thread_arenas_are_aligned_grown_and_private():
    seen = {}

    def work(name):
        small = arena.thread_arena(100)
        big = arena.thread_arena(10_000)
        seen[name] = (small, big, arena.thread_arena(50))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    (s0, b0, again0), (s1, b1, _) = seen[0], seen[1]
    for buf in (s0, b0, s1, b1):
        assert buf.ctypes.data % arena.ALIGNMENT == 0 and buf.flags.c_contiguous
    assert s0.size >= 100 and b0.size >= 10_000
    assert again0 is b0  # never shrinks: the grown buffer is reused
    assert not np.shares_memory(b0, b1)


def test_small_thread_arenas_are_private_too():
    """A kernel needing at most 64 bytes of scratch (a parallel sum's partial results) once got the
    shared default buffer in every thread, and concurrent calls mixed their sums."""
    seen = {}

    def work(name):
        seen[name] = arena.thread_arena(64)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen[0].size >= 64 and seen[1].size >= 64
    assert not np.shares_memory(seen[0], seen[1])
