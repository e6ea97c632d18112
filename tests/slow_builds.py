"""Background builds made slow on purpose, to show that no result depends on how long they take."""
import threading

from gradtape.runtime import cache


def slow_background_builds(monkeypatch, seconds: float = 0.5):
    """Make the compile thread sleep before each cache.BackgroundBuild it runs: the next caller that
    needs the build then runs it itself, instead of finding it done."""
    real = cache.BackgroundBuild._run_once

    def slow(self):
        if threading.current_thread() is not threading.main_thread():
            threading.Event().wait(seconds)
        return real(self)

    monkeypatch.setattr(cache.BackgroundBuild, "_run_once", slow)
