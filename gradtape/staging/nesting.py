"""Staging a transform inside an enclosing trace, instead of running compiled code.

When a staged function is called on abstract tensors (grad(grad(f)),
value_and_grad inside a differentiable, a differentiable inside grad), its
Program for that signature is inlined into the trace that owns those
tensors, so the enclosing transform sees ordinary equations and can
differentiate them again.
"""
from __future__ import annotations

from .. import ir
from ..ir.inline import inline
from ..tracer.tensor import Tensor
from ..tracer.trace_context import current_builder


def enclosing_builder(leaves, fname: str):
    """The Builder to inline into: the trace an op on `leaves` would emit into
    (tracer/trace_context.py), which also holds the Vars a program captured.

    Raises:
      ir.IRError: no trace is in progress (the program captured values of a
        trace that is not gradtape's).
      UnexpectedTracerError: a leaf leaked out of a trace that has ended.
    """
    builder = current_builder(leaves)
    if builder is None:
        raise ir.IRError(
            f"{fname} reads an abstract tensor of an enclosing trace that is not a gradtape "
            "transform (differentiable, grad, value_and_grad), so there is nowhere to stage "
            "it; pass that tensor to the function as an argument instead of closing over it"
        )
    return builder


def stage(program, leaves, fname: str):
    """Inline `program` on `leaves` into the enclosing trace; abstract results."""
    builder = enclosing_builder(leaves, fname)
    atoms = []
    for x, v in zip(leaves, program.source.invars):
        if isinstance(x, Tensor):
            atoms.append(x._sym.atom if x._sym is not None else ir.Literal(x._value))
        else:  # a concrete argument is a constant of the enclosing trace
            atoms.append(ir.Literal(x, v.type.dtype))
    atoms.extend(program.captured)
    outs = inline(program.source, builder, atoms)  # the traced program: derivatives are taken of it
    return program.assemble([Tensor(sym=ir.Sym(a, builder)) for a in outs])
