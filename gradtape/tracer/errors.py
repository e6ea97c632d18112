"""Exceptions raised by the tracer layer (tensors, tapes, tracing)."""


class TracerError(Exception):
    """Base class of every error raised by gradtape.tracer."""


class ConcretizationError(TracerError, TypeError):
    """Python asked for the concrete value of an abstract (traced) tensor."""


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
