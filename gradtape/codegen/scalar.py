"""Scalar code of the elementwise ops that are not math functions (those are
in math.py's table), matching NumPy's ufuncs exactly.

`SCALAR[op]` is the op's maker: it takes the operand dtypes, the result dtype and the equation's
params and returns `emit(k, values) -> value` (values in value types: i1 for
bool). Arithmetic carries no fast-math flags, so results are bit-identical
to NumPy's and NaN/Inf propagate as in NumPy (`nnan`/`ninf` would let LLVM
assume them away); only reduction accumulators reassociate (steps.py).

Bool arithmetic follows NumPy: add is or, mul is and, maximum is or.
"""
from __future__ import annotations

from typing import Callable

import llvmlite.ir as ir
import numpy as np

from ..ir import ops
from ..ir.op import Op
from .dtypes import I64, constant, is_bool, is_float, is_signed, value_type
from .math_ir import emit_intrinsic
from .scalar_division import DIVISION
from .scalar_bitwise import BITWISE
from .scalar_int_pow import INT_POW
from .scalar_special import SPECIAL
from .scalar_random import RANDOM


def _per_kind(float_fn, int_fn, bool_fn=None):
    def make(in_dtypes, out_dtype, **params):
        d = in_dtypes[0]
        if is_float(d):
            return float_fn(d)
        if is_bool(d) and bool_fn is not None:
            return bool_fn(d)
        return int_fn(d)

    return make


# --- unary ---------------------------------------------------------------------------

def _float_sign(d):
    one, minus, zero = constant(d, 1), constant(d, -1), constant(d, 0)

    def emit(k, v):
        b, x = k.b, v[0]
        zero_or_nan = b.select(b.fcmp_ordered("==", x, zero), zero, x)  # sign(nan) is nan
        return b.select(b.fcmp_ordered(">", x, zero), one,
                        b.select(b.fcmp_ordered("<", x, zero), minus, zero_or_nan))

    return emit


def _int_sign(d):
    t = value_type(d)

    def emit(k, v):
        b, x = k.b, v[0]
        if not is_signed(d):
            return b.zext(b.icmp_unsigned("!=", x, constant(d, 0)), t)
        pos = b.zext(b.icmp_signed(">", x, constant(d, 0)), t)
        neg = b.zext(b.icmp_signed("<", x, constant(d, 0)), t)
        return b.sub(pos, neg)

    return emit


def _int_abs(d):
    def emit(k, v):
        b, x = k.b, v[0]
        if not is_signed(d):
            return x
        return b.select(b.icmp_signed("<", x, constant(d, 0)), b.neg(x), x)

    return emit


def _identity(d):
    return lambda k, v: v[0]


_UNARY = {
    ops.neg_p: _per_kind(lambda d: lambda k, v: k.b.fneg(v[0]), lambda d: lambda k, v: k.b.neg(v[0]), _identity),
    ops.abs_p: _per_kind(lambda d: lambda k, v: emit_intrinsic(k.b, "llvm.fabs", v[0]), _int_abs, _identity),
    ops.sign_p: _per_kind(_float_sign, _int_sign, _identity),
    ops.floor_p: lambda i, o, **p: lambda k, v: emit_intrinsic(k.b, "llvm.floor", v[0]),
    ops.ceil_p: lambda i, o, **p: lambda k, v: emit_intrinsic(k.b, "llvm.ceil", v[0]),
    ops.round_p: lambda i, o, **p: lambda k, v: emit_intrinsic(k.b, "llvm.roundeven", v[0]),  # half to even
    ops.logical_not_p: lambda i, o, **p: lambda k, v: k.b.not_(v[0]),
}


# --- cast: NumPy's astype ----------------------------------------------------------------

def make_cast(in_dtypes, out_dtype, **params):
    src, dst = np.dtype(in_dtypes[0]), np.dtype(out_dtype)
    st, dt = value_type(src), value_type(dst)

    def emit(k, v):
        b, x = k.b, v[0]
        if src == dst:
            return x
        if is_bool(dst):  # nonzero (and NaN) is True
            if is_float(src):
                return b.fcmp_unordered("!=", x, constant(src, 0))
            return b.icmp_unsigned("!=", x, constant(src, 0))
        if is_float(src) and is_float(dst):
            return b.fpext(x, dt) if dst.itemsize > src.itemsize else b.fptrunc(x, dt)
        if is_float(src):
            return b.fptosi(x, dt) if is_signed(dst) else b.fptoui(x, dt)
        if is_float(dst):
            return b.sitofp(x, dt) if is_signed(src) else b.uitofp(x, dt)
        if dt.width == st.width:
            return x
        if dt.width < st.width:
            return b.trunc(x, dt)
        return b.sext(x, dt) if is_signed(src) else b.zext(x, dt)

    return emit


