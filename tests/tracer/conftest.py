"""The tape tests run twice: recording in C (gradtape/tracer/_crecord.c, the default) and in
Python (Recording.record, what an install without a C compiler uses), so the two stay one
behaviour. test_crecord.py chooses its implementation per test itself."""
import pytest

from gradtape.tracer import dispatch, gradient_tape
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
