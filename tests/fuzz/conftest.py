"""The fuzz tests run every path natively (no background compile, no silent
interpreter fallback, the tape's backward compiled at once)."""
import pytest

from . import differential


@pytest.fixture(autouse=True, scope="module")
def _native_everywhere():
    saved = differential.configure()
    yield
    differential.restore(saved)
