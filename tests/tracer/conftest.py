"""The tape tests run twice: recording in C (gradtape/tracer/_crecord.c, the default) and in
Python (Recording.record, what an install without a C compiler uses), so the two stay one
behaviour. test_crecord.py chooses its implementation per test itself."""
import pytest

import gradtape as gt
from gradtape.tracer import backward_cache, backward_plan, dispatch, gradient_tape
from gradtape.tracer.recording import Recording

_CHOOSES_ITS_OWN = {"test_crecord"}


@pytest.fixture(autouse=True)
def recording(request, monkeypatch):
    """Which `record` the tapes use: "c" (as installed) or "python"."""
    impl = getattr(request, "param", "c")
    if impl == "python":
        monkeypatch.setattr(dispatch, "_record", Recording.record)
        monkeypatch.setattr(gradient_tape, "_record", Recording.record)
    return impl


def pytest_generate_tests(metafunc):
    if metafunc.module.__name__.rsplit(".", 1)[-1] not in _CHOOSES_ITS_OWN:
        metafunc.parametrize("recording", ["c", "python"], indirect=True)


@pytest.fixture
def compile_at_once(monkeypatch):
    """Backward plans compiled at their first run, synchronously, from an empty plan cache."""
    monkeypatch.setattr(backward_plan, "compile_after_runs", 1)
    monkeypatch.setattr(gt.runtime.config, "async_compile", False)
    backward_cache.clear_cache()
    yield
    backward_cache.clear_cache()
