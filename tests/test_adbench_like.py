"""bench/adbench_like.py's correctness checks at tiny sizes: every contender's objective
against NumPy's, gradtape's derivatives (staged and on a tape, and JAX's when JAX imports)
against finite differences and each other. No timing here.

The staged functions run in the reference interpreter, as in test_examples.py: what is
tested is the benchmark's objectives and checks, and compiling them costs seconds apiece."""
import importlib.util
import pathlib
import sys

import pytest

from gradtape import runtime
from gradtape.staging import program

BENCH = pathlib.Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setattr(program, "compiler", runtime.interpreted)


@pytest.fixture(scope="module")
def adbench():
    saved = list(sys.path)  # the bench puts bench/ first on the path to import its objectives
    try:
        spec = importlib.util.spec_from_file_location("bench_adbench_like", BENCH / "adbench_like.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path[:] = saved


@pytest.mark.parametrize("problem", ["gmm", "ba", "hand", "lstm"])
def test_checks_pass_at_tiny_sizes(adbench, problem):
    adbench.check_all("tiny", only=[problem])


def test_a_wrong_derivative_stops_the_run(adbench):
    case = adbench.CASES["hand"](*adbench.SIZES["tiny"]["hand"][0])
    right = case.der["staged"]
    case.der["staged"] = lambda: 1.001 * right()
    with pytest.raises(AssertionError, match="finite differences"):
        adbench.check(case, verbose=False)
