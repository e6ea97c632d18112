"""Scalar code of fmod, remainder and floor_divide, computing what NumPy's
ufuncs compute, special values included (ir/ops/elementwise_division.py).

Floats follow NumPy's divmod: mod = fmod(x, y) (LLVM `frem`, exact);
remainder moves mod by y where mod is nonzero and its sign differs from y's
(a zero remainder takes y's sign); floor_divide is (x - mod) / y, less one
after that move, snapped to the nearest integer, and x / y where y == 0.
Integers: C's truncating division fixed up to floor division; a zero
divisor gives 0, and y == -1 is handled apart (INT_MIN / -1 overflows in
LLVM, and wraps to INT_MIN in NumPy).
"""
from __future__ import annotations

from ..ir import ops
from .dtypes import constant, is_bool, is_float, is_signed
from .lowered import Unsupported
from .math_ir import emit_intrinsic


class _FloatDivmod:
    """The pieces of NumPy's float divmod of x by y, built lazily on one builder."""

    def __init__(self, b, d, x, y):
        self.b, self.d, self.x, self.y = b, d, x, y
        zero = constant(d, 0)
        self.zero = zero
        self.mod = b.frem(x, y)
        signs_differ = b.xor(b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", self.mod, zero))
        self.move = b.and_(b.fcmp_unordered("!=", self.mod, zero), signs_differ)  # NaN counts as nonzero
        self.y_is_zero = b.fcmp_ordered("==", y, zero)

    def remainder(self):
        b = self.b
        moved = b.select(self.move, b.fadd(self.mod, self.y), self.mod)
        signed_zero = emit_intrinsic(b, "llvm.copysign", self.zero, self.y)
        moved = b.select(b.fcmp_ordered("==", self.mod, self.zero), signed_zero, moved)
        return b.select(self.y_is_zero, self.mod, moved)

    def floor_divide(self):
        b, d = self.b, self.d
        quotient = b.fdiv(self.x, self.y)
        div = b.fdiv(b.fsub(self.x, self.mod), self.y)
        div = b.select(self.move, b.fsub(div, constant(d, 1)), div)
        floor = emit_intrinsic(b, "llvm.floor", div)
        snapped = b.select(b.fcmp_ordered(">", b.fsub(div, floor), constant(d, 0.5)),
                           b.fadd(floor, constant(d, 1)), floor)
        signed_zero = emit_intrinsic(b, "llvm.copysign", self.zero, quotient)
        snapped = b.select(b.fcmp_ordered("==", div, self.zero), signed_zero, snapped)
        return b.select(self.y_is_zero, quotient, snapped)


def _int_parts(b, d, x, y):
    """(safe divisor, truncated quotient, C remainder, whether y is 0, whether y is -1)."""
    zero, one = constant(d, 0), constant(d, 1)
    y_is_zero = b.icmp_unsigned("==", y, zero)
    if is_signed(d):
        y_is_minus_one = b.icmp_signed("==", y, constant(d, -1))
        safe = b.select(b.or_(y_is_zero, y_is_minus_one), one, y)
        return safe, b.sdiv(x, safe), b.srem(x, safe), y_is_zero, y_is_minus_one
    safe = b.select(y_is_zero, one, y)
    return safe, b.udiv(x, safe), b.urem(x, safe), y_is_zero, None


def _int_floor_fix(b, d, rem, y):
    """Whether a truncated division by y left a remainder of the other sign (floor is one lower)."""
    zero = constant(d, 0)
    if not is_signed(d):
        return None
    return b.and_(b.icmp_signed("!=", rem, zero),
                  b.xor(b.icmp_signed("<", rem, zero), b.icmp_signed("<", y, zero)))


def _int_remainder(b, d, x, y, floored=True):
    """remainder (floored: the divisor's sign) or fmod (truncated: the dividend's)."""
    _, _, rem, y_is_zero, y_is_minus_one = _int_parts(b, d, x, y)
    fix = _int_floor_fix(b, d, rem, y) if floored else None
    if fix is not None:
        rem = b.select(fix, b.add(rem, y), rem)
    zero_result = y_is_zero if y_is_minus_one is None else b.or_(y_is_zero, y_is_minus_one)
    return b.select(zero_result, constant(d, 0), rem)


def _int_floor_divide(b, d, x, y):
    safe, quotient, rem, y_is_zero, y_is_minus_one = _int_parts(b, d, x, y)
    fix = _int_floor_fix(b, d, rem, y)
    if fix is not None:
        quotient = b.select(fix, b.sub(quotient, constant(d, 1)), quotient)
        quotient = b.select(y_is_minus_one, b.neg(x), quotient)  # wraps at INT_MIN, as NumPy
    return b.select(y_is_zero, constant(d, 0), quotient)


def _maker(float_method, int_fn):
    def make(in_dtypes, out_dtype, **params):
        d = in_dtypes[0]
        if is_bool(d):
            raise Unsupported(f"{float_method} of bools: convert them to an integer type first")
        if is_float(d):
            return lambda k, v: getattr(_FloatDivmod(k.b, d, v[0], v[1]), float_method)()
        return lambda k, v: int_fn(k.b, d, v[0], v[1])

    return make


def _float_fmod(d):
    return lambda k, v: k.b.frem(v[0], v[1])


def make_fmod(in_dtypes, out_dtype, **params):
    d = in_dtypes[0]
    if is_float(d):
        return _float_fmod(d)
    return lambda k, v: _int_remainder(k.b, d, v[0], v[1], floored=False)


DIVISION = {
    ops.fmod_p: make_fmod,
    ops.remainder_p: _maker("remainder", _int_remainder),
    ops.floor_divide_p: _maker("floor_divide", _int_floor_divide),
}
"""The scalar makers of the division ops, merged into scalar.SCALAR."""
