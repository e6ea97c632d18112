"""The IR's data structures: Eqn and Function, over the atoms Var and Literal (atoms.py).

A Function is a flat list of equations in single-assignment form::

    { a:f64[3] . b:f64[3] = mul a a ; c:f64[] = reduce_sum[axes=(0,)] b -> c }

Everything is immutable; passes build new Functions. Vars compare by
identity, so the same Var object may appear in several Functions (a pass
that keeps the primal equations of its input shares their Vars).
"""
from __future__ import annotations

from .atoms import Atom, Literal, Var
from .printer import eqn_to_text, to_text

__all__ = ["Atom", "Eqn", "Function", "Literal", "Var"]


class Eqn:
    """`outvars = op[params] inputs`. params is a read-only dict of hashable values.

    Most ops have one output. An op in `op.multiple_results` (cond, scan, while,
    while_vjp) has one equation with several outputs, printed `c, d = cond[...] a b`:
    its shape rule gives a tuple of types and its reference a list of values, and
    its derivative and batching rules take and return one entry per output, so
    every pass handles the equation as one (evaluated once, differentiated once).
    """

    __slots__ = ("op", "inputs", "params", "outvars")

    def __init__(self, op, inputs, params, outvars):
        self.op = op
        self.inputs = tuple(inputs)
        self.params = params
        self.outvars = tuple(outvars)

    @property
    def out(self) -> Var:
        """The output of a single-output op (`outvars` holds every output)."""
        return self.outvars[0]

    def __repr__(self):
        return eqn_to_text(self)


class Function:
    """A typed, single-assignment program: `Function(invars, eqns, outvars)`.

    Outvars may be invars, equation outputs or Literals.

    Example::

        >>> from gradtape.ir.ops import mul_p
        >>> from gradtape.ir.types import TensorType
        >>> a = Var(TensorType((3,), np.float64))
        >>> b = Var(a.type)
        >>> print(Function([a], [Eqn(mul_p, [a, a], {}, [b])], [b]))
        { a:f64[3] . b:f64[3] = mul a a -> b }
    """

    __slots__ = ("invars", "eqns", "outvars")

    def __init__(self, invars, eqns, outvars):
        self.invars = tuple(invars)
        self.eqns = tuple(eqns)
        self.outvars = tuple(outvars)

    @property
    def in_types(self) -> tuple:
        return tuple(v.type for v in self.invars)

    @property
    def out_types(self) -> tuple:
        return tuple(v.type for v in self.outvars)

    def __str__(self):
        return to_text(self)

    def pretty(self) -> str:
        """Multi-line form of the canonical text, one equation a line."""
        return to_text(self, multiline=True)

    def __repr__(self):
        return f"Function({self})"
