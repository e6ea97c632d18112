"""Exceptions raised by the tracer layer (tensors, tapes, tracing)."""


class TracerError(Exception):
    """Base class of every error raised by gradtape.tracer."""


class ConcretizationError(TracerError, TypeError):
    """Python asked for the concrete value of an abstract (traced) tensor."""


class ConstantConversionError(TracerError, TypeError):
    """A tensor whose derivative is being taken was converted to a constant: a plain NumPy
    array (np.asarray) or a Python number (float(t), t.item(), math.sin(t), out[0] = t)."""


class UnsupportedNumPyFunction(TracerError, TypeError):
    """A NumPy function gradtape cannot differentiate was called on a Tensor."""


class UnexpectedTracerError(TracerError):
    """An abstract tensor was used after the trace it belongs to had ended.

    It leaked out of the traced function (stored in a global, a list or an
    attribute while the function ran); its value never existed, so any use
    of it would compute nothing or the wrong thing.
    """


class ArrayModifiedError(TracerError, RuntimeError):
    """A NumPy array that a tape recorded was modified in place before the tape read it again.

    The tape reads the arrays passed to recorded ops when a value or the
    gradient is computed (held_arrays.py), so the result would have used the
    new contents. Pass a copy (`a.copy()`), or modify the array only after
    the gradient is taken.

    Example::

        >>> x = gradtape.constant([1.0, 2.0, 3.0])
        >>> a = np.array([1.0, 2.0, 3.0])
        >>> with gradtape.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gradtape.sum(x * a)
        >>> a *= 100
        >>> tape.gradient(y, x)
        Traceback (most recent call last):
          ...
        gradtape.tracer.errors.ArrayModifiedError: GradientTape.gradient: the NumPy array of shape (3,) ...
    """


def leaked(type, name: str) -> UnexpectedTracerError:
    """The error for an abstract tensor of type `type` used after the trace of `name` ended."""
    return UnexpectedTracerError(
        f"an abstract tensor {type} of the trace of '{name}' was used after that trace ended: "
        f"it leaked out of '{name}' (kept in a list, a global or an attribute while the function "
        f"was traced), and it has no value outside that trace. Return it from '{name}' instead, "
        "or compute it again from concrete values."
    )


def add_note(err: BaseException, note: str) -> None:
    """`err.add_note(note)`, also on Python 3.10, which has no add_note (PEP 678 came in 3.11):
    there the note goes into `__notes__` as 3.11 would put it, and also into the message,
    since 3.10's traceback does not print notes."""
    if hasattr(err, "add_note"):
        err.add_note(note)
        return
    err.__notes__ = [*getattr(err, "__notes__", ()), note]
    if err.args and isinstance(err.args[0], str):
        err.args = (f"{err.args[0]}\n{note}", *err.args[1:])
