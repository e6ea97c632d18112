"""Transcendental functions that the loop vectorizer can widen.

`emit_math(builder, "tanh", x)` emits a call to a helper function
`@"gradtape.math.tanh.f64"`, defined once per module. Inside a simple counted
loop compiled at O2/O3 with loop vectorization for the AVX2 host, the loop
then runs 4 doubles or 8 floats at a time with no scalar libm call in the
vector body:

| function | method | max ULP vs NumPy, f64 / f32 (tests/codegen/test_math.py) |
| --- | --- | --- |
| exp, expm1, log, log1p | own branch-free polynomials, inlined (math_poly.py) | 1 / 1.23 |
| tanh | same, through expm1 | 2 / 1.51 |
| softplus, sigmoid | same, through exp(-abs(x)) and a log1p for [0, 1] | 2 / 1.71, 2 / 2.40 |
| sin, cos, tan | glibc libmvec through the call site's vector-variant attribute (math_libmvec.py) | 3 / 3.1 |
| arctan, pow | same | 1 / 1.95 |
| sqrt | llvm.sqrt: one instruction, correctly rounded | 0 / 0.5 |

(f64 errors are against NumPy's own f64 result, itself up to ~0.5-1 ULP off
(against the exact value ours are <= 1.25); f32 errors against NumPy's f64
result in f32 ULPs, over all 2^32 inputs for the polynomials.) pow with a constant
exponent of 0, 1, 2, -1 or 0.5 is emitted as NumPy's shortcut for it
(ones, x, x*x, 1/x, sqrt).

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
finalizes or loads an object that uses these functions (LLVMLITE_FACTS.md
§10, pitfall 3). `declared_externals(module)` lists those symbols with their
addresses in this process, for a cache manifest or llvm.add_symbol.
"""
from __future__ import annotations

from llvmlite import ir

from .math_ir import FloatOps, add_call_attributes, declare_intrinsic, type_suffix
from .math_libmvec import (
    LIBMVEC,
    LIBMVEC_FUNCTIONS,
    emit_scalar_call,
    has_vector_variants,
    keep_alive,
    libmvec_available,
    libmvec_symbols,
    vector_variant_attribute,
)
from .math_poly import POLY_EMITTERS

ARITY = {
    **{name: 1 for name in POLY_EMITTERS},
    "sqrt": 1,
    **{name: arity for name, (_, _, arity) in LIBMVEC_FUNCTIONS.items()},
}
"""Every function emit_math knows, with its number of arguments."""

MATH_LIBRARIES = (LIBMVEC,) if libmvec_available() else ()
"""Shared libraries the emitted code may call; load them before finalizing."""

HELPER_PREFIX = "gradtape.math."


def emit_math(builder: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    """Emit `name(*args)` for double or float scalars; returns the same type.

    Args:
        builder: positioned where the result is needed; its module receives
            the helper function (and libmvec declarations) on first use.
        name: one of exp, log, log1p, expm1, sqrt, sin, cos, tan, tanh,
            arctan, pow, softplus, sigmoid (see `ARITY`).
        *args: one value (two for pow: base, exponent) of type double or
            float, all of the same type.

    Returns:
        The llvmlite value of the result, of the arguments' type.

    Raises:
        ValueError: unknown name or wrong number of arguments.
        TypeError: arguments not all double or all float.

    Example:
        >>> y = emit_math(builder, "tanh", builder.fadd(a, b))
        >>> z = emit_math(builder, "pow", x, ir.Constant(ir.DoubleType(), 3.0))
    """
    if name not in ARITY:
        known = ", ".join(sorted(ARITY))
        raise ValueError(f"emit_math: unknown function {name!r}; known: {known}")
    if len(args) != ARITY[name]:
        raise ValueError(
            f"emit_math: {name} takes {ARITY[name]} argument(s), got {len(args)}; "
            f"pass {'(base, exponent)' if name == 'pow' else 'one scalar value'}"
        )
    ty = args[0].type
    type_suffix(ty)  # raises TypeError for non-float types
    if any(a.type != ty for a in args):
        got = ", ".join(str(a.type) for a in args)
        raise TypeError(f"emit_math: {name} needs arguments of one float type, got ({got}); cast first")
    if name == "pow":
        exact = _pow_constant_exponent(builder, *args)
        if exact is not None:
            return exact
    helper = _helper(builder.module, name, ty)
    call = builder.call(helper, list(args))
    if "noinline" in helper.attributes:
        add_call_attributes(call, vector_variant_attribute(builder.module, name, helper))
    return call


def declared_externals(module: ir.Module) -> dict:
    """{symbol: address in this process} of the library functions `module` declares
    for emit_math (libmvec's vector functions; empty if none are used).

    The names resolve on their own once MATH_LIBRARIES are loaded; the
    addresses serve llvm.add_symbol or a check with llvm.address_of_symbol.
    """
    return libmvec_symbols(module)


def _helper(module: ir.Module, name: str, ty: ir.Type) -> ir.Function:
    """The module's `gradtape.math.<name>.<f64|f32>` helper, defined on first use.

    Inlined everywhere, except for functions that libmvec implements: those
    stay calls so that the call site can name the vector variants.
    """
    fname = f"{HELPER_PREFIX}{name}.{type_suffix(ty)}"
    fn = module.globals.get(fname)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ty, [ty] * ARITY[name]), fname)
    fn.linkage = "internal"
    libmvec = name in LIBMVEC_FUNCTIONS and has_vector_variants(name, ty)
    for attr in ("noinline" if libmvec else "alwaysinline", "nounwind", "readnone"):
        fn.attributes.add(attr)
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    builder.ret(_emit_body(builder, name, fn.args))
    if libmvec:
        keep_alive(module, fn)
    return fn


def _emit_body(builder: ir.IRBuilder, name: str, args) -> ir.Value:
    if name in POLY_EMITTERS:
        return POLY_EMITTERS[name](FloatOps(builder, args[0].type), args[0])
    if name == "sqrt":
        return builder.call(declare_intrinsic(builder.module, "llvm.sqrt", args[0].type, 1), [args[0]])
    return emit_scalar_call(builder, name, args)


def _pow_constant_exponent(builder: ir.IRBuilder, x, y):
    """pow(x, c) for the constant exponents that NumPy computes by a shortcut
    (np.power's scalar fast path: ones, x, x*x, 1/x, sqrt), else None.

    These are exact or correctly rounded, and they follow NumPy where the
    shortcut differs from C's pow: np.power(-0.0, 0.5) = -0.0 and
    np.power(-inf, 0.5) = nan.
    """
    if not isinstance(y, ir.Constant) or not isinstance(y.constant, (int, float)):
        return None
    c = float(y.constant)
    ops = FloatOps(builder, x.type)
    if c == 0.0:
        return ops.c(1.0)  # even pow(nan, 0) = 1
    if c == 1.0:
        return x
    if c == 2.0:
        return ops.mul(x, x)
    if c == -1.0:
        return ops.div(ops.c(1.0), x)
    if c == 0.5:
        return builder.call(declare_intrinsic(builder.module, "llvm.sqrt", x.type, 1), [x])
    return None
