"""WeakScalar: a traced Python scalar argument, weak in dtype promotion as the scalar itself is.

A staged function called as `f(x32, 2.5)` traces its float argument as an
abstract 0-d float64 value. NumPy (and gradtape's eager functions) let a
Python scalar take the dtype of the array it meets, so `x32 * 2.5` is
float32; a plain float64 Tensor would make it float64. The staging layer
(tracer/trace.py, trace_call) gives such arguments this class instead, and
functions/_promote.py treats it as it treats a Python float or int: it
is cast to the other operand's dtype. Arithmetic between weak operands
only stays weak (`s * 2.0`), as Python float arithmetic does.
"""
from __future__ import annotations

from .tensor import Tensor


class WeakScalar(Tensor):
    """An abstract 0-d Tensor standing for a Python float or int argument (weakly typed)."""

    __slots__ = ()
