"""The math table: every function of floats that native code computes beyond
arithmetic, declared once with its arity and its implementation.

`MATH_FUNCTIONS[op]` is the MathFunction of an elementwise op (the lowering
table, rules.py, gives every op here its rule), and
`emit_math(builder, op, x)` emits it: a call to a helper function
`@"gradtape.math.tanh.f64"`, defined once per module. Inside a simple counted
loop compiled at O2/O3 with loop vectorization for the AVX2 host, the loop
then runs 4 doubles or 8 floats at a time with no scalar libm call in the
vector body:

| function | implementation | max ULP vs NumPy, f64 / f32 (tests/codegen/test_math.py) |
| --- | --- | --- |
| exp, expm1, log, log1p | own branch-free polynomials, inlined (math_poly.py) | 1 / 1.23 |
| log10 | same, with its large terms summed exactly: log10(10^n) = n, as NumPy's | 1 / 1.07 |
| tanh | same, through expm1 | 2 / 1.51 |
| softplus, sigmoid | same, through exp(-abs(x)) and a log1p for [0, 1] | 2 / 1.71, 2 / 2.40 |
| sin, cos, tan | glibc libmvec through the call site's vector-variant attribute (math_libmvec.py) | 3 / 3.1 |
| arctan, pow | same | 1 / 1.95 |
| sqrt | llvm.sqrt: one instruction, correctly rounded | 0 / 0.5 |

(f64 errors are against NumPy's own f64 result, itself up to ~0.5-1 ULP off
(against the exact value ours are <= 1.25); f32 errors against NumPy's f64
result in f32 ULPs, over all 2^32 inputs for the polynomials.) pow with a constant
exponent is computed as math_pow.py decides (NumPy's shortcuts for 0, 1,
2, -1 and 0.5; multiplications for 3 and 4).

A loop that calls two or more of these functions (or one of libmvec's) is also given vectorizer
hints (math_loops.py, called by lowering.py): the target's widest vectors,
two at a time, which on AVX-512 targets calls libmvec's zmm variants.

The implementations:

    Polynomial(emit)         straight-line IR written here (math_poly.py),
                             inlined: the vectorizer widens it like arithmetic
    Libmvec(symbol, scalar)  a call the vectorizer maps to glibc's vector
                             `symbol` (math_libmvec.py); the scalar remainder
                             calls the same vector function on one value, so
                             every element gets the same bits wherever it is;
                             where libmvec is missing, the LLVM intrinsic
                             `scalar` (which LLVM lowers to libm)
    Intrinsic(name)          an LLVM intrinsic that is one instruction (sqrt)

Special values follow NumPy: exp overflows to inf and underflows through the
subnormals to 0, log(0) = -inf, log(<0) = nan, log1p(-1) = -inf,
tanh(+-large) = +-1, expm1 and log1p are accurate near 0, NaN propagates;
softplus(x) = log(1 + exp(x)) and sigmoid(x) = 1 / (1 + exp(-x)) never
overflow and keep full relative accuracy for x << 0 (for these two, the
errors above are against the exact value rounded, as NumPy has no ufunc).
That holds as long as the caller's own instructions producing the argument
carry no `nnan`/`ninf` flags (those make NaN/inf inputs poison).

Loading: the emitted code may call libmvec, so the runtime must load every
library in `MATH_LIBRARIES` (llvm.load_library_permanently) before it
finalizes or loads an object that uses these functions (otherwise LLVM cannot
resolve them). `declared_externals(module)` lists those symbols with their
addresses in this process, for a cache manifest or llvm.add_symbol.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from llvmlite import ir

from ..ir import ops
from ..ir.op import Op
from .math_ir import FloatOps, VectorFloatOps, add_call_attributes, declare_intrinsic, type_suffix
from .math_erf import emit_erf, emit_erfc
from .math_libmvec import (
    LIBMVEC,
    emit_scalar_through_vector,
    has_vector_variants,
    keep_alive,
    libmvec_available,
    libmvec_symbols,
    vector_variant_attribute,
)
from .math_poly import (
    emit_exp,
    emit_expm1,
    emit_log,
    emit_log10,
    emit_log1p,
    emit_sigmoid,
    emit_softplus,
    emit_tanh,
)
from .math_pow import pow_shortcut


@dataclasses.dataclass(frozen=True)
class Polynomial:
    """Inline IR: `emit(FloatOps, *args) -> value`."""

    emit: Callable


@dataclasses.dataclass(frozen=True)
class Libmvec:
    """libm's `symbol` (e.g. "atan"), vectorized through libmvec; the scalar
    code is the LLVM intrinsic `scalar` (e.g. "llvm.atan"), or, for a function
    LLVM has no intrinsic of, libm's function of that name (e.g. "asinh")."""

    symbol: str
    scalar: str


