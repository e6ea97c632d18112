"""The trace context: which traces are in progress, and which one an op emits into.

Every trace (a staged function's, make_ir's, a custom rule's piece) runs
its Python function inside `tracing(builder)`, which pushes its Builder on
one thread-local stack. An op that meets abstract tensors emits its
equation into `current_builder(...)`: the newest among the Builders those
tensors live in and the innermost trace in progress. Newest, because values
of an older trace can meet a newer one:

    def outer(x):                              # trace B1
        return grad(lambda y: x * y * y)(x)    # trace B2 reads B1's x

`x * y` goes to B2, where `x` is a free Var that B2 then captures (see
trace.py); a custom rule's piece (custom_trace.py) receives the ops on the
values of the custom function it differentiates the same way.

A function's trace ends when the function returns: `FunctionTrace.ended`
is set, and an abstract tensor of it that shows up later (kept in a list, a
global or an attribute while the function ran) raises UnexpectedTracerError
naming the function, instead of emitting into a trace nobody reads.
"""
from __future__ import annotations

import threading

from .. import ir
from . import concretization, tensor
from .errors import leaked
from .tensor import Tensor


class FunctionTrace(ir.Builder):
    """The Builder of one traced Python function: it knows the function's name
    and whether the function has returned (`ended`).

    Custom rules' pieces use plain Builders: a custom_gradient's grad_fn reads
    the values of its function's piece after that piece is traced.
    """

    __slots__ = ("name", "ended", "arguments")

    def __init__(self, name: str):
        super().__init__()
        self.name = name
        self.ended = False
        self.arguments = None  # (function, its arguments, their leaves' ranges, input Vars): set by trace_call


class _Stack(threading.local):
    def __init__(self):
        self.builders = []


_stack = _Stack()


class tracing:
    """Within this context, `builder`'s trace is in progress: the innermost one.

    On exit a FunctionTrace ends: its tensors may no longer be used.
    """

    __slots__ = ("builder",)

    def __init__(self, builder: ir.Builder):
        self.builder = builder

    def __enter__(self):
        _stack.builders.append(self.builder)
        return self.builder

    def __exit__(self, *exc):
        _stack.builders.pop()  # traces nest: the innermost ends first
        if isinstance(self.builder, FunctionTrace):
            self.builder.ended = True
            self.builder.arguments = None  # a leaked tensor must not keep the call's arrays alive


def _concretization_error(sym, what, fix=None):
    return concretization.error(sym, what, _stack.builders, fix)


tensor.concretization_error = _concretization_error


def in_trace() -> bool:
    """Whether some trace is in progress in this thread."""
    return bool(_stack.builders)


def outermost_builder():
    """The Builder of the outermost trace in progress in this thread, or None."""
    builders = _stack.builders
    return builders[0] if builders else None


def current_builder(values=()):
    """The Builder an op on `values` emits into, or None when no trace is in progress
    and no value is abstract.

    The newest (by `serial`) among the Builders of the abstract Tensors in
    `values` and the innermost trace in progress.

    Raises:
      UnexpectedTracerError: an abstract Tensor in `values` belongs to a
        function trace that has ended (it leaked out of that function).
    """
    builders = _stack.builders
    builder = builders[-1] if builders else None
    for x in values:
        if isinstance(x, Tensor) and x._sym is not None:
            b = check_live(x)._sym.builder
            if builder is None or b.serial > builder.serial:
                builder = b
    return builder


def check_live(x: Tensor) -> Tensor:
    """`x` (an abstract Tensor) if its trace has not ended.

    Raises:
      UnexpectedTracerError: naming the function `x` leaked out of.
    """
    b = x._sym.builder
    if b.__class__ is FunctionTrace and b.ended:
        raise leaked(x._sym.type, b.name)
    return x
