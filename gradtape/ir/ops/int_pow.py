"""`int_pow`: x ** y for integer x and y of one dtype, computed as NumPy's power computes it.

The result is exact modulo 2**bits: NumPy's integer loops multiply by
squaring and wrap on overflow (np.int64(3) ** 41 is negative), and any
order of the same multiplications gives the same bits, so native code
(codegen/scalar_int_pow.py) and this reference agree bit for bit.

NumPy raises `ValueError: Integers to negative integer powers are not
allowed.` for a negative exponent. The front end (functions/elementwise.py
`power`) raises it for every exponent whose value it knows: eagerly, and
while tracing for a literal or constant exponent. A negative exponent known
only when staged code runs cannot raise there, so the op defines it as the
integer part of the true value, 1 / x ** -y truncated toward zero: 1 for
x == 1, (-1) ** y for x == -1, and 0 for every other x (0 ** -n too, as
NumPy's integer division by zero gives 0).

Integer results carry no derivative: the op is not differentiable, and a
float base with an integer exponent is the float op `pow`.

    { a:i64[3] b:i64[] . c:i64[3] = int_pow a b -> c }
"""
from __future__ import annotations

import numpy as np

from ..builder import bind
from ..errors import DTypeError
from ..op import batching_rules, impls, new_op, shape_rules
from ..types import TensorType
from ._helpers import broadcast_shapes, same_dtype
from .elementwise import _broadcasting_batch_rule

__all__ = ["int_pow_p", "int_pow", "NEGATIVE_POWER_MESSAGE"]

NEGATIVE_POWER_MESSAGE = "Integers to negative integer powers are not allowed."  # NumPy's, word for word

int_pow_p = new_op("int_pow", elementwise=True, can_fail_on_values=False, runs_code=False,
                   differentiable=False, right_identity=1)


def _shape(x, y):
    dtype = same_dtype(int_pow_p, (x, y))
    if dtype.kind not in "iu":
        raise DTypeError(f"int_pow: operands must be integers, got {x} and {y}; a float base or exponent "
                         "is the op pow, and bools are raised to powers as int8 (as NumPy does)")
    return TensorType(broadcast_shapes(int_pow_p, (x, y)), dtype)


def _impl(x, y):
    x, y = np.asarray(x), np.asarray(y)
    negative = y < 0
    with np.errstate(over="ignore"):
        out = np.power(x, np.where(negative, 0, y).astype(y.dtype))
    if negative.any():
        minus_one = np.where(y & 1, -1, 1)  # (-1) ** y
        fraction = np.where(x == 1, 1, np.where(x == -1, minus_one, 0))
        out = np.where(negative, fraction, out)
    return np.asarray(out, dtype=x.dtype)


shape_rules[int_pow_p] = _shape
impls[int_pow_p] = _impl
batching_rules[int_pow_p] = _broadcasting_batch_rule(int_pow_p)


def int_pow(x, y): return bind(int_pow_p, x, y)
