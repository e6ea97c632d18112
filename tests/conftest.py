"""Test settings: the IR verifier runs after every pass, and the disk cache lives in a temp dir.

The compile cache on disk is on in the tests, as for users, but never in
the user's own cache: GRADTAPE_CACHE_DIR points at a directory made for
this session (inherited by the processes tests start) and removed at its
end. Each test gets its own subdirectory of it (`_disk_cache_per_test`), so
no test finds what another compiled: the counters a test checks mean the
same whatever ran before it.
"""
import os
import shutil
import tempfile

import pytest

_PREFIX = "gradtape-test-cache-"


def _remove_caches_of_dead_sessions():
    """Sessions killed before their end (a timeout, say) leave their directory: remove those
    whose pytest process is gone (the name holds its pid)."""
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        pid = name[len(_PREFIX):].split("-")[0]
        if not name.startswith(_PREFIX) or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        except OSError:
            pass  # alive, or not ours to ask about


_remove_caches_of_dead_sessions()
_SESSION_CACHE = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
os.environ["GRADTAPE_CACHE_DIR"] = _SESSION_CACHE
os.environ.setdefault("GRADTAPE_CHECKS", "1")

import gradtape.ir.config as _config  # noqa: E402
from gradtape.runtime import config as _runtime_config  # noqa: E402

_config.checks = True


@pytest.fixture(autouse=True)
def _disk_cache_per_test(request, monkeypatch):
    name = "".join(c if c.isalnum() else "_" for c in request.node.nodeid)[-150:]
    monkeypatch.setattr(_runtime_config, "cache_dir", os.path.join(_SESSION_CACHE, name))


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_SESSION_CACHE, ignore_errors=True)
