"""What the re-roll tests share (tests/control_flow/test_reroll_loops.py, staged, and
tests/tracer/test_reroll_tape.py, on a tape): a fixture that rolls loops of any size, and an RNN
loss written as a Python for loop."""
import pytest

import gradtape as gt
from gradtape import ir


@pytest.fixture(autouse=True)
def small_loops_too(monkeypatch):
    """Loops of any size are rolled here (by default only those of 128 equations or more)."""
    monkeypatch.setattr(ir.config, "reroll_min_equations", 0)


def rnn_loss(h, w, u, xs):
    states = []
    for i in range(xs.shape[0]):
        h = gt.tanh(w @ h + u @ xs[i])
        states.append(h)
    return gt.sum(gt.stack(states) ** 2) + gt.sum(h)
