"""The operands of equations: Var (a value defined once) and Literal (a constant).

They are the leaves the printer names, so they live apart from Eqn and
Function (core.py), which print themselves through the printer.
"""
from __future__ import annotations

from .frozen import frozen
from .types import TensorType, type_of


class Var:
    """A value defined once: a Function input or one equation's output."""

    __slots__ = ("type",)

    def __init__(self, type: TensorType):
        self.type = type

    def __repr__(self):
        return f"Var({self.type})"


class Literal:
    """A constant operand. Scalars print by value; arrays print as their type.

    The value is captured when the Literal is made: an array someone else can
    still write (a user's array a traced function closes over) is copied, and
    the caller's array keeps its flags (frozen.py).
    """

    __slots__ = ("value", "type")

    def __init__(self, value, dtype=None):
        value = frozen(value, dtype)
        if not value.dtype.isnative:  # its type is native (TensorType), and so its bytes, for code generation
            value = value.astype(value.dtype.newbyteorder("="))
            value.flags.writeable = False
        self.value = value
        self.type = type_of(value)

    def __repr__(self):
        return f"Literal({self.value!r})"

    def __reduce__(self):
        # Through the constructor, so the unpickled value is read-only again.
        return (Literal, (self.value,))


Atom = Var | Literal
