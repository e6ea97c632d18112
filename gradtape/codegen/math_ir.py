"""IR building shortcuts shared by the math routines (gradtape.codegen.math).

`FloatOps` wraps an `llvmlite.ir.IRBuilder` for one scalar float type (double
or float) so that a routine such as exp reads like the formula it computes.
Everything it emits is scalar, branch-free and free of fast-math flags: the
loop vectorizer widens it, and no flag may let InstCombine fold a rounding
trick away.

`StringCallAttributes` lets a call site carry LLVM string attributes, which
`llvmlite.ir` rejects; the libmvec mapping needs one
("vector-function-abi-variant").
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir.instructions import CallInstrAttributes

from . import cpu as target_cpu


class StringCallAttributes(CallInstrAttributes):
    """Call-site attributes that also accept `nobuiltin` and string attributes.

    An item written with its quotes, e.g. '"vector-function-abi-variant"="..."',
    is printed as is; every other item is checked by llvmlite as usual.
    """

    def add(self, name):
        if name.startswith('"') or name == "nobuiltin":
            return set.add(self, name)
        return super().add(name)


def add_call_attributes(call: ir.CallInstr, *items: str) -> None:
    """Attach attributes to the call site `call`: plain keywords, or
    '"key"="value"' string attributes written with their quotes."""
    attrs = StringCallAttributes(call.attributes)
    for item in items:
        attrs.add(item)
    call.attributes = attrs


def type_suffix(ty: ir.Type) -> str:
    """'f64' or 'f32' for DoubleType/FloatType; raises TypeError otherwise."""
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.FloatType):
        return "f32"
    raise TypeError(f"math functions take double or float scalars, got {ty}")


def declare_intrinsic(module: ir.Module, name: str, ty: ir.Type, nargs: int) -> ir.Function:
    """Get or declare `name.<f64|f32>` (or `name.v<N><f64|f32>` for a vector type)
    taking `nargs` arguments of type `ty`."""
    fnty = ir.FunctionType(ty, [ty] * nargs)
    if isinstance(ty, ir.VectorType):  # llvmlite cannot mangle vector types itself
        full = f"{name}.v{ty.count}{ty.element.intrinsic_name}"
        fn = module.globals.get(full)
        return fn if fn is not None else ir.Function(module, fnty, full)
    return module.declare_intrinsic(name, [ty], fnty=fnty)


def emit_intrinsic(builder: ir.IRBuilder, base: str, *args: ir.Value, ret: ir.Type | None = None) -> ir.Value:
    """A call of the overloaded float intrinsic `base` (e.g. "llvm.floor") on `args`."""
    ty = args[0].type
    fnty = ir.FunctionType(ret or ty, [a.type for a in args])
    return builder.call(builder.module.declare_intrinsic(base, [ty], fnty=fnty), list(args))


class FloatOps:
    """Scalar float arithmetic on one builder, written as formulas.

    Args:
        builder: where instructions go.
        ty: ir.DoubleType() or ir.FloatType().

    Example:
        >>> ops = FloatOps(builder, ir.DoubleType())
        >>> y = ops.fma(x, ops.c(2.0), ops.c(1.0))   # 2x + 1
    """

    def __init__(self, builder: ir.IRBuilder, ty: ir.Type):
        self.b = builder
        self.ty = ty
        self.is_f64 = type_suffix(ty) == "f64"
        self.ity = ir.IntType(64 if self.is_f64 else 32)
        self.mant_bits = 52 if self.is_f64 else 23

    # constants
    def c(self, value: float) -> ir.Constant:
        return ir.Constant(self.ty, value)

    def ci(self, value: int) -> ir.Constant:
        return ir.Constant(self.ity, value)

    # float arithmetic (no fast-math flags, on purpose)
    def add(self, a, b):
        return self.b.fadd(a, b)

    def sub(self, a, b):
        return self.b.fsub(a, b)

    def mul(self, a, b):
        return self.b.fmul(a, b)

    def div(self, a, b):
        return self.b.fdiv(a, b)

    def fma(self, a, b, c):
        """a*b + c, fused where the target has FMA (llvm.fmuladd).

        Every routine is written so that it stays accurate unfused too: the
        products whose exactness matters use Cody-Waite constants.
        """
        fn = declare_intrinsic(self.b.module, "llvm.fmuladd", self.ty, 3)
        return self.b.call(fn, [a, b, c])

    def fma_exact(self, a, b, c):
        """a*b + c rounded once (llvm.fma), for residuals that must be exact.

        A target without FMA (x86-64, x86-64-v2) would turn llvm.fma into a
        call of libm's fma per element, which stops the loop from
        vectorizing; there the product's rounding error is recovered
        exactly with Dekker's split instead (more operations, all packed).
        """
        if not target_cpu.current().has("fma"):
            return self._two_product_add(a, b, c)
        fn = declare_intrinsic(self.b.module, "llvm.fma", self.ty, 3)
        return self.b.call(fn, [a, b, c])

    def _split(self, a):
        """a = hi + lo with hi holding half of the significand's bits (Veltkamp), so hi*hi is exact."""
        bits = 27 if self.ty == ir.DoubleType() else 12
        gamma = self.mul(a, self.c(float(2**bits + 1)))
        hi = self.sub(gamma, self.sub(gamma, a))
        return hi, self.sub(a, hi)

    def _two_product_add(self, a, b, c):
        """(a*b + c) + err(a*b): the exact product's error term added last (Dekker's TwoProduct).

        Where fma_exact is used the sum a*b + c cancels to a small residual,
        which its rounding then leaves exact, so this equals the fused result
        up to the last rounding of a tiny value.
        """
        p = self.mul(a, b)
        a_hi, a_lo = self._split(a)
        b_hi, b_lo = self._split(b)
        err = self.add(self.add(self.add(self.sub(self.mul(a_hi, b_hi), p), self.mul(a_hi, b_lo)),
                                self.mul(a_lo, b_hi)), self.mul(a_lo, b_lo))
        return self.add(self.add(p, c), err)

    def unary(self, intrinsic: str, a):
        return self.b.call(declare_intrinsic(self.b.module, intrinsic, self.ty, 1), [a])

    def fabs(self, a):
        return self.unary("llvm.fabs", a)

    def floor(self, a):
        return self.unary("llvm.floor", a)

    def copysign(self, magnitude, sign):
        fn = declare_intrinsic(self.b.module, "llvm.copysign", self.ty, 2)
        return self.b.call(fn, [magnitude, sign])

    def horner(self, x, coeffs):
        """coeffs[0] + coeffs[1]*x + ... + coeffs[-1]*x**(n-1)."""
        acc = self.c(coeffs[-1])
        for coeff in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.c(coeff))
        return acc

    def poly(self, x, coeffs):
        """The polynomial by Estrin's scheme for double, Horner's for float.

        Estrin is 5-13% faster on 4 x f64 here; on 8 x f32 it gained nothing
        and cost accuracy (exp: 1.01 instead of 0.98 ULP over all floats).
        """
        return self.estrin(x, coeffs) if self.is_f64 else self.horner(x, coeffs)

    def estrin(self, x, coeffs):
        """The same polynomial as `horner`, evaluated as a tree of pairs
        (Estrin's scheme): about log2(n) dependent fmas instead of n, which
        matters in a loop whose iterations are long dependency chains."""
        terms = [self.c(c) for c in coeffs]
        power = x
        while len(terms) > 1:
            pairs = [self.fma(terms[i + 1], power, terms[i]) for i in range(0, len(terms) - 1, 2)]
            if len(terms) % 2:
                pairs.append(terms[-1])
            terms = pairs
            if len(terms) > 1:
                power = self.mul(power, power)
        return terms[0]

    # comparisons (ordered: false when an operand is NaN) and selects
    def lt(self, a, b):
        return self.b.fcmp_ordered("<", a, b)

    def gt(self, a, b):
        return self.b.fcmp_ordered(">", a, b)

    def eq(self, a, b):
        return self.b.fcmp_ordered("==", a, b)

    def is_nan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def select(self, cond, a, b):
        return self.b.select(cond, a, b)

    def clamp_above(self, a, limit: float):
        """min(a, limit), passing NaN through (minnum would turn it into limit)."""
        return self.select(self.gt(a, self.c(limit)), self.c(limit), a)

    def clamp_below(self, a, limit: float):
        """max(a, limit), passing NaN through."""
        return self.select(self.lt(a, self.c(limit)), self.c(limit), a)

    # bit-level access: the integer twin of the float type
    def bits(self, a):
        return self.b.bitcast(a, self.ity)

    def from_bits(self, i):
        return self.b.bitcast(i, self.ty)

    def bits_of_one(self) -> int:
        return 0x3FF0000000000000 if self.is_f64 else 0x3F800000

    def iadd(self, a, b):
        return self.b.add(a, b)

    def isub(self, a, b):
        return self.b.sub(a, b)

    def shl(self, a, n: int):
        return self.b.shl(a, self.ci(n))

    def ashr(self, a, n: int):
        return self.b.ashr(a, self.ci(n))

    def small_int_to_float(self, i):
        """Float value of an integer that fits in 32 bits.

        AVX2 has no packed i64->f64 conversion (it is AVX-512DQ), so the f64
        path narrows to i32 first, which converts natively (vcvtdq2pd).
        """
        if self.is_f64:
            i = self.b.trunc(i, ir.IntType(32))
        return self.b.sitofp(i, self.ty)


