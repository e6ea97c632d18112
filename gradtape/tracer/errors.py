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
