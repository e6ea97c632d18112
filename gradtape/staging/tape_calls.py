"""Recording an eager call of a staged function on the active GradientTapes.

Each output is recorded as one `call` equation whose sub-Function computes
just that output, so the tape's gradient differentiates through the call
(the call's VJP is the VJP of its sub-Function), to any order.

With a single tape recording (and deferral on: tracer/deferred.py), the call
is deferred like any recorded op: `defer_call` records the `call` equations
and returns PendingTensors without running the program, and `tape.gradient`
runs the call's forward fused with the backward, in one compiled function.
A value read (a loss logged every step, say) runs the compiled program once
for all of the call's outputs. A program
whose Function holds ops that can fail on values (gather, scatter_add) runs
at once, so that its errors stay at the call. Otherwise, or on several
tapes, `record_call` records the values the compiled program computed.
"""
from __future__ import annotations

import functools

from .. import ir
from ..ir.ops.call import call_p
from ..tracer import deferred, dispatch, tape_stack
from ..tracer.tensor import Tensor
from ..tracer.signature import as_array


def record_call(program, leaves, outs) -> list:
    """Wrap `outs` (arrays) as Tensors, recorded on every active tape that watches a leaf."""
    tensors = [Tensor(o) for o in outs]
    tapes = list(tape_stack.active())
    if tapes:
        fns = program.call_fns()
        for tape in tapes:
            for fn_k, t in zip(fns, tensors):
                tape._record(call_p, leaves, {"fn": fn_k}, t)
    return tensors


def defer_call(program, leaves):
    """The call's outputs as PendingTensors recorded on the single recording tape, or None
    (nothing recorded) when the call must run now: several tapes or none, deferral off, no
    leaf watched by the tape, or ops in the program that can fail on values."""
    tapes = tape_stack.local.tapes
    if len(tapes) != 1 or not deferred.enabled or not _deferrable(program.fn):
        return None
    tape = tapes[0]
    pending = []
    for fn_k in program.call_fns():
        t = dispatch._record(tape._tape, call_p, leaves, {"fn": fn_k}, None, tape._watch_accessed_variables)
        if t is None:  # no leaf is tracked (the same leaves for every output): nothing was recorded
            return None
        pending.append(t)
    # Read, a value comes from the compiled program, not the interpreter (call's reference).
    run = _ProgramRun(program)
    for k, t in enumerate(pending):
        t._op, t._params = functools.partial(run.output, k), {}
    return pending


class _ProgramRun:
    """One deferred call's program, run once when the first of its outputs is read."""

    __slots__ = ("program", "outs")

    def __init__(self, program):
        self.program, self.outs = program, None

    def output(self, k, *values):
        if self.outs is None:
            run, final, started = self.program.runner()
            try:
                self.outs = run(*[as_array(v) for v in values])
            finally:
                if started and not final:
                    self.program.submit()  # as invoke() does: compile once this call has run
        return self.outs[k]


@functools.lru_cache(maxsize=1024)
def _deferrable(fn: ir.Function) -> bool:
    """Whether computing fn later cannot raise where computing it now would not: no op of
    deferred.eager_only in it, other than calls of Functions like this one."""
    for eqn in fn.eqns:
        if eqn.op is call_p:
            if not _deferrable(eqn.params["fn"]):
                return False
        elif deferred.eager_only(eqn.op):
            return False
    return True
