"""Scalar code of int_pow (ir/ops/int_pow.py): x ** y for integers, wrapping as NumPy's.

Exponentiation by squaring over every bit the exponent can have, as straight
line code with selects (no loop per element, so the loop vectorizer widens
it; with a constant exponent LLVM folds the selects and keeps only the
multiplications it needs). LLVM's `mul` wraps modulo 2**bits, which is
what NumPy's loops compute. A negative exponent gives the op's defined
value: 1 for x == 1, (-1) ** y for x == -1, else 0.
"""
from __future__ import annotations

from ..ir import ops
from .dtypes import constant, is_signed, value_type


def _int_pow(b, d, x, y):
    one, zero = constant(d, 1), constant(d, 0)
    bits = value_type(d).width - (1 if is_signed(d) else 0)  # a signed y >= 0 has its top bit clear
    acc, base, e = one, x, y
    for i in range(bits):
        bit = b.icmp_unsigned("!=", b.and_(e, one), zero)
        acc = b.select(bit, b.mul(acc, base), acc)
        if i + 1 < bits:
            base = b.mul(base, base)
            e = b.lshr(e, one)
    if not is_signed(d):
        return acc
    minus_one = constant(d, -1)
    odd = b.icmp_unsigned("!=", b.and_(y, one), zero)
    fraction = b.select(b.icmp_signed("==", x, one), one,
                        b.select(b.icmp_signed("==", x, minus_one), b.select(odd, minus_one, one), zero))
    return b.select(b.icmp_signed("<", y, zero), fraction, acc)


def make_int_pow(in_dtypes, out_dtype, **params):
    d = in_dtypes[0]
    return lambda k, v: _int_pow(k.b, d, v[0], v[1])


INT_POW = {ops.int_pow_p: make_int_pow}
"""The scalar maker of int_pow, merged into scalar.SCALAR."""
