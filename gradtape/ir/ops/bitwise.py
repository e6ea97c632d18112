"""Bitwise ops on integers and bools: and, or, xor, invert and the two shifts, as NumPy computes them.

    { a:i64[3] b:i64[3] . c:i64[3] = bitwise_and a b -> c }

On bools, and/or/xor/invert are the logical ops (NumPy's `&` of two bool
arrays is `logical_and`); floats are refused, as NumPy refuses them. The
shifts are integers only, and follow NumPy's rule for a count outside
0..bits-1 (a negative count included, which NumPy reads as a huge unsigned
one): `left_shift` gives 0, `right_shift` gives 0, or -1 for a negative
signed operand. (C and LLVM leave those undefined; codegen/scalar_bitwise.py
emits the rule.)

Integer results carry no derivative: none of these ops is differentiable.
"""
from __future__ import annotations

import numpy as np

from ..builder import bind
from ..errors import DTypeError
from ..op import batching_rules, impls, new_op, shape_rules
from ..types import TensorType
from ._helpers import broadcast_shapes, same_dtype
from .elementwise import _broadcasting_batch_rule

__all__ = [
    "bitwise_and_p", "bitwise_or_p", "bitwise_xor_p", "bitwise_invert_p", "left_shift_p", "right_shift_p",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert", "left_shift", "right_shift",
]


def _check_kind(op, t, kinds):
    if t.dtype.kind not in kinds:
        allowed = "integer or bool" if "b" in kinds else "integer"
        raise DTypeError(f"{op.name}: operands must be {allowed}, got {t} (NumPy refuses {op.name} of floats too)")


def _declare(name, impl, arity, kinds, **facts):
    op = new_op(name, elementwise=True, can_fail_on_values=False, runs_code=False, differentiable=False,
                cheap=True, **facts)

    def shape_rule(*types):
        dtype = same_dtype(op, types)
        for t in types:
            _check_kind(op, t, kinds)
        return TensorType(broadcast_shapes(op, types) if arity > 1 else types[0].shape, dtype)

    shape_rules[op] = shape_rule
    impls[op] = impl
    batching_rules[op] = _broadcasting_batch_rule(op)
    return op


def _shift(np_fn):
    def impl(x, y):
        x, y = np.asarray(x), np.asarray(y)
        return np.asarray(np_fn(x, y), dtype=x.dtype)

    return impl


bitwise_and_p = _declare("bitwise_and", np.bitwise_and, 2, "iub", commutative=True)
bitwise_or_p = _declare("bitwise_or", np.bitwise_or, 2, "iub", commutative=True)
bitwise_xor_p = _declare("bitwise_xor", np.bitwise_xor, 2, "iub", commutative=True)
bitwise_invert_p = _declare("bitwise_invert", np.invert, 1, "iub")
left_shift_p = _declare("left_shift", _shift(np.left_shift), 2, "iu", right_identity=0)
right_shift_p = _declare("right_shift", _shift(np.right_shift), 2, "iu", right_identity=0)


def bitwise_and(x, y): return bind(bitwise_and_p, x, y)
def bitwise_or(x, y): return bind(bitwise_or_p, x, y)
def bitwise_xor(x, y): return bind(bitwise_xor_p, x, y)
def bitwise_invert(x): return bind(bitwise_invert_p, x)
def left_shift(x, y): return bind(left_shift_p, x, y)
def right_shift(x, y): return bind(right_shift_p, x, y)
