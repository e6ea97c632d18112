"""Python's cyclic garbage collector paused around passes that allocate much and free nothing."""
from __future__ import annotations

import contextlib
import gc
import threading

_gc_lock = threading.Lock()
_gc_pausers = 0  # threads inside gc_paused()
_gc_was_enabled = False


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector off while a pass that makes no garbage cycles runs, as
    it was afterwards.

    Code generation (runtime/build.py), the re-roll pass (ir/reroll.py) and a tape's
    recording made into equations (tracer/recording.py) allocate objects that are all alive
    until the pass ends: every collection the allocations trigger walks them in vain, and
    the full ones walk the whole process too, a tape's recording included. Lowering the
    k = 3,000 chain of bench/compile_scaling.py: lower + ir_text 0.31 -> 0.24 s, and growing
    faster than the program with the collector on; the equations of a 4,096-step LSTM's
    recording (bench/loop_reroll.py's `to IR`): 2.2 -> 0.7 s, collections 1.5 -> 0.3 s. The
    collector is off while any thread is inside, and back on when the last
    one leaves if it was on when the first came in.

        >>> import gc
        >>> with gc_paused():
        ...     gc.isenabled()
        False
    """
    global _gc_pausers, _gc_was_enabled
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0 and _gc_was_enabled:
                gc.enable()
