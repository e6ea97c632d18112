"""What a residual function reads from the tapes: custom_root's and fixed_point's eager path.

Called eagerly while a GradientTape (or ForwardAccumulator) records,
custom_root must know which recorded values its residual f reads from its
closure: they are the parameters whose cotangents the implicit function
theorem gives. f is traced with a `TapeReads` active: wherever a recorded
Tensor (or a Variable a tape watches or would watch on its read) meets the
trace, it is replaced by a fresh input of the trace, and the Tensor is
remembered for it. The trace's captured Vars are then those inputs, and
`tensors(captured)` hands back the Tensors to pass as explicit parameters.

It sits on the stack of Variable reads (tape_stack.local.variable_reads),
which dispatch consults before tracing an op and Variable.value() before a
read, so it sees every such operand. The tapes keep recording while f is
traced: an op on recorded values only (`a * 2` in f) is recorded as usual,
and its result, recorded, is lifted where it meets the trace.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..tracer import tape_stack
from ..tracer.tensor import Tensor
from ..tracer.trace_context import outermost_builder
from ..tracer.variable import Variable


class TapeReads:
    """Lifts the recorded values a trace reads to inputs of its Builder (see the module doc)."""

    __slots__ = ("_syms", "_tensors")

    def __init__(self):
        self._syms = {}  # id(Tensor) -> its Sym
        self._tensors = {}  # the Sym's Var -> the Tensor

    def __enter__(self):
        tape_stack.local.variable_reads.append(self)
        return self

    def __exit__(self, *exc):
        tape_stack.local.variable_reads.remove(self)

    def _recorded(self, t: Tensor) -> bool:
        if t._sym is not None:
            return False
        for tape in tape_stack.active():
            rec = tape._tape
            if rec is not None and rec.is_tracked(t):
                return True
        # A trainable float Variable not watched yet is watched when it is read on a tape.
        return isinstance(t, Variable) and t.trainable and np.dtype(t.dtype).kind == "f"

    def read(self, t: Tensor):
        """The Sym standing for `t` in the trace, or None when `t` is not recorded."""
        key = id(t)
        sym = self._syms.get(key)
        if sym is None and outermost_builder() is not None and self._recorded(t):
            # An input of the outermost trace, f's: a trace nested in f captures it from there.
            sym = outermost_builder().input(ir.TensorType(t.shape, t.dtype))
            self._syms[key] = sym
            self._tensors[sym.atom] = t
        return sym

    def lifted(self, args) -> tuple:
        """`args` with each recorded Tensor replaced by the abstract Tensor standing for it."""
        if not any(isinstance(a, Tensor) and a._sym is not None for a in args):
            return tuple(args)  # computed now (and recorded) like any eager op
        out = list(args)
        for i, a in enumerate(out):
            if isinstance(a, Tensor):
                sym = self.read(a)
                if sym is not None:
                    out[i] = Tensor(sym=sym)
        return tuple(out)

    def tensors(self, captured) -> list:
        """The recorded Tensor of each captured Var of the trace.

        Raises:
          RuntimeError: a captured Var this object did not lift (a trace of an
            enclosing function, which the eager path never has).
        """
        missing = [v for v in captured if v not in self._tensors]
        if missing:
            raise RuntimeError(f"TapeReads: {len(missing)} captured value(s) were not lifted from a tape")
        return [self._tensors[v] for v in captured]
