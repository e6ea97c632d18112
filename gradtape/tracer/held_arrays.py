"""Arrays a recording holds that their owner can still write, and the check that they were not.

A tape reads the NumPy arrays passed to the ops it records late: when a
deferred value is first computed (deferred.py) and when `tape.gradient`
runs. An array modified in place in between would silently change the
result. NumPy arrays have no version counter (PyTorch's way of catching
this), so when a recording first holds such an array it keeps a
fingerprint of it, and before the array is read again the fingerprint is
compared, raising ArrayModifiedError on a difference:

- arrays of up to EXACT_BYTES: their bytes, so any change is seen;
- larger ones: their shape and dtype and SAMPLES elements spread evenly
  over them, so that reading them stays cheap (a microsecond or two where
  the bytes would cost as much as the gradient): a whole new batch, a
  scaling or a shuffle is seen, a change confined to elements between the
  samples may not be.

Only arrays someone else can write need this (ir/frozen.py's `may_change`:
writeable, or a view of a writeable array): the arrays gradtape makes and
never hands out writeable (a Variable's value, `gradtape.constant`), and an
array its owner made read-only (`X.flags.writeable = False`) with its views,
cost nothing. A recording keeps one `Held` per array (`Recording.held`, keyed by
id: the Held keeps its array alive), the first read's; a pending op's
operands hold the Held in the array's place, so computing its value checks
it (deferred._force).
"""
from __future__ import annotations

import linecache
import math
import os
import sys

import numpy as np

from ..ir.frozen import may_change
from .errors import ArrayModifiedError
from .numpy_names import _GRADTAPE_DIR, _NUMPY_DIR

EXACT_BYTES = 1 << 16
SAMPLES = 256

_INTERNAL = (_GRADTAPE_DIR, _NUMPY_DIR)  # frames that are not the user's
_untrack = None  # _crecord.untrack_held, once the extension is set up (recording.py)


class Held:
    """An array a recording holds, with its fingerprint when the recording first read it, the
    op that read it and the user's line that recorded the op."""

    __slots__ = ("array", "op", "site", "_fingerprint")

    def __init__(self, array: np.ndarray, op, site):
        self.array = array
        self.op = op
        self.site = site
        self._fingerprint = fingerprint(array)

    def checked(self, reader) -> np.ndarray:
        """The array, once its fingerprint is found unchanged. `reader`, for the error's
        message, is what reads it: a method's name, or the op whose deferred value is computed."""
        if fingerprint(self.array) != self._fingerprint:
            raise _modified(self, reader)
        return self.array


def hold(rec, array: np.ndarray, op):
    """Hold `array`, which `op` (None for `watch`) reads, on recording `rec` if its owner can
    still write it (the first read's fingerprint stays). The C recorder calls this too."""
    held = rec.held
    key = id(array)
    if key not in held and may_change(array):
        h = held[key] = Held(array, op, _user_site())
        if _untrack is not None:  # it can close no cycle: the collector need not walk it (_crecord.c)
            _untrack(h)


def check(held: dict, reader: str) -> None:
    """Raise ArrayModifiedError if an array of `held` (a Recording's) changed since it was
    held; `reader` names the method about to read them."""
    for h in held.values():
        h.checked(reader)


def fingerprint(a: np.ndarray) -> tuple:
    """What must stay the same while a recording holds `a` (see the module docstring)."""
    if a.nbytes <= EXACT_BYTES:
        return a.shape, a.dtype, a.tobytes()
    if a.flags.c_contiguous:
        flat = a.reshape(-1)
        sample = flat[::-(-flat.size // SAMPLES)]
        return a.shape, a.dtype, sample.tobytes(), flat[-1:].tobytes()
    per_axis = math.ceil(SAMPLES ** (1 / a.ndim))
    sample = a[tuple(slice(None, None, -(-d // per_axis)) for d in a.shape)]
    return a.shape, a.dtype, sample.tobytes(), a[(-1,) * a.ndim].tobytes()


def _user_site():
    """(code, instruction offset) of the innermost frame outside gradtape and NumPy: where the
    user's line that recorded the op (or watched the tensor) is (`_line`); None when there is
    none. The line itself is found only for an error's message: reading `f_lineno` walks the
    code's line table, and an LSTM step holds two data rows (1% of recording it)."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_INTERNAL):
            return code, frame.f_lasti
        frame = frame.f_back
    return None


def _line(site) -> tuple:
    """(file, line) of a `_user_site` answer, as the frame's `f_lineno` was then."""
    code, offset = site
    for start, end, line in code.co_lines():  # byte offsets, as f_lasti
        if start <= offset < end:
            return code.co_filename, line if line is not None else code.co_firstlineno
    return code.co_filename, code.co_firstlineno


def _modified(h: Held, reader) -> ArrayModifiedError:
    if not isinstance(reader, str):  # an op (or a staged call's callable) computed from it
        name = getattr(reader, "name", None)
        reader = f"computing the deferred value of a recorded `{name}`" if name else "computing a deferred value"
    a = h.array
    what = f"the NumPy array of shape {a.shape} and dtype {a.dtype}"
    by = f"the tape first read for `{h.op.name}`" if h.op is not None else "the tape watched"
    where = ""
    if h.site is not None:
        filename, lineno = _line(h.site)
        line = linecache.getline(filename, lineno).strip()
        where = f" at {os.path.basename(filename)}:{lineno}" + (f" (`{line}`)" if line else "")
    return ArrayModifiedError(
        f"{reader}: {what} that {by}{where} was modified in place (directly or "
        "through an array sharing its memory) after the tape recorded it. The tape reads the arrays "
        "passed to recorded ops when a value or the gradient is computed, so the result would "
        "silently use the new contents. Pass a copy to the op (`.copy()`, or gradtape.constant(...)), "
        "or modify the array only after the gradient (and any value read from the tape) is computed.")
