"""Abstract tracing: run a Python function on abstract Tensors and capture
what it does as an ir.Function.

    >>> make_ir(lambda x: gradtape.sum(x * x), np.ones(3))
    { a:f64[3] . b:f64[3] = mul a a ; c:f64[] = reduce_sum[axes=(0,)] b -> c }

Arguments may be nested lists/tuples/dicts of arrays; every array-like leaf
(and Python scalar) becomes a Function input. Outputs may be nested too.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from . import tree
from .tensor import Tensor


class Traced:
    """A traced function: its Function plus the argument and result structures."""

    __slots__ = ("fn", "in_structure", "out_structure")

    def __init__(self, fn, in_structure, out_structure):
        self.fn = fn
        self.in_structure = in_structure
        self.out_structure = out_structure


def abstract_type(x) -> ir.TensorType:
    if isinstance(x, Tensor):
        return ir.TensorType(x.shape, x.dtype)
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.ndarray):
        return ir.TensorType(x.shape, x.dtype)  # a ShapeDtypeStruct-like spec
    return ir.type_of(x)


def result_atom(x):
    """The IR atom of a traced function's returned leaf, or None if it is not an array value.

    A Tensor of the trace gives its Var; a concrete Tensor, array or number (of a
    numeric or bool dtype) gives a Literal: a result that does not depend on the inputs.
    """
    if isinstance(x, Tensor):
        if x._sym is not None:
            return x._sym.atom
        return ir.Literal(np.array(x._value))
    if isinstance(x, (np.ndarray, np.generic, int, float, bool)):
        value = np.array(x)
        if value.dtype.kind in "fiub":
            return ir.Literal(value)
    return None


def trace(f, *args) -> Traced:
    """Trace `f(*args)` with abstract tensors of the arguments' shapes and dtypes."""
    builder = ir.Builder()
    leaves = tree.flatten(args)
    syms = [builder.input(abstract_type(a)) for a in leaves]
    abstract_args = tree.unflatten(args, [Tensor(sym=s) for s in syms])
    out = f(*abstract_args)
    flat_out = tree.flatten(out)
    atoms = []
    for i, o in enumerate(flat_out):
        if isinstance(o, Tensor) and o.is_abstract:
            if o._sym.builder is not builder:
                raise ir.IRError("a traced function returned a value from another trace")
            atoms.append(o._sym.atom)
        elif isinstance(o, (Tensor, np.ndarray, np.generic, int, float, bool)):
            atoms.append(ir.Literal(np.asarray(o)))  # a result that does not depend on inputs
        else:
            raise TypeError(
                f"a traced function must return Tensors (or nested lists/tuples/dicts "
                f"of them); output {i} is a {type(o).__name__}"
            )
    fn = builder.build([s.atom for s in syms], atoms)
    if ir.config.checks:
        ir.verify(fn)
    return Traced(fn, args, out)


def make_ir(f, *args) -> ir.Function:
    """The ir.Function that `f(*args)` traces to (like jax.make_jaxpr)."""
    return trace(f, *args).fn
