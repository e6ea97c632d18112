"""Native code of gammaln (libm's lgamma) and polygamma[n] (digamma for n = 0): the algorithm of
ir/ops/polygamma_series.py run on an LLVM backend, inlined into the
element's expression (straight-line code with selects, which the loop
vectorizer widens; the one libm call is tan, for x < 0)."""
from __future__ import annotations

import math

import llvmlite.ir as llvm_ir

from ..ir import ops
from ..ir.ops.polygamma_series import polygamma
from .math import emit_math
from .math_ir import FloatOps, emit_intrinsic


class _LLVMBackend:
    """polygamma's arithmetic on LLVM float values (no fast-math: NaN and inf propagate as in NumPy)."""

    def __init__(self, builder, ty):
        self.b, self.f = builder, FloatOps(builder, ty)

    def _v(self, a):
        return self.f.c(a) if isinstance(a, float) else a

    def add(self, a, b): return self.b.fadd(self._v(a), self._v(b))
    def sub(self, a, b): return self.b.fsub(self._v(a), self._v(b))
    def mul(self, a, b): return self.b.fmul(self._v(a), self._v(b))
    def div(self, a, b): return self.b.fdiv(self._v(a), self._v(b))
    def neg(self, a): return self.b.fneg(a)
    def log(self, a): return emit_math(self.b, ops.log_p, a)
    def tan(self, a): return emit_math(self.b, ops.tan_p, a)
    def round(self, a): return emit_intrinsic(self.b, "llvm.roundeven", a)
    def lt(self, a, b): return self.b.fcmp_ordered("<", a, self._v(b))
    def le(self, a, b): return self.b.fcmp_ordered("<=", a, self._v(b))
    def eq(self, a, b): return self.b.fcmp_ordered("==", a, self._v(b))
    def logical_and(self, a, b): return self.b.and_(a, b)
    def select(self, c, a, b): return self.b.select(c, self._v(a), self._v(b))
    def nan_like(self, a): return self.f.c(math.nan)
    def constant_like(self, a, value): return self.f.c(value)

    def poly(self, x, coeffs):
        acc = self.f.c(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.b.fadd(self.b.fmul(acc, x), self.f.c(c))  # no fma: the reference rounds each step
        return acc


def make_polygamma(in_dtypes, out_dtype, *, n):
    return lambda k, v: polygamma(_LLVMBackend(k.b, v[0].type), n, v[0])


def _call_lgamma(b, x):
    """libm's lgamma (lgammaf for float). Not in the math table, whose functions all
    vectorize: glibc has no vector lgamma, so this is a scalar call per element. lgamma
    also writes the global signgam, which nothing reads; no attribute claims otherwise."""
    name = "lgamma" if isinstance(x.type, llvm_ir.DoubleType) else "lgammaf"
    fn = b.module.globals.get(name)
    if fn is None:
        fn = llvm_ir.Function(b.module, llvm_ir.FunctionType(x.type, [x.type]), name)
        fn.attributes.add("nounwind")
    return b.call(fn, [x])


def _gammaln(b, x):
    """lgamma(x), except -inf at -inf as scipy.special.gammaln (libm's lgamma gives +inf)."""
    minus_inf = llvm_ir.Constant(x.type, float("-inf"))
    return b.select(b.fcmp_ordered("==", x, minus_inf), minus_inf, _call_lgamma(b, x))


def make_gammaln(in_dtypes, out_dtype, **params):
    return lambda k, v: _gammaln(k.b, v[0])


SPECIAL = {ops.polygamma_p: make_polygamma, ops.gammaln_p: make_gammaln}
"""The scalar makers of the special-function ops with parameters, merged into scalar.SCALAR."""
