"""`bind`: the one entry point through which every gradtape op runs.

Eager mode computes the op with its NumPy reference and lets each active
tape record it, or, when a single tape records it, records it and defers
computing it (deferred.py); inside tracing (an abstract Tensor among the arguments) it
emits an equation instead. Front ends promote dtypes and normalize
parameters before calling bind. Which trace an abstract op emits into is
trace_context.current_builder's answer.

`bind` is chosen once, at the end of this module: the C one (_crecord.c)
when recording is in C, else the Python one below (`python_bind`, the
reference). Nothing this module imports imports it back, so every module
that imports `bind` gets the chosen one.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import ir
from ..ir.op import impls, shape_rules
from . import deferred
from .c_view import crecord as _crecord
from .deferred import eager_only
from .recording import record as _record
from .tape_stack import local as _stack
from .tensor import Tensor
from .trace_context import current_builder


def bind(op, *args, **params) -> Tensor:
    """Apply `op` to Tensors, arrays or scalars; returns a Tensor."""
    tapes = _stack.tapes
    # The eager hot path first: a single tape records and defers the op
    # (declining when no operand is tracked or one is abstract).
    if tapes and deferred.enabled and not eager_only(op):
        if len(tapes) == 1:
            tape = tapes[0]
            result = _record(tape._tape, op, args, params, None, tape._watch_accessed_variables)
        else:
            result = _defer_on_every(tapes, op, args, params)
        if result is not None:
            return result
    return _computed(op, args, params)


def _defer_on_every(tapes, op, args, params):
    """Several recorders (nested tapes, a ForwardAccumulator with a tape): the first that
    tracks an operand records the op deferred, and every other that does records the same
    PendingTensor. None, having recorded nothing, when no recorder tracks an operand (or one
    is abstract). The C bind calls this too."""
    result = None
    for tape in tapes:
        rec = tape._tape
        recorded = _record(rec, op, args, params, result, tape._watch_accessed_variables)
        if recorded is not None:
            result = recorded
            rec.deferred = True  # a PendingTensor given as the result does not say so itself
    return result


def _computed(op, args, params) -> Tensor:
    """bind's other paths: trace the op (an abstract operand), or compute it with its NumPy
    reference and let every recording tape record it."""
    reads = _stack.variable_reads
    if reads:  # a custom_gradient function is running: it sees its Variable reads (variable_reads.py)
        args = reads[-1].lifted(args)
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


def _bind_abstract(op, args, params) -> Tensor:
    builder = current_builder(args)  # raises for a tensor leaked out of its trace
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


def _chosen_bind():
    """bind in C (_crecord.c) when recording is in C: the same function, without the
    interpreter on the eager hot paths (recording on one tape, and _computed's common case:
    concrete operands computed by the op's NumPy reference)."""
    if _crecord is None:
        return bind
    _crecord.setup_bind(dict(stack=_stack, deferred=deferred, eager_only=eager_only, computed=_computed,
                             dispatch=sys.modules[__name__], record=_crecord.record, impls=impls,
                             asarray=np.asarray))
    if _record is not _crecord.record:
        return bind
    deferred._force = _crecord.force  # the same loop (deferred.python_force stays the reference)
    return _crecord.bind


# Chosen once, here: no module of this package imports this one while it is being
# imported (tests/tracer/test_trace_context.py checks every module holds this bind).
python_bind = bind
bind = _chosen_bind()
