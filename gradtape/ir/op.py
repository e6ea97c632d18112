"""Ops and the rule tables keyed by them.

An op is one object. Everything the IR knows about it lives in tables keyed
by the op, filled side by side where the op is declared (gradtape/ir/ops/):

    shape_rules[op](*in_types, **params) -> TensorType      pure, never sees data
    impls[op](*arrays, **params) -> np.ndarray             the NumPy reference
    vjp_rules[op](ct, out, *ins, **params) -> (ct_in, ...)  builds IR, never numbers
    jvp_rules[op](tangents, out, *ins, **params) -> t_out   builds IR, never numbers
    batching_rules[op](axis_size, ins, batched, **params) -> out   builds IR (see below)

Rules receive `Sym`s (see builder.py) and emit equations by calling op
functions on them, so the derivative of a derivative is the same pass again.
A rule returns None for a symbolic zero. For ops in `elementwise_ops`
(NumPy broadcasting between operands) a VJP rule returns cotangents of the
*output's* shape and the adjoint pass sums them back to each operand's
shape, which is also where it applies `where`-masks.

A batching rule (used by the vectorization pass, batching.py) receives the
operands as Syms and, per operand, whether it carries a leading batch axis
of length `axis_size` (`batched[i]`); it returns the op applied to every
batch element, as one Sym with the batch axis leading. At least one operand
is batched; the others are shared by every batch element.

Ops whose outputs are not floating point (comparisons, argmax, ...) carry no
derivative; they are listed in `nondifferentiable_ops` instead of having
rules, and gradients do not flow through them.
"""
from __future__ import annotations

from .errors import MissingRuleError


class Op:
    """A primitive operation of the IR, identified by object identity."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


shape_rules: dict = {}
impls: dict = {}
vjp_rules: dict = {}
jvp_rules: dict = {}
batching_rules: dict = {}
elementwise_ops: set = set()
nondifferentiable_ops: set = set()
all_ops: dict = {}


def new_op(name: str, *, elementwise: bool = False, differentiable: bool = True) -> Op:
    """Declare an op; its rules are filled in by the caller right after."""
    if name in all_ops:
        raise ValueError(f"an op named {name!r} is already declared")
    op = Op(name)
    all_ops[name] = op
    if elementwise:
        elementwise_ops.add(op)
    if not differentiable:
        nondifferentiable_ops.add(op)
    return op


def rule(table: dict, op: Op, kind: str):
    """Look a rule up, failing with a message that names the op and the rule kind."""
    try:
        return table[op]
    except KeyError:
        raise MissingRuleError(f"op '{op.name}' has no {kind} rule") from None
