"""NumPy dtypes as LLVM types and constants.

Every value has a storage type (what sits in memory) and a value type (what
expressions compute with). They differ only for bool: NumPy stores a bool
as one byte holding 0 or 1, while expressions use i1 so that selects and
logic need no conversions.
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from .lowered import Unsupported

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()

_FLOATS = {np.dtype(np.float64): F64, np.dtype(np.float32): F32}


def storage_type(dtype) -> ir.Type:
    """The in-memory LLVM type of one element of `dtype`."""
    dtype = np.dtype(dtype)
    if dtype in _FLOATS:
        return _FLOATS[dtype]
    if dtype.kind == "b":
        return I8
    if dtype.kind in "iu":
        return ir.IntType(8 * dtype.itemsize)
    raise Unsupported(
        f"code generation supports float64, float32, integer and bool arrays, got {dtype}; "
        "cast to float32 or float64 first"
    )


def value_type(dtype) -> ir.Type:
    """The LLVM type expressions compute with (i1 for bool)."""
    return I1 if np.dtype(dtype).kind == "b" else storage_type(dtype)


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f"


def is_signed(dtype) -> bool:
    return np.dtype(dtype).kind == "i"


def is_bool(dtype) -> bool:
    return np.dtype(dtype).kind == "b"


def constant(dtype, value) -> ir.Constant:
    """`value` as a constant of `dtype`'s value type (ints wrap like NumPy's)."""
    dtype = np.dtype(dtype)
    t = value_type(dtype)
    if dtype.kind == "b":
        return ir.Constant(I1, int(bool(value)))
    if dtype.kind == "f":
        return ir.Constant(t, float(value))
    bits = t.width
    v = int(value) & ((1 << bits) - 1)
    if v >= 1 << (bits - 1):  # the IR parser reads integer literals as signed
        v -= 1 << bits
    return ir.Constant(t, v)


def from_storage(b: ir.IRBuilder, v, dtype):
    """A loaded element as a value (bytes 0/1 become i1)."""
    return b.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if is_bool(dtype) else v


def to_storage(b: ir.IRBuilder, v, dtype):
    """A value as the element to store (i1 becomes the byte 0 or 1)."""
    return b.zext(v, I8) if is_bool(dtype) else v
