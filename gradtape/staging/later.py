"""The functions vjp and linearize return: a pullback and a linear map.

Each holds the residuals of one primal point (arrays, or abstract Tensors
inside a trace) and the Program of the linear half; a call checks its
argument against the types it must have and runs that Program on
(residuals, argument leaves), compiled like any staged call, inlined inside
an enclosing trace.
"""
from __future__ import annotations

import pickle

import numpy as np

from ..tracer import tree
from ..tracer.tensor import Tensor
from ..tracer import signature
from . import pickling
from .staged import invoke


class _Later:
    __slots__ = ("_program", "_residuals", "_types", "_structure", "_fname")

    def __init__(self, program, residuals, types, structure, fname):
        self._program = program
        self._residuals = list(residuals)
        self._types = types  # what each argument leaf must be
        self._structure = structure  # the argument's structure, leaves None
        self._fname = fname

    def _run(self, value):
        flat = tree.flatten(value)
        if len(flat) != len(self._types) or tree.unflatten(value, [None] * len(flat)) != self._structure:
            raise TypeError(
                f"{self._name}({self._fname}): expected {self._what} with the structure "
                f"{self._structure!r} ({len(self._types)} arrays), got {_describe(value)}"
            )
        leaves = []
        for k, (x, ty) in enumerate(zip(flat, self._types)):
            shape, dtype = _shape_dtype(x)
            if shape != ty.shape or dtype != ty.dtype:
                raise TypeError(
                    f"{self._name}({self._fname}): {self._what} {k} has shape {shape} and dtype "
                    f"{dtype}, expected shape {ty.shape} and dtype {ty.dtype}"
                )
            leaves.append(x)
        sig = signature.describe(tuple(self._residuals) + tuple(leaves), (), self._fname)
        return invoke(self._program, sig, self._fname)

    def __reduce__(self):
        # What travels: the residuals (arrays) and the linear half's IR and machine code, so that
        # a receiver runs it without tracing (pickling.unpack_program checks the code's machine).
        if self._program.captured or any(isinstance(r, Tensor) for r in self._residuals):
            raise pickle.PicklingError(
                f"cannot pickle the {self._name} of {self._fname} made inside a trace: its residuals are "
                "abstract; pickle one made by a concrete call")
        packed = pickling.pack_program(self._program, self._fname)
        return (_rebuild, (type(self), packed, self._residuals, self._types, self._structure, self._fname))


def _rebuild(cls, packed, residuals, types, structure, fname):
    return cls(pickling.unpack_program(*packed, fname), residuals, types, structure, fname)


class Pullback(_Later):
    """`vjp`'s pullback: cotangents of the outputs -> one cotangent per primal (a tuple).

    Call it any number of times; each call runs only the backward half,
    compiled once per signature.
    """

    _name, _what = "vjp", "a cotangent"

    def __call__(self, cotangent):
        return self._run(cotangent)


class LinearMap(_Later):
    """`linearize`'s map: tangents of the primals (one per primal) -> output tangents."""

    _name, _what = "linearize", "a tangent"

    def __call__(self, *tangents):
        return self._run(tangents)


def _shape_dtype(x):
    if isinstance(x, (Tensor, np.ndarray)):
        return tuple(x.shape), np.dtype(x.dtype)
    a = np.asarray(x)
    return a.shape, a.dtype


def _describe(value) -> str:
    flat = tree.flatten(value)
    if len(flat) == 1 and flat[0] is value:
        shape, dtype = _shape_dtype(value)
        return f"one array of shape {shape} and dtype {dtype}"
    return f"{type(value).__name__} of {len(flat)} leaves: {tree.unflatten(value, [None] * len(flat))!r}"