class VectorFloatOps(FloatOps):
    """FloatOps on vectors of `lanes` floats: the same routines, emitted once as
    a vector function (math.py's out-of-line math for very large kernels).

    Constants are splats and the integer twin is a vector of integers, so every
    routine written on FloatOps computes lane by lane exactly what the scalar
    code computes.

    Example:
        >>> ops = VectorFloatOps(builder, ir.DoubleType(), 4)    # <4 x double>
        >>> y = ops.fma(x, ops.c(2.0), ops.c(1.0))
    """

    def __init__(self, builder: ir.IRBuilder, element: ir.Type, lanes: int):
        super().__init__(builder, element)
        self.lanes = lanes
        self.ty = ir.VectorType(element, lanes)
        self.ity = ir.VectorType(self.ity, lanes)

    def c(self, value: float) -> ir.Constant:
        return ir.Constant(self.ty, [value] * self.lanes)

    def ci(self, value: int) -> ir.Constant:
        return ir.Constant(self.ity, [value] * self.lanes)

    def _split(self, a):
        bits = 27 if self.is_f64 else 12
        gamma = self.mul(a, self.c(float(2**bits + 1)))
        hi = self.sub(gamma, self.sub(gamma, a))
        return hi, self.sub(a, hi)

    def small_int_to_float(self, i):
        if self.is_f64:
            i = self.b.trunc(i, ir.VectorType(ir.IntType(32), self.lanes))
        return self.b.sitofp(i, self.ty)
