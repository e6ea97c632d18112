"""The in-memory caches are bounded: LRU eviction in the runtime, FIFO per staged function,
and gradtape.clear_cache() lets go of every compiled function.

Memory itself (RSS) is measured by bench/memory_soak.py, never asserted here:
these tests check cache sizes, counters, that evicted code is freed (its
engine object is gone) and that evicted functions still compute the right
numbers when met again.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import gradtape as gt
from gradtape import runtime
from gradtape.runtime import config
from gradtape.tracer import backward_cache

from .samples import add_fn, chain_fn, chain_reference


def info(*keys):
    i = runtime.cache_info()
    return {k: i[k] for k in keys}


def check_chain(cf, shape, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=shape), rng.normal(size=shape)
    for got, want in zip(cf(a, b), chain_reference(a, b)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


@pytest.fixture
def bound(monkeypatch):
    """Set the runtime's entry bound (bytes unbounded unless a test sets them)."""
    monkeypatch.setattr(config, "memory_cache_bytes", 0)

    def set_bound(n):
        monkeypatch.setattr(config, "memory_cache_entries", n)

    return set_bound


def test_the_least_recently_used_entry_is_evicted_at_the_limit(handmade, bound):
    bound(3)
    fns = [chain_fn((2, k)) for k in range(1, 5)]
    for fn in fns[:3]:
        runtime.compile_function(fn)
    assert info("entries", "evictions") == {"entries": 3, "evictions": 0}
    runtime.compile_function(fns[0])  # a hit: now the most recently used
    runtime.compile_function(fns[3])  # over the bound: fns[1] goes
    assert info("entries", "evictions", "hits", "misses", "compiles") == {
        "entries": 3, "evictions": 1, "hits": 1, "misses": 4, "compiles": 4}
    runtime.compile_function(fns[0])
    assert info("hits", "compiles")["compiles"] == 4  # fns[0] was kept
    cf = runtime.compile_function(fns[1])  # evicted: built again
    assert info("misses", "compiles", "evictions") == {"misses": 5, "compiles": 5, "evictions": 2}
    check_chain(cf, (2, 2))


def test_an_evicted_function_gives_the_same_numbers_when_met_again(bound):
    bound(1)
    first = runtime.compile_function(chain_fn((3, 4)))
    check_chain(first, (3, 4), seed=1)
    runtime.compile_function(chain_fn((4, 3)))  # evicts the first
    assert runtime.cache_info()["evictions"] == 1
    check_chain(first, (3, 4), seed=2)  # a holder's function keeps its code
    again = runtime.compile_function(chain_fn((3, 4)))
    assert again is not first and again.native
    check_chain(again, (3, 4), seed=3)


def test_evicted_machine_code_is_freed_once_nobody_holds_it(bound):
    bound(1)
    cf = runtime.compile_function(chain_fn((2, 7)))
    engine = weakref.ref(cf._native.code.engine)
    del cf
    gc.collect()
    assert engine() is not None  # still in the cache
    runtime.compile_function(chain_fn((7, 2)))
    gc.collect()
    assert engine() is None


def test_the_byte_bound_counts_code_and_private_arenas(handmade, monkeypatch):
    monkeypatch.setattr(config, "memory_cache_entries", 0)
    a = runtime.compile_function(chain_fn((2, 3)))
    assert a.footprint >= len(a._native.code.object_bytes) > 0
    assert runtime.cache_info()["bytes"] == a.footprint
    b = runtime.compile_function(chain_fn((3, 2)))
    assert runtime.cache_info()["bytes"] == a.footprint + b.footprint
    monkeypatch.setattr(config, "memory_cache_bytes", a.footprint + b.footprint)  # exactly full: both stay
    runtime.compile_function(chain_fn((2, 3)))
    assert info("entries", "evictions") == {"entries": 2, "evictions": 0}
    monkeypatch.setattr(config, "memory_cache_bytes", 1)  # smaller than any: only the newest stays
    c = runtime.compile_function(chain_fn((3, 3)))
    assert info("entries", "bytes", "evictions") == {"entries": 1, "bytes": c.footprint, "evictions": 2}
    check_chain(c, (3, 3))


def test_an_interpreted_entry_holds_no_bytes(handmade, monkeypatch):
    cf = runtime.interpreted(add_fn())
    assert cf.footprint == 0


def test_a_staged_function_keeps_at_most_the_bound_of_signatures(bound, monkeypatch):
    monkeypatch.setattr(config, "async_compile", False)
    bound(3)
    f = gt.value_and_grad(lambda x: gt.sum(gt.tanh(x) * x))

    def check(n):
        x = np.linspace(-1, 1, n)
        value, grad = f(x)
        np.testing.assert_allclose(value, np.sum(np.tanh(x) * x), rtol=1e-13)
        np.testing.assert_allclose(grad, np.tanh(x) + x * (1 - np.tanh(x) ** 2), rtol=1e-12, atol=1e-15)

    for n in range(2, 8):
        check(n)
    assert len(f._programs) == 3 and len(f._fast) == 3 and len(f._traces.table) == 3
    assert f.cache_info().traces == 6
    check(2)  # forgotten: traced again, and right
    assert f.cache_info().traces == 7
    assert runtime.cache_info()["entries"] <= 3


def test_clear_cache_empties_every_cache_and_zeroes_counters(monkeypatch):
    monkeypatch.setattr(config, "async_compile", False)
    f = gt.grad(lambda x: gt.sum(gt.exp(x)))
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(f(x), np.exp(x), rtol=1e-14)
    w = gt.constant(x)
    for _ in range(6):  # enough steps for the tape to compile its backward plan
        with gt.GradientTape() as tape:
            tape.watch(w)
            y = gt.sum(gt.sin(w))
        np.testing.assert_allclose(tape.gradient(y, w).numpy(), np.cos(x), rtol=1e-14)
    assert runtime.cache_info()["entries"] >= 2 and backward_cache.cache_info()["entries"] >= 1
    assert gt.cache_info()["entries"] >= 1 and f._programs

    gt.clear_cache()
    held = runtime.cache_info()
    assert (held["entries"], held["bytes"], held["compiles"], held["hits"], held["evictions"]) == (0, 0, 0, 0, 0)
    assert backward_cache.cache_info()["entries"] == 0
    assert gt.cache_info()["entries"] == 0
    assert not f._programs and not f._fast and not f._traces.table
    traces = f.cache_info().traces
    np.testing.assert_allclose(f(x), np.exp(x), rtol=1e-14)  # traced and compiled again
    assert f.cache_info().traces == traces + 1 and runtime.cache_info()["compiles"] == 1


def test_the_bounds_come_from_the_environment():
    code = ("from gradtape import runtime; i = runtime.cache_info(); "
            "print(i['max_entries'], i['max_bytes'])")
    env = dict(os.environ, GRADTAPE_MEMORY_CACHE_ENTRIES="7", GRADTAPE_MEMORY_CACHE_BYTES="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["7", "12345"]