@dataclasses.dataclass(frozen=True)
class Intrinsic:
    """An LLVM intrinsic that is one instruction on every x86-64 CPU."""

    name: str


@dataclasses.dataclass(frozen=True)
class MathFunction:
    op: Op
    arity: int
    impl: Polynomial | Libmvec | Intrinsic

    @property
    def name(self) -> str:
        return self.op.name


MATH_FUNCTIONS: dict[Op, MathFunction] = {f.op: f for f in (
    MathFunction(ops.exp_p, 1, Polynomial(emit_exp)),
    MathFunction(ops.expm1_p, 1, Polynomial(emit_expm1)),
    MathFunction(ops.log_p, 1, Polynomial(emit_log)),
    MathFunction(ops.log1p_p, 1, Polynomial(emit_log1p)),
    MathFunction(ops.log10_p, 1, Polynomial(emit_log10)),
    MathFunction(ops.tanh_p, 1, Polynomial(emit_tanh)),
    MathFunction(ops.softplus_p, 1, Polynomial(emit_softplus)),
    MathFunction(ops.sigmoid_p, 1, Polynomial(emit_sigmoid)),
    MathFunction(ops.erf_p, 1, Polynomial(emit_erf)),
    MathFunction(ops.erfc_p, 1, Polynomial(emit_erfc)),
    MathFunction(ops.sqrt_p, 1, Intrinsic("llvm.sqrt")),
    MathFunction(ops.sin_p, 1, Libmvec("sin", "llvm.sin")),
    MathFunction(ops.cos_p, 1, Libmvec("cos", "llvm.cos")),
    MathFunction(ops.tan_p, 1, Libmvec("tan", "llvm.tan")),
    MathFunction(ops.arctan_p, 1, Libmvec("atan", "llvm.atan")),
    MathFunction(ops.pow_p, 2, Libmvec("pow", "llvm.pow")),
    MathFunction(ops.sinh_p, 1, Libmvec("sinh", "llvm.sinh")),
    MathFunction(ops.cosh_p, 1, Libmvec("cosh", "llvm.cosh")),
    MathFunction(ops.arcsin_p, 1, Libmvec("asin", "llvm.asin")),
    MathFunction(ops.arccos_p, 1, Libmvec("acos", "llvm.acos")),
    MathFunction(ops.log2_p, 1, Libmvec("log2", "llvm.log2")),
    MathFunction(ops.exp2_p, 1, Libmvec("exp2", "llvm.exp2")),
    MathFunction(ops.arctan2_p, 2, Libmvec("atan2", "llvm.atan2")),
    # LLVM has no intrinsic for these: the scalar code calls libm itself
    MathFunction(ops.arcsinh_p, 1, Libmvec("asinh", "asinh")),
    MathFunction(ops.arccosh_p, 1, Libmvec("acosh", "acosh")),
    MathFunction(ops.arctanh_p, 1, Libmvec("atanh", "atanh")),
    MathFunction(ops.cbrt_p, 1, Libmvec("cbrt", "cbrt")),
    MathFunction(ops.hypot_p, 2, Libmvec("hypot", "hypot")),
)}
"""Every function emit_math knows, keyed by the op it computes."""

MATH_LIBRARIES = (LIBMVEC,) if libmvec_available() else ()
"""Shared libraries the emitted code may call; load them before finalizing."""

