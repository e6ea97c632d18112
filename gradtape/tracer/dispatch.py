"""`bind`: the one entry point through which every gradtape op runs.

Eager mode computes the op with its NumPy reference and lets each active
tape record it, or, when a single tape records it, records it and defers
computing it (deferred.py); inside tracing (an abstract Tensor among the arguments) it
emits an equation instead. Front ends promote dtypes and normalize
parameters before calling bind.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from .. import ir
from ..ir.op import impls, shape_rules
from . import deferred
from .deferred import eager_only
from .tape_stack import local as _stack
from .tensor import Tensor


def bind(op, *args, **params) -> Tensor:
    """Apply `op` to Tensors, arrays or scalars; returns a Tensor."""
    tapes = _stack.tapes
    # The eager hot path first: a single tape records and defers the op
    # (declining when no operand is tracked or one is abstract).
    if tapes and len(tapes) == 1 and deferred.enabled and not eager_only(op):
        tape = tapes[0]
        result = _record(tape._tape, op, args, params, None, tape._watch_accessed_variables)
        if result is not None:
            return result
    return _computed(op, args, params)


def _computed(op, args, params) -> Tensor:
    """bind's other paths: trace the op (an abstract operand), or compute it with its NumPy
    reference and let every recording tape record it."""
    for a in args:
        if isinstance(a, Tensor) and a._sym is not None:
            return _bind_abstract(op, args, params)
    values = [a._value if isinstance(a, Tensor) else a for a in args]
    try:
        out = impls[op](*values, **params)
    except Exception:
        # NumPy's message would not name our op; the shape rule's will.
        shape_rules[op](*[ir.type_of(v) for v in values], **params)
        raise
    result = Tensor(out)
    tapes = _stack.tapes
    if tapes:
        for tape in tapes:
            tape._record(op, args, params, result)
    return result


class _Emit(threading.local):
    builder = None  # while a derivative rule runs user code: the pass's builder


_emit = _Emit()


class emitting_into:
    """Within this context, abstract ops go to `builder` (a derivative pass's)
    even when their operands all come from the older trace it copied."""

    def __init__(self, builder):
        self.builder = builder

    def __enter__(self):
        self.saved, _emit.builder = _emit.builder, self.builder

    def __exit__(self, *exc):
        _emit.builder = self.saved


def _bind_abstract(op, args, params) -> Tensor:
    # Values of an older builder can meet a newer one that copied its equations
    # (a derivative rule calling user code); emit into the newest.
    builder = max(
        (a._sym.builder for a in args if isinstance(a, Tensor) and a._sym is not None),
        key=lambda b: b.serial,
    )
    if _emit.builder is not None and _emit.builder.serial > builder.serial:
        builder = _emit.builder
    atoms = []
    for a in args:
        if isinstance(a, Tensor):
            if a._sym is not None:
                atoms.append(a._sym.atom)
            else:
                atoms.append(ir.Literal(a._value))
        else:
            atoms.append(ir.Literal(np.asarray(a)))
    return Tensor(sym=ir.Sym(builder.bind(op, atoms, params), builder))


# Last: recording.py imports this module (through custom_trace's emitting_into).
from .recording import record as _record  # noqa: E402


def _accelerated_bind():
    """bind in C (_crecord.c) when recording is in C: the same function, without the
    interpreter on the eager hot paths (recording on one tape, and _computed's common case:
    concrete operands computed by the op's NumPy reference)."""
    try:
        from . import _crecord
    except ImportError:
        return bind
    _crecord.setup_bind(dict(stack=_stack, deferred=deferred, eager_only=eager_only, computed=_computed,
                             dispatch=sys.modules[__name__], record=_crecord.record, impls=impls,
                             asarray=np.asarray))
    return _crecord.bind if _record is _crecord.record else bind


# Modules imported while recording.py was (variable.py) keep the Python bind: the same function.
python_bind = bind
bind = _accelerated_bind()
