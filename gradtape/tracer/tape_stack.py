"""The thread-local stack of active (recording) tapes.

Each thread sees only the tapes it entered. Recording checks `active()`
first, so code run with no tape pays one attribute lookup (dispatch.bind
reads `local.tapes` itself: a call to `active()` would cost more than the check).
"""
import threading


class _Local(threading.local):
    def __init__(self):
        self.tapes = []
        # VariableReads collecting the Variables that ops read (variable_reads.py), innermost
        # last; while it is not empty, an op reading a Variable goes through dispatch._computed.
        self.variable_reads = []


local = _Local()


def active() -> list:
    """The recording tapes of this thread, outermost first (do not mutate)."""
    return local.tapes


def push(tape):
    local.tapes.append(tape)


def pop(tape):
    tapes = local.tapes
    # Tapes normally leave in LIFO order; stop_recording may remove an outer one.
    for i in range(len(tapes) - 1, -1, -1):
        if tapes[i] is tape:
            del tapes[i]
            return