HELPER_PREFIX = "gradtape.math."


def emit_math(builder: ir.IRBuilder, op: Op, *args: ir.Value) -> ir.Value:
    """Emit `op(*args)` for double or float scalars; returns the same type.

    Args:
        builder: positioned where the result is needed; its module receives
            the helper function (and libmvec declarations) on first use.
        op: an op of `MATH_FUNCTIONS` (exp, log, ..., pow).
        *args: `arity` values (pow: base, exponent) of type double or
            float, all of the same type.

    Returns:
        The llvmlite value of the result, of the arguments' type.

    Raises:
        ValueError: an op with no entry in the table, or the wrong number of arguments.
        TypeError: arguments not all double or all float.

    Example:
        >>> y = emit_math(builder, ops.tanh_p, builder.fadd(a, b))
        >>> z = emit_math(builder, ops.pow_p, x, ir.Constant(ir.DoubleType(), 3.0))  # x*x*x
    """
    f = MATH_FUNCTIONS.get(op)
    if f is None:
        known = ", ".join(sorted(g.name for g in MATH_FUNCTIONS.values()))
        raise ValueError(
            f"emit_math: {op!r} has no entry in the math table (codegen/math.py); known: {known}. "
            "Add a MathFunction for it there"
        )
    if len(args) != f.arity:
        raise ValueError(f"emit_math: {f.name} takes {f.arity} argument(s), got {len(args)}")
    ty = args[0].type
    type_suffix(ty)  # raises TypeError for non-float types
    if any(a.type != ty for a in args):
        got = ", ".join(str(a.type) for a in args)
        raise TypeError(f"emit_math: {f.name} needs arguments of one float type, got ({got}); cast first")
    if op is ops.pow_p and isinstance(args[1], ir.Constant) and isinstance(args[1].constant, (int, float)):
        shortcut = pow_shortcut(args[1].constant)
        if shortcut is not None:
            return shortcut.emit(builder, args[0])
    helper = _helper(builder.module, f, ty)
    call = builder.call(helper, list(args))
    if "noinline" in helper.attributes:
        if isinstance(f.impl, Polynomial):
            add_call_attributes(call, _outlined_variants(builder.module, f, helper))
        else:
            add_call_attributes(call, vector_variant_attribute(builder.module, f.impl.symbol, f.arity, helper))
    return call


# --- out-of-line polynomials, for very large kernels ------------------------------------

_OUTLINED = "gradtape_outline_math"  # the attribute of an ir.Module that asks for them

# The vector widths offered to the loop vectorizer (it picks one per loop): 128,
# 256 and 512 bits of lanes.
_OUTLINE_LANES = {"f64": (2, 4, 8), "f32": (4, 8, 16)}


def outline_polynomials(module: ir.Module) -> None:
    """Make every Polynomial function `module` uses one call instead of inline code.

    Inlined, each tanh or exp of a kernel is some forty instructions that
    LLVM optimizes, vectorizes and schedules anew at every use: in a kernel
    of thousands of ops that is most of the compile, and it grows faster
    than the kernel (the loop vectorizer's cost model weighs the whole loop
    body). Outlined, each function is compiled once per module as a vector
    function (`gradtape.math.tanh.f64.v4`, ...) that the loop vectorizer
    calls, as it calls libmvec's sin; the values are the same, lane by lane.
    Costs a call per vector at run time, so codegen asks for it only on
    very large Functions (lowering.py).
    """
    setattr(module, _OUTLINED, True)


def _outlines(module: ir.Module, f: MathFunction, ty: ir.Type) -> bool:
    # erf and erfc compute float32 in float64 (math_erf.py), which has no vector twin here.
    return (getattr(module, _OUTLINED, False) and isinstance(f.impl, Polynomial)
            and (type_suffix(ty) == "f64" or f.impl.emit not in (emit_erf, emit_erfc)))


