"""A long recording is made into equations with Python's collector paused, and its new objects
are walked once afterwards (tracer/recording.py, gradtape/gc_pause.py); the collector is left as
the program had it, and the equations are those made piece by piece."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.tracer import recording


@pytest.fixture
def collector_state():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def recorded(steps):
    x = gt.Variable(np.linspace(0.1, 0.9, 4))
    with gt.GradientTape(persistent=True) as tape:
        h = x
        for _ in range(steps):
            h = gt.tanh(h * 0.5 + x)
    return tape._tape


@pytest.fixture
def making_sees(monkeypatch):
    """A list that receives gc.isenabled() as each batch of equations is made."""
    seen = []
    real = recording.Recording._more_eqns

    def spy(self, done):
        seen.append(gc.isenabled())
        return real(self, done)

    monkeypatch.setattr(recording.Recording, "_more_eqns", spy)
    return seen


@pytest.mark.parametrize("enabled", [True, False])
def test_a_long_recording_is_made_with_the_collector_off_and_left_as_it_was(enabled, collector_state,
                                                                              making_sees, monkeypatch):
    monkeypatch.setattr(recording, "_MANY_POSITIONS", 16)
    rec = recorded(20)  # 3 equations a step
    (gc.enable if enabled else gc.disable)()
    young_collections = gc.get_stats()[1]["collections"]
    eqns = rec.eqns
    assert making_sees == [False] and gc.isenabled() is enabled
    # the young generations are walked once when the collector is on, never when it is off
    assert gc.get_stats()[1]["collections"] - young_collections == (1 if enabled else 0)
    assert [e.op.name for e in eqns] == ["mul", "add", "tanh"] * 20


def test_a_short_recording_leaves_the_collector_alone(collector_state, making_sees):
    gc.enable()
    rec = recorded(3)
    assert len(rec.eqns) == 9 and making_sees == [True]


def described(eqns):
    atom = lambda a: ("literal", a.value.tolist()) if isinstance(a, ir.Literal) else a.index  # noqa: E731
    return [(e.op.name, [atom(a) for a in e.inputs], e.params, e.outvars[0].index) for e in eqns]


def test_the_equations_are_those_made_piece_by_piece(monkeypatch):
    monkeypatch.setattr(recording, "_MANY_POSITIONS", 16)
    whole = recorded(20)
    x = gt.Variable(np.linspace(0.1, 0.9, 4))
    with gt.GradientTape(persistent=True) as tape:
        h = x
        for step in range(20):
            h = gt.tanh(h * 0.5 + x)
            if step == 3:
                first = len(tape._tape.eqns)  # 12 equations: made without a pause
    assert first == 12
    assert described(tape._tape.eqns) == described(whole.eqns)  # the other 48 with one
