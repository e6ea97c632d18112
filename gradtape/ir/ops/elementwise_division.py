"""Floor division and remainders: fmod, remainder (NumPy's `%`) and
floor_divide (`//`), on floats and integers, with NumPy's sign conventions.

Each is one op, so native code computes NumPy's exact algorithm
(codegen/scalar_division.py): fmod is C's fmod (exact, LLVM `frem`), the sign
of x; remainder is fmod moved by y when the signs differ, so it has y's sign;
floor_divide is (x - fmod) / y snapped to the integer, as NumPy's divmod
computes it. Integer division by zero gives 0 (NumPy warns and gives 0).

Derivatives: fmod(x, y) = x - n y with n = trunc(x / y) and remainder(x, y)
= x - n y with n = floor(x / y), so both have d/dx = 1 and d/dy = -n, with n
recovered exactly as round((x - out) / y) (x / y itself may round across an
integer). n is piecewise constant, so the second derivatives are 0, and
floor_divide's derivative is 0 everywhere it exists.
"""
from __future__ import annotations

import numpy as np

from ..builder import bind
from ..op import jvp_rules, shape_rules, vjp_rules
from ._helpers import DTypeError
from .elementwise import _zeros_like, binary, round, sub


def _quotient_partials(x, y, out):
    return 1, lambda g: -(g * round(sub(x, out) / y))


def _as_numpy_ints(fn):
    """NumPy's ufunc, quiet: integer division by zero is 0 with a RuntimeWarning
    there, and compiled code gives the same 0 without one."""
    def impl(x, y):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return fn(x, y)

    impl.__name__ = fn.__name__
    return impl


fmod_p = binary("fmod", _as_numpy_ints(np.fmod), _quotient_partials)
remainder_p = binary("remainder", _as_numpy_ints(np.remainder), _quotient_partials)
floor_divide_p = binary("floor_divide", _as_numpy_ints(np.floor_divide), None, zero_derivative=True)


def _no_bools(op):
    numeric = shape_rules[op]

    def shape_rule(x, y):
        if x.dtype.kind == "b":
            raise DTypeError(f"{op.name}: operands must be numbers, got bool; cast them to int8 first (as NumPy does)")
        return numeric(x, y)

    shape_rules[op] = shape_rule


for _op in (fmod_p, remainder_p, floor_divide_p):
    _no_bools(_op)
vjp_rules[floor_divide_p] = lambda ct, out, x, y: (_zeros_like(out), _zeros_like(out))
jvp_rules[floor_divide_p] = lambda ts, out, x, y: _zeros_like(out)


def fmod(x, y): return bind(fmod_p, x, y)
def remainder(x, y): return bind(remainder_p, x, y)
def floor_divide(x, y): return bind(floor_divide_p, x, y)
