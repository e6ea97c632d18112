"""The lowering table: one Rule per op, `RULES[op]`.

    rule.lower(ctx, eqn, *operand_nodes) -> Node

returns the Node of the equation's value. Elementwise and layout ops
("fusable") return a Node that computes elements on demand, so whoever
reads it inlines it; the fusion planner decides which of them are stored
anyway. The other kinds add a step that writes the value into a buffer and
return a View of it; `kind` also tells the planner how they read their
operands:

    elementwise   reads operands at its own index (broadcast ones elsewhere)
    layout        reads its operand at remapped indices
    reduction     iterates its operand's index space once (the loop fuses it)
    per_operand   concatenate: one loop per operand over the operand's space
    scatter       iterates the updates once, the indices once per update
    contract      reads operands once (BLAS views them or copies them)
    inlined       `call`, `custom_vjp`, `custom_jvp`: replaced by their (primal)
                  sub-Function before lowering

`cheap` marks ops worth recomputing rather than storing when a value is read
a few times (a predicate of the equation where it depends on the params or
operands: x ** 2 is a multiplication, x ** 2.7 a call of pow).
custom_gradient has no rule: it runs Python, so lowering raises
Unsupported for it.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..ir import Literal, all_ops
from ..ir.op import Op
from . import layout
from .contract import lower_contract
from .nodes import Const, Map, View
from .scalar import BINARY, COMPARE, UNARY, make_cast, make_where, pow_by_constant
from .reductions import ArgReduce
from .steps import Fill, ScatterAdd


@dataclasses.dataclass(frozen=True)
class Rule:
    lower: Callable
    kind: str
    cheap: bool | Callable = False

    @property
    def fusable(self) -> bool:
        return self.kind in ("elementwise", "layout")

    def is_cheap(self, eqn) -> bool:
        return self.cheap(eqn) if callable(self.cheap) else self.cheap


def _elementwise(make, cheap=True):
    def lower(ctx, eqn, *ins):
        emit = make([x.dtype for x in ins], eqn.out.type.dtype, **eqn.params)
        return Map(eqn.out.type, emit, ins)

    return Rule(lower, "elementwise", cheap)


def _lower_pow(ctx, eqn, x, y):
    out = eqn.out.type
    if isinstance(y, Const) and x.shape == out.shape:  # x ** literal: multiplications
        emit = pow_by_constant(y.value, out.dtype)
        if emit is not None:
            return Map(out, emit, [x])
    return Map(out, BINARY["pow"]([x.dtype, y.dtype], out.dtype), [x, y])


def _pow_is_cheap(eqn) -> bool:
    """x ** 1, 2, 3 or 4 (a literal): at most three multiplications."""
    y = eqn.inputs[1]
    if not isinstance(y, Literal) or np.size(y.value) != 1:
        return False
    c = float(np.asarray(y.value).reshape(()))
    return c == int(c) and 0 <= c <= 4


def _lower_cast(ctx, eqn, x):
    if x.dtype == eqn.out.type.dtype:
        return x
    return Map(eqn.out.type, make_cast([x.dtype], eqn.out.type.dtype), [x])


def _identity(ctx, eqn, x):
    return x


def _reduction(kind):
    return Rule(lambda ctx, eqn, x: ctx.reduce(x, eqn.params["axes"], kind, ctx.dest(eqn.out)), "reduction")


def _arg(kind):
    def lower(ctx, eqn, x):
        dest = ctx.dest(eqn.out)
        ctx.add(ArgReduce(dest, x, eqn.params["axis"], kind))
        return dest

    return Rule(lower, "reduction")


def _lower_scatter_add(ctx, eqn, x, idx):
    dest = ctx.dest(eqn.out)
    ctx.add(ScatterAdd(dest, x, idx, eqn.params["axis"]))
    return dest


def _lower_concatenate(ctx, eqn, *xs):
    dest = ctx.dest(eqn.out)
    axis = eqn.params["axis"]
    at = 0
    for x in xs:
        part = View(dest.buffer, x.type, dest.offset + at * dest.strides[axis], dest.strides)
        ctx.add(Fill(part, x))
        at += x.shape[axis]
    return dest


def _call_is_inlined(ctx, eqn, *xs):
    raise AssertionError(f"{eqn.op.name} equations are inlined before lowering (codegen/inline.py)")


def _layout(fn, cheap=True):
    return Rule(fn, "layout", cheap)


_p = all_ops
RULES: dict[Op, Rule] = {}
for _name, _make in (*UNARY.items(), *BINARY.items(), *COMPARE.items()):
    # The op's `cheap` fact: neg/abs/add/... are about one instruction; exp, div, ... are not.
    RULES[_p[_name]] = _elementwise(_make, cheap=_p[_name].cheap)
RULES.update({
    _p["pow"]: Rule(_lower_pow, "elementwise", cheap=_pow_is_cheap),
    _p["cast"]: Rule(_lower_cast, "elementwise", cheap=True),
    _p["where"]: _elementwise(make_where),
    _p["stop_gradient"]: Rule(_identity, "elementwise", cheap=True),
    _p["broadcast_to"]: _layout(lambda ctx, eqn, x: layout.broadcast_to(x, eqn.out.type)),
    _p["reshape"]: _layout(lambda ctx, eqn, x: layout.reshape(x, eqn.out.type)),
    _p["transpose"]: _layout(lambda ctx, eqn, x: layout.transpose(x, eqn.out.type, eqn.params["perm"])),
    _p["slice"]: _layout(lambda ctx, eqn, x: layout.slice_(
        x, eqn.out.type, eqn.params["starts"], eqn.params["steps"])),
    _p["pad"]: _layout(lambda ctx, eqn, x: layout.pad(
        x, eqn.out.type, eqn.params["pad_width"], eqn.params["value"])),
    _p["unslice"]: _layout(lambda ctx, eqn, x: layout.unslice(
        x, eqn.out.type, eqn.params["starts"], eqn.params["steps"])),
    _p["gather"]: _layout(lambda ctx, eqn, x, idx: layout.gather(x, idx, eqn.out.type, eqn.params["axis"])),
    _p["reduce_sum"]: _reduction("sum"),
    _p["reduce_prod"]: _reduction("prod"),
    _p["reduce_max"]: _reduction("max"),
    _p["reduce_min"]: _reduction("min"),
    _p["argmax"]: _arg("argmax"),
    _p["argmin"]: _arg("argmin"),
    _p["scatter_add"]: Rule(_lower_scatter_add, "scatter"),
    _p["concatenate"]: Rule(_lower_concatenate, "per_operand"),
    _p["contract"]: Rule(lower_contract, "contract"),
    _p["call"]: Rule(_call_is_inlined, "inlined"),
    _p["custom_vjp"]: Rule(_call_is_inlined, "inlined"),
    _p["custom_jvp"]: Rule(_call_is_inlined, "inlined"),
})