# --- binary --------------------------------------------------------------------------------

def _binary(float_fn, int_fn, bool_fn=None):
    return _per_kind(
        lambda d: lambda k, v: float_fn(k.b, v[0], v[1]),
        lambda d: lambda k, v: int_fn(k.b, v[0], v[1], d),
        None if bool_fn is None else (lambda d: lambda k, v: bool_fn(k.b, v[0], v[1])),
    )


def _int_select(op):
    def fn(b, x, y, d):
        cmp = b.icmp_signed if is_signed(d) else b.icmp_unsigned
        return b.select(cmp(op, x, y), x, y)

    return fn


_FLOAT_MAX = lambda b, x, y: emit_intrinsic(b, "llvm.maximum", x, y)  # noqa: E731  NaN propagates
_FLOAT_MIN = lambda b, x, y: emit_intrinsic(b, "llvm.minimum", x, y)  # noqa: E731

_BINARY = {
    ops.add_p: _binary(lambda b, x, y: b.fadd(x, y), lambda b, x, y, d: b.add(x, y),
                       lambda b, x, y: b.or_(x, y)),
    ops.sub_p: _binary(lambda b, x, y: b.fsub(x, y), lambda b, x, y, d: b.sub(x, y),
                       lambda b, x, y: b.xor(x, y)),
    ops.mul_p: _binary(lambda b, x, y: b.fmul(x, y), lambda b, x, y, d: b.mul(x, y),
                       lambda b, x, y: b.and_(x, y)),
    ops.maximum_p: _binary(_FLOAT_MAX, _int_select(">"), lambda b, x, y: b.or_(x, y)),
    ops.minimum_p: _binary(_FLOAT_MIN, _int_select("<"), lambda b, x, y: b.and_(x, y)),
}


def _compare(op):
    def make(in_dtypes, out_dtype, **params):
        d = in_dtypes[0]
        if is_float(d):
            if op == "!=":  # NaN != anything is True
                return lambda k, v: k.b.fcmp_unordered("!=", v[0], v[1])
            return lambda k, v: k.b.fcmp_ordered(op, v[0], v[1])
        if is_signed(d):
            return lambda k, v: k.b.icmp_signed(op, v[0], v[1])
        return lambda k, v: k.b.icmp_unsigned(op, v[0], v[1])  # unsigned and bool

    return make


_COMPARE = {
    ops.eq_p: _compare("=="), ops.ne_p: _compare("!="), ops.lt_p: _compare("<"),
    ops.le_p: _compare("<="), ops.gt_p: _compare(">"), ops.ge_p: _compare(">="),
    ops.logical_and_p: lambda i, o, **p: lambda k, v: k.b.and_(v[0], v[1]),
    ops.logical_or_p: lambda i, o, **p: lambda k, v: k.b.or_(v[0], v[1]),
    ops.logical_xor_p: lambda i, o, **p: lambda k, v: k.b.xor(v[0], v[1]),
}


def make_where(in_dtypes, out_dtype, **params):
    return lambda k, v: k.b.select(v[0], v[1], v[2])


SCALAR: dict[Op, Callable] = {
    **_UNARY,
    **_BINARY,
    ops.div_p: _binary(lambda b, x, y: b.fdiv(x, y), None),
    **_COMPARE,
    ops.where_p: make_where,
    **DIVISION,
    **INT_POW,
    **BITWISE,
    **SPECIAL,
    **RANDOM,
}
"""The scalar code of every elementwise op but the math functions, keyed by op."""


def clamped_index(b, j, dtype, size: int):
    """An index of `dtype` as i64, clamped into 0..size-1 (ir/ops/indexing.clamp_indices's rule)."""
    j = index_to_i64(b, j, dtype)
    last = ir.Constant(I64, max(size - 1, 0))
    if is_signed(dtype):
        j = b.select(b.icmp_signed("<", j, ir.Constant(I64, 0)), ir.Constant(I64, 0), j)
        return b.select(b.icmp_signed(">", j, last), last, j)
    return b.select(b.icmp_unsigned(">", j, last), last, j)


def index_to_i64(b, j, dtype):
    """An integer index value widened to i64 (by its signedness)."""
    if j.type.width == 64:
        return j
    return b.sext(j, I64) if is_signed(dtype) else b.zext(j, I64)
