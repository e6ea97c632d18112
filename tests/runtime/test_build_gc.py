"""build_native lowers with Python's garbage collector paused (runtime/build.py gc_paused), and
leaves it as it found it: on if it was on, off if the program had turned it off."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

from gradtape import codegen, runtime
from gradtape.runtime import build

from .samples import add_fn


@pytest.fixture
def collector_state():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.fixture
def lowering_sees(monkeypatch):
    """A list that receives gc.isenabled() as each lowering starts (the real code generator runs)."""
    seen = []
    real = codegen.lower

    def spy(fn, name):
        seen.append(gc.isenabled())
        return real(fn, name)

    monkeypatch.setattr(codegen, "lower", spy)
    return seen


@pytest.mark.parametrize("enabled", [True, False])
def test_lowering_runs_with_the_collector_off_and_leaves_it_as_it_was(enabled, collector_state, lowering_sees):
    (gc.enable if enabled else gc.disable)()
    cf = runtime.compile_function(add_fn((8,), np.float64))
    assert cf.native and lowering_sees == [False]
    assert gc.isenabled() is enabled
    np.testing.assert_array_equal(cf(np.ones(8), np.ones(8))[0], np.full(8, 2.0))


def test_the_collector_comes_back_when_the_last_of_two_threads_leaves(collector_state):
    gc.enable()
    inside, release = threading.Event(), threading.Event()

    def other():
        with build.gc_paused():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    t.start()
    assert inside.wait(10)
    with build.gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread is still lowering
    release.set()
    t.join(10)
    assert gc.isenabled()


def test_the_collector_comes_back_after_an_error(collector_state):
    gc.enable()
    with pytest.raises(ZeroDivisionError):
        with build.gc_paused():
            1 / 0
    assert gc.isenabled()
