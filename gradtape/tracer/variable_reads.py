"""Which trainable Variables a piece of code reads: TF's VariableWatcher, for custom_gradient.

    reads = VariableReads(as_inputs=True)     # while a custom_gradient's function is traced
    trace_piece(f, types, what, reads)        # (custom_trace.py: gives it the piece's Builder)
    reads.variables                           # what f read, in order of first read
    reads.atoms                               # each one's input Var of the trace

tf.custom_gradient passes the trainable Variables its function reads (other
than its arguments) to grad_fn as `variables=`, and differentiates them with
grad_fn's `variable_grads`. For that the reads must be seen wherever they
happen: every op reaching a Variable operand while a VariableReads is
active goes through dispatch._computed (the C bind hands such ops to it),
which asks `lifted(args)`. With a builder, the read Variable becomes an
input of that builder's trace (one per Variable), so what the function
computes from it is symbolic (differentiable, and evaluated at the values
the Variables hold when recorded); without one, the read is only noted
and the Variable's value is used, as before. `known` maps Variables to atoms
of an earlier trace: grad_fn reads f's inputs for them (they are residuals).

Non-trainable Variables, and Variables passed to the function as arguments,
are not reads here (as in TF): they stay constants of the trace.
"""
from __future__ import annotations

from .. import ir
from .tape_stack import local as _stack
from .tensor import Tensor
from .variable import Variable


class VariableReads:
    """Collects the trainable Variables read while it is active (see the module doc)."""

    __slots__ = ("as_inputs", "builder", "known", "exclude", "variables", "atoms", "_seen")

    def __init__(self, as_inputs: bool = False, known: dict | None = None, exclude=()):
        self.as_inputs = as_inputs  # reads become inputs of the trace run inside (of `builder`)
        self.builder = None  # set by custom_trace.trace_piece when as_inputs
        self.known = dict(known or {})  # id(Variable) -> ir.Sym of an earlier trace
        self.exclude = {id(v) for v in exclude}
        self.variables = []  # read, in order of first read
        self.atoms = []  # with a builder: the input Var of each of `variables`
        self._seen = {}  # id(Variable) -> its Sym (or None without a builder)

    def __enter__(self):
        _stack.variable_reads.append(self)
        return self

    def __exit__(self, *exc):
        _stack.variable_reads.remove(self)

    def read(self, v: Variable):
        """Note a read of `v`; the abstract value standing for it in the trace, or None."""
        key = id(v)
        if key in self.exclude or not v.trainable:
            return None
        if key in self.known:
            return self.known[key]
        if key not in self._seen:
            sym = None if self.builder is None else self.builder.input(ir.TensorType(v.shape, v.dtype))
            self._seen[key] = sym
            self.variables.append(v)
            if sym is not None:
                self.atoms.append(sym.atom)
        return self._seen[key]

    def lifted(self, args) -> tuple:
        """`args` with each Variable read replaced by the abstract Tensor standing for it."""
        out = list(args)
        for i, a in enumerate(out):
            if isinstance(a, Variable):
                sym = self.read(a)
                if sym is not None:
                    out[i] = Tensor(sym=sym)
        return tuple(out)

    def syms(self) -> dict:
        """id(Variable) -> the Sym standing for it: `known` for a later trace reading the same."""
        return {id(v): self._seen[id(v)] for v in self.variables}


def active() -> VariableReads | None:
    """The innermost active VariableReads of this thread, or None."""
    reads = _stack.variable_reads
    return reads[-1] if reads else None