def _outlined_variants(module: ir.Module, f: MathFunction, scalar: ir.Function) -> str:
    """The call-site attribute naming the vector functions of `scalar`, defined on first use."""
    made = module.__dict__.setdefault("_gradtape_variant_attributes", {})  # once per module and helper
    if scalar.name in made:
        return made[scalar.name]
    ty = scalar.function_type.return_type
    mapping = []
    for lanes in _OUTLINE_LANES[type_suffix(ty)]:
        vname = f"{scalar.name}.v{lanes}"
        if module.globals.get(vname) is None:
            vty = ir.VectorType(ty, lanes)
            fn = ir.Function(module, ir.FunctionType(vty, [vty] * f.arity), vname)
            fn.linkage = "internal"
            for attr in ("noinline", "nounwind", "readnone"):
                fn.attributes.add(attr)
            builder = ir.IRBuilder(fn.append_basic_block("entry"))
            builder.ret(f.impl.emit(VectorFloatOps(builder, ty, lanes), *fn.args))
            keep_alive(module, fn)
        mapping.append(f"_ZGV_LLVM_N{lanes}{'v' * f.arity}_{scalar.name}({vname})")
    made[scalar.name] = f'"vector-function-abi-variant"="{",".join(mapping)}"'
    return made[scalar.name]


def declared_externals(module: ir.Module) -> dict:
    """{symbol: address in this process} of the library functions `module` declares
    for emit_math (libmvec's vector functions; empty if none are used).

    The names resolve on their own once MATH_LIBRARIES are loaded; the
    addresses serve llvm.add_symbol or a check with llvm.address_of_symbol.
    """
    return libmvec_symbols(module)


def libraries_and_externals(module: ir.Module) -> tuple:
    """(libraries to load, {symbol: address}) for the math `module` uses."""
    externals = declared_externals(module)
    return (MATH_LIBRARIES if externals else ()), externals


def _helper(module: ir.Module, f: MathFunction, ty: ir.Type) -> ir.Function:
    """The module's `gradtape.math.<name>.<f64|f32>` helper, defined on first use.

    Inlined everywhere, except for libmvec functions that have vector
    variants on this host and polynomials in a module that outlines them
    (outline_polynomials): those stay calls so that the call site can name
    their vector functions.
    """
    fname = f"{HELPER_PREFIX}{f.name}.{type_suffix(ty)}"
    fn = module.globals.get(fname)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ty, [ty] * f.arity), fname)
    fn.linkage = "internal"
    vectorized_call = (isinstance(f.impl, Libmvec) and has_vector_variants(f.impl.symbol, f.arity, ty)
                       or _outlines(module, f, ty))
    for attr in ("noinline" if vectorized_call else "alwaysinline", "nounwind", "readnone"):
        fn.attributes.add(attr)
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    builder.ret(_emit_body(builder, f, list(fn.args)))
    if vectorized_call:
        keep_alive(module, fn)
    return fn


def _emit_body(builder: ir.IRBuilder, f: MathFunction, args: list) -> ir.Value:
    impl = f.impl
    if isinstance(impl, Polynomial):
        return impl.emit(FloatOps(builder, args[0].type), *args)
    if isinstance(impl, Libmvec) and has_vector_variants(impl.symbol, f.arity, args[0].type):
        # the remainder computes what the vector body does, bit for bit (math_libmvec.py)
        return emit_scalar_through_vector(builder, impl.symbol, args)
    intrinsic = impl.scalar if isinstance(impl, Libmvec) else impl.name
    if not intrinsic.startswith("llvm."):  # a libm function: asinh(double), asinhf(float)
        return builder.call(_declare_libm(builder.module, intrinsic, args[0].type, f.arity), args)
    return builder.call(declare_intrinsic(builder.module, intrinsic, args[0].type, f.arity), args)


def _declare_libm(module: ir.Module, symbol: str, ty: ir.Type, nargs: int) -> ir.Function:
    """libm's `symbol` for doubles, `symbol`f for floats (C99 names), declared once per module."""
    name = symbol if isinstance(ty, ir.DoubleType) else symbol + "f"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, [ty] * nargs), name)
        for attr in ("nounwind", "readnone"):
            fn.attributes.add(attr)
    return fn
