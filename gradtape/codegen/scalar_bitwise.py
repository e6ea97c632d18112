"""Scalar code of the bitwise ops (ir/ops/bitwise.py), as NumPy computes them.

and/or/xor/invert are one LLVM instruction on integers and on bools (i1).
A shift by a count outside 0..bits-1 is undefined in LLVM (poison) but
defined by NumPy, which reads the count as unsigned: left_shift gives 0,
right_shift 0, or -1 for a negative signed operand. So the count is
compared as unsigned with the width, and the shift's result replaced by
that value where it is too large (a select: the loop still vectorizes).
"""
from __future__ import annotations

from ..ir import ops
from .dtypes import constant, is_signed, value_type


def _bits(d):
    return constant(d, value_type(d).width)


def make_left_shift(in_dtypes, out_dtype, **params):
    d = in_dtypes[0]

    def emit(k, v):
        b, x, y = k.b, v[0], v[1]
        fits = b.icmp_unsigned("<", y, _bits(d))
        return b.select(fits, b.shl(x, y), constant(d, 0))

    return emit


def make_right_shift(in_dtypes, out_dtype, **params):
    d = in_dtypes[0]

    def emit(k, v):
        b, x, y = k.b, v[0], v[1]
        fits = b.icmp_unsigned("<", y, _bits(d))
        if is_signed(d):  # the sign fills: all ones for a negative x, 0 otherwise
            last = constant(d, value_type(d).width - 1)
            return b.ashr(x, b.select(fits, y, last))
        return b.select(fits, b.lshr(x, y), constant(d, 0))

    return emit


BITWISE = {
    ops.bitwise_and_p: lambda i, o, **p: lambda k, v: k.b.and_(v[0], v[1]),
    ops.bitwise_or_p: lambda i, o, **p: lambda k, v: k.b.or_(v[0], v[1]),
    ops.bitwise_xor_p: lambda i, o, **p: lambda k, v: k.b.xor(v[0], v[1]),
    ops.bitwise_invert_p: lambda i, o, **p: lambda k, v: k.b.not_(v[0]),
    ops.left_shift_p: make_left_shift,
    ops.right_shift_p: make_right_shift,
}
"""The scalar makers of the bitwise ops, merged into scalar.SCALAR."""
