"""Staged functions called a few times here start background compiles; each test
waits for them, so that none is still running (and calling codegen) when the
next directory's tests (tests/runtime, which count compiles) begin."""
import pytest

from gradtape import runtime


@pytest.fixture(autouse=True)
def _no_compile_outlives_its_test():
    yield
    assert runtime.wait_for_compiles(timeout=600), "a background compile did not finish within 600 s"
