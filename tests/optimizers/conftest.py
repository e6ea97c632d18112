"""Staged functions in these tests run in the reference interpreter (the oracle
of the compiled path): they test the optimizers' arithmetic, not the backend.
tests/test_train_step.py covers the compiled path."""
import pytest

from gradtape import runtime
from gradtape.staging import program


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setattr(program, "compiler", runtime.interpreted)
