"""Tracing the pieces of a user-defined derivative into Functions.

custom_vjp, custom_jvp and custom_gradient trace the user's function and its
rules with abstract Tensors, each piece in a Builder of its own, so that
their equations land in Functions held by a custom op's params, not in the
enclosing trace:

    trace_piece(lambda x: gt.sin(x), [f64[3]], "f")
    -> Piece(builder, invars=[a], out=<abstract Tensor b>)  # builder holds `b = sin a`

Values the piece reads from an enclosing trace without receiving them as
arguments are its free Vars (`free_vars`): custom_vjp and custom_jvp refuse
them (the rule could not differentiate them), custom_gradient treats them as
constants, as TensorFlow does.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .. import ir
from . import tape_stack, tree
from .errors import TracerError, add_note
from .tensor import Tensor
from .trace import free_vars as _free_vars
from .trace import result_atom
from .trace_context import tracing


class CustomRuleError(TracerError, ValueError):
    """A custom derivative (custom_vjp, custom_jvp, custom_gradient) is malformed:
    a rule returned the wrong structure, count, shape or dtype, or is missing."""


class paused_tapes:
    """No tape records inside this context (the custom function's own ops are
    not what a tape should differentiate: its custom op is)."""

    def __enter__(self):
        self.saved = list(tape_stack.active())
        tape_stack.active().clear()

    def __exit__(self, *exc):
        tape_stack.active()[:] = self.saved


class Piece:
    """One traced piece: its Builder, input Vars, and what the function returned
    (with abstract Tensors of `builder` among the leaves)."""

    __slots__ = ("builder", "invars", "out")

    def __init__(self, builder, invars, out):
        self.builder = builder
        self.invars = invars
        self.out = out


def trace_piece(call, in_types, what: str, reads=None) -> Piece:
    """Run `call(*abstract_tensors)` with one fresh input per type, in a Builder of its own.

    Every op it runs goes to that Builder (even ops on values of older traces
    only: it is the innermost trace, see trace_context.py), and no tape records. An exception gets a
    note naming `what`. With `reads` (a VariableReads, variable_reads.py), the Variables the call
    reads are collected by it; when it makes them inputs (`as_inputs`), they are inputs of this
    Builder, and the piece's `invars` end with theirs.
    """
    builder = ir.Builder()
    syms = [builder.input(t) for t in in_types]
    if reads is not None and reads.as_inputs:
        reads.builder = builder
    with tracing(builder), paused_tapes(), reads if reads is not None else contextlib.nullcontext():
        try:
            out = call(*[Tensor(sym=s) for s in syms])
        except Exception as err:
            types = ", ".join(map(str, in_types))
            add_note(err, f"(while gradtape traced {what} for the input types ({types}))")
            raise
    return Piece(builder, [s.atom for s in syms] + (reads.atoms if reads is not None else []), out)


def leaf_atom(x, what: str, position: str):
    """The IR atom of one returned leaf: a Var for an abstract Tensor, a Literal for a constant.

    Raises:
      CustomRuleError: for a leaf that is not a Tensor, array or number.
    """
    atom = result_atom(x)
    if atom is not None:
        return atom
    raise CustomRuleError(
        f"{what}: {position} is a {type(x).__name__} ({_short(x)}), not a Tensor, array or "
        "number; return gradtape Tensors (or arrays), nested in tuples, lists or dicts"
    )


def gradient_atom(g, want: ir.TensorType, label: str, what: str, whose: str):
    """None for None, else the atom of the cotangent `g`, which must have `want`'s shape and dtype.

    A Python scalar takes the dtype wanted (it has none of its own, as in
    NumPy's weak scalars); Tensors and arrays must match exactly.

    Raises:
      CustomRuleError: naming `what` (e.g. "gradient 0") and `whose` (e.g. "input 0").
    """
    if g is None:
        return None
    fix = "; give it exactly that shape and dtype (or None for zero)"
    if isinstance(g, Tensor) and g._sym is not None:
        got = g._sym.type
        atom = g._sym.atom
    elif isinstance(g, (Tensor, np.ndarray, np.generic, int, float, bool)):
        weak = type(g) in (int, float, bool)
        value = np.asarray(g._value if isinstance(g, Tensor) else g, want.dtype if weak else None)
        got = ir.type_of(value)
        atom = ir.Literal(value)
    else:
        raise CustomRuleError(f"{label}: {what} is a {type(g).__name__} ({_short(g)}), not a Tensor{fix}")
    if got.shape != want.shape:
        raise CustomRuleError(f"{label}: {what} has shape {got.shape} but {whose} has shape {want.shape}{fix}")
    if got.dtype != want.dtype:
        raise CustomRuleError(f"{label}: {what} has dtype {got.dtype} but {whose} has dtype {want.dtype}{fix}")
    return atom


def free_vars(piece: Piece, outvars) -> list:
    """Vars that the piece's equations or outputs read but neither receive nor define."""
    return _free_vars(piece.invars, piece.builder.eqns, outvars)


def refuse_captures(piece: Piece, outvars, what: str, name: str):
    """Raise when the piece reads values of an enclosing trace (see the module doc)."""
    captured = free_vars(piece, outvars)
    if captured:
        types = ", ".join(str(v.type) for v in captured)
        raise CustomRuleError(
            f"{what} of '{name}' reads {len(captured)} traced value(s) of an enclosing "
            f"function ({types}) that it does not receive as arguments; a custom rule cannot "
            "differentiate with respect to such values. Pass them to the custom function "
            "as arguments instead of closing over them."
        )


def build(piece: Piece, outvars, invars=None) -> ir.Function:
    """The piece as a Function of `invars` (its own inputs by default), dead code removed."""
    fn = ir.dce(ir.Function(piece.invars if invars is None else invars, piece.builder.eqns, outvars))
    if ir.config.checks:
        ir.verify(fn)
    return fn


def structure_text(x) -> str:
    """`a tuple of 2 values`, `a Tensor f64[3]`, `None`: what a rule returned, for errors."""
    if x is None:
        return "None"
    if isinstance(x, Tensor):
        return f"a Tensor {ir.TensorType(x.shape, x.dtype)}"
    if isinstance(x, (list, tuple, dict)):
        n = len(tree.flatten(x))
        return f"a {type(x).__name__} of {len(x)} item{'s' if len(x) != 1 else ''} ({n} leaves)"
    if isinstance(x, (np.ndarray, np.generic)):
        return f"an array {ir.type_of(x)}"
    return f"a {type(x).__name__}"


def type_text(x) -> str:
    """The type of a leaf a rule returned (`f64[3]`), for errors."""
    if isinstance(x, Tensor):
        return str(ir.TensorType(x.shape, x.dtype))
    try:
        return str(ir.type_of(x))
    except Exception:  # noqa: BLE001  (only for a message)
        return type(x).__name__


def _short(x) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."
