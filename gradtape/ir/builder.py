"""Emitting equations: Builder, the symbolic value Sym, and `bind`.

Derivative rules and passes construct IR by calling op functions on Syms,
just as user code calls NumPy functions on arrays::

    b = Builder()
    x = b.input(TensorType((3,), np.float64))
    y = exp(x) * 2.0          # appends: mul (exp x) 2.0
    fn = b.build([x], [y])

Python scalars mixed with Syms become Literals of the Sym's dtype, and an op
whose operands are all scalar Literals is folded to a Literal at once.
"""
from __future__ import annotations

import itertools

import numpy as np

from .core import Eqn, Function, Literal, Var
from .errors import IRError
from .op import impls, multiple_results, rule, shape_rules


_serials = itertools.count()


class Builder:
    """Accumulates equations; `build` turns them into a Function.

    `serial` orders builders by creation: a pass that copies another
    builder's equations (sharing their Vars) is newer, so code that mixes
    values of both emits into the newer one.
    """

    __slots__ = ("eqns", "serial")

    def __init__(self):
        self.eqns = []
        self.serial = next(_serials)

    def input(self, type) -> "Sym":
        return Sym(Var(type), self)

    def sym(self, atom) -> "Sym":
        return Sym(atom, self)

    def literal(self, value, dtype=None) -> "Sym":
        return Sym(Literal(value, dtype), self)

    def bind(self, op, atoms, params):
        """Append `out = op[params] atoms`, typing `out` with the op's shape rule: the Var, or
        for an op of several results (op.multiple_results) the tuple of its Vars."""
        out_type = shape_of(op, [a.type for a in atoms], params)
        if op in multiple_results:
            outs = tuple(Var(t) for t in out_type)
            self.eqns.append(Eqn(op, atoms, params, outs))
            return outs
        out = Var(out_type)
        self.eqns.append(Eqn(op, atoms, params, (out,)))
        return out

    def build(self, invars, outvars) -> Function:
        return Function(
            [_atom(v) for v in invars], self.eqns, [_atom(v) for v in outvars]
        )


# (op, *input types, *params.items()) -> the op's shape rule's answer. A traced Python loop
# binds the same ops on the same types every step; types and params are immutable and hash by
# value, and a rule's answer depends on nothing else. Errors are raised, never stored.
_shapes: dict = {}
_MAX_SHAPES = 1 << 16


def shape_of(op, types, params):
    """The type (a tuple of types for op.multiple_results) of op on operands of these types."""
    if op.runs_code:  # its params hold Functions: keyed by identity, they would be kept alive here
        return rule(shape_rules, op, "shape")(*types, **params)
    key = (op, *types, *params.items())
    try:
        hit = _shapes.get(key)
    except TypeError:  # an unhashable param: the rule says what it thinks of it
        return rule(shape_rules, op, "shape")(*types, **params)
    if hit is None:
        hit = rule(shape_rules, op, "shape")(*types, **params)
        if len(_shapes) >= _MAX_SHAPES:
            _shapes.clear()
        _shapes[key] = hit
    return hit


def _atom(x):
    return x.atom if isinstance(x, Sym) else x


class Sym:
    """A symbolic value under construction: an atom plus the Builder it lives in.

    Arithmetic operators are installed by gradtape.ir.ops so that rules read
    like the math (`ct * (1.0 - out * out)`).
    """

    __slots__ = ("atom", "builder")
    __array_priority__ = 10_000  # numpy scalars on the left defer to us

    def __init__(self, atom, builder: Builder):
        self.atom = atom
        self.builder = builder

    @property
    def type(self):
        return self.atom.type

    @property
    def shape(self):
        return self.atom.type.shape

    @property
    def dtype(self):
        return self.atom.type.dtype

    @property
    def ndim(self):
        return self.atom.type.ndim

    @property
    def is_literal(self) -> bool:
        return isinstance(self.atom, Literal)

    def literal_value(self):
        """The constant value if this is a scalar Literal, else None."""
        a = self.atom
        if isinstance(a, Literal) and a.value.ndim == 0:
            return a.value.item()
        return None

    def __bool__(self):
        raise IRError(
            "the truth value of a symbolic IR value is unknown while building IR; "
            "use gradtape.ir.ops.where to select between values"
        )

    def __repr__(self):
        return f"Sym({self.atom!r})"


def bind(op, *args, **params) -> Sym:
    """Emit `op` applied to Syms (and Python scalars) into their Builder (a tuple of Syms for
    an op of several results)."""
    builder = None
    dtype = None
    for a in args:  # Python scalars take the dtype of a floating (real or complex) Sym if any
        if isinstance(a, Sym):
            if builder is None:
                builder, dtype = a.builder, a.dtype
            if a.dtype.kind in "fc":
                dtype = a.dtype
                break
    if builder is None:
        raise IRError(f"bind({op.name}) needs at least one Sym operand, got {args!r}")
    atoms = []
    for a in args:
        if isinstance(a, Sym):
            atoms.append(a.atom)
        elif isinstance(a, (Var, Literal)):
            atoms.append(a)
        else:
            atoms.append(Literal(a, dtype))
    if op in multiple_results:
        return tuple(Sym(v, builder) for v in builder.bind(op, atoms, params))
    if all(isinstance(a, Literal) and a.value.ndim == 0 for a in atoms):
        out_type = shape_rules[op](*[a.type for a in atoms], **params)
        if out_type.shape == ():  # fold scalar constants; never materialize arrays
            with np.errstate(all="ignore"):  # IEEE results (1 / 0.0 is inf), as the interpreter gives
                value = impls[op](*[a.value for a in atoms], **params)
            return Sym(Literal(np.asarray(value, dtype=out_type.dtype)), builder)
    return Sym(builder.bind(op, atoms, params), builder)
