"""Tensors to Python numbers: `float(t)`, `int(t)`, `complex(t)`, `t.item()`, `t.tolist()`.

A Python number is a constant: nothing records what is computed from it.
So converting a tensor whose derivative is being taken would silently lose
the gradient through it, and these conversions refuse (with
`ConstantConversionError`) a floating tensor that a recording GradientTape
or ForwardAccumulator tracks, as `np.asarray(t)` does (numpy_dispatch.py).
The conversions that reach here without being written as such:
`math.sin(t)`, `np.float64(t)`, `'%f' % t` and `out[0] = t` into a NumPy
float array call `float(t)` (an integer or complex array calls `int` or
`complex`); `out[1:] = t` and `np.float32(t)` call `np.asarray`. JAX
refuses the same conversions of its tracers; TensorFlow and PyTorch
silently detach.

Still allowed: `bool(t)` (Python control flow runs eagerly, as on
TensorFlow's tape), integer and bool tensors (no derivative), tensors no
recording tape tracks (outside the `with` block, inside `stop_recording()`),
`t.numpy()` (the value as a constant, explicitly), and `repr`, `str` and
`format(t, ".3f")`, which make strings. In a staged function the same
conversions of an abstract tensor raise ConcretizationError (tensor.py).

Example::

    >>> x = gradtape.constant(2.0)
    >>> with gradtape.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    ...     logged = float(y.numpy())   # float(y) would raise here
    >>> float(y), float(tape.gradient(y, x))
    (4.0, 4.0)
"""
from __future__ import annotations

from .errors import ConstantConversionError
from .numpy_names import user_line
from .tape_stack import local as _tapes
from .tensor import Tensor
from .variable import Variable

FIX = (
    "Keep the computation on the tensor: gradtape functions and operators, or NumPy functions "
    "called on the tensor itself; build an array from tensors with gradtape.stack, gradtape.where "
    "or gradtape.concatenate, not by assigning into a NumPy array. Where a constant is meant "
    "(to log a loss, say): t.numpy() or gradtape.stop_gradient(t), or take the number after the "
    "tape's `with` block."
)

# What else calls each conversion, for the message: the user's line may not show the call.
_ALSO = {
    "float()": "float() is also what math functions (math.sin(t)), np.float64(t), '%f' % t and "
               "assigning to an element of a NumPy float array (out[0] = t) call. ",
    "int()": "int() is also what assigning to an element of a NumPy integer array calls. ",
    "complex()": "complex() is also what assigning to an element of a NumPy complex array calls. ",
}


def tracked_by(tensor) -> "object | None":
    """The first recorder (GradientTape or ForwardAccumulator) on the tape stack for which
    `tensor` carries a derivative, or None. Only floating tensors do, and only through
    differentiable ops: an integer tensor a tape recorded (an argmax), or the result of
    stop_gradient, has none to lose."""
    tapes = _tapes.tapes
    if not tapes or tensor.dtype.kind != "f":
        return None
    for tape in tapes:
        recording = tape._tape
        if recording is not None and recording.carries_derivative(tensor):
            return tape
        if isinstance(tensor, Variable) and tensor.trainable and tape._watch_accessed_variables:
            return tape
    return None


def refuse_if_tracked(tensor, what: str, result: str = "a Python number") -> None:
    """Raise ConstantConversionError if `what` (the conversion, as the user wrote it) would drop
    the derivative a recording tape takes through `tensor`."""
    tape = tracked_by(tensor)
    if tape is None:
        return
    line = user_line()  # walks out of gradtape's frames to the user's
    at = f", at {line}" if line else ""
    raise ConstantConversionError(
        f"{what} of a {tensor.dtype} tensor of shape {tuple(tensor.shape)} that a recording "
        f"{type(tape).__name__} differentiates{at}: the result would be {result}, a constant, and "
        f"the gradient through it silently lost. {_ALSO.get(what, '')}{FIX}"
    )


# Each checks the tape stack itself: float(t) with no tape recording costs one lookup more.
# The check comes first: a pending value is not computed only to be refused.
def _float(self):
    if _tapes.tapes:
        refuse_if_tracked(self, "float()")
    return float(self._concrete("float()"))


def _int(self):
    if _tapes.tapes:
        refuse_if_tracked(self, "int()")
    return int(self._concrete("int()"))


def _complex(self):
    if _tapes.tapes:
        refuse_if_tracked(self, "complex()")
    return complex(self._concrete("complex()"))


def _item(self):
    """The value of a one-element tensor as a Python number (on a tape, for a tensor the tape
    does not differentiate; see gradtape/tracer/conversions.py)."""
    refuse_if_tracked(self, "t.item()")
    return self.numpy().item()


def _tolist(self):
    """The value as nested lists of Python numbers (on a tape, for a tensor the tape does not
    differentiate; see gradtape/tracer/conversions.py)."""
    refuse_if_tracked(self, "t.tolist()", "a list of Python numbers")
    return self.numpy().tolist()


Tensor.__float__ = _float
Tensor.__int__ = _int
Tensor.__complex__ = _complex
Tensor.item = _item
Tensor.tolist = _tolist
