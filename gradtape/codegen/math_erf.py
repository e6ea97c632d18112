"""Branch-free erf and erfc, written in LLVM IR like math_poly.py.

For a = |x|:

- a < 1/2:  erf(x) = x + x R(x^2), with R(t) = erf(sqrt t)/sqrt t - 1 (in
            [0.04, 0.13], so the leading x is exact and R's error is scaled
            down by 8); erfc(x) = (1 - x) - x R(x^2), in [0.47, 1.53].
- a >= 1/2: erfc(a) = exp(-a^2) * u * S(t) with t = (a - 2)/(a + 2) in
            [-0.6, 0.87) and u = 1 - t = 4/(a + 2), both from one division.
            S(t) = erfc(a) exp(a^2) (a + 2)/4 is smooth and bounded away from
            zero on that range (0.15 to 0.26), so one polynomial keeps full
            relative precision down to the subnormals. exp(-a^2) is taken
            as exp(-hi) (1 - lo), where a^2 = hi + lo exactly (fma_exact):
            a^2 rounded would cost up to a^2/2 ULP (300 ULP at a = 26).
            Then erf(x) = sign(x) (1 - erfc(a)), and erfc(x) = 2 - erfc(a)
            for x < 0. a is clamped to 28, where erfc has underflowed to 0,
            which gives erf(+-inf) = +-1, erfc(inf) = 0 and erfc(-inf) = 2.

Both branches are computed and one is selected (no branch the vectorizer
would have to if-convert); NaN reaches the result through the second.
float32 is computed in float64 and rounded once: correctly rounded but for
rare ties, at twice the float64 cost per element (the conversions vectorize).

Coefficients: least squares with relative weights at 3(n + 1) Chebyshev
nodes in 40-digit mpmath, rounded to double: R (degree 8 in t on [0, 1/4])
to 2^-52.2 relative (2^-55 in erf), S (degree 24 on t for a in [1/2, 28]) to
2^-55.4. Measured errors are in tests/codegen/test_math.py.
"""
from __future__ import annotations

from llvmlite import ir

from .math_ir import FloatOps
from .math_poly import emit_exp

# R(t) = erf(x)/x - 1, t = x^2, x in [0, 1/2]
_ERF_SMALL = (
    0.12837916709551256,
    -0.3761263890318334,
    0.11283791670914303,
    -0.026866170629429528,
    0.005223977319665338,
    -0.0008548293270475818,
    0.00012053125967521853,
    -1.4840759043045152e-05,
    1.467546592147185e-06,
)

# S(t) = erfc(a) exp(a^2) (a + 2)/4, t = (a - 2)/(a + 2), a in [1/2, 28]
_ERFC_LARGE = (
    0.25539567631050575,
    -0.17179017110345265,
    0.06986802313901377,
    -0.009110557876719012,
    -0.005377665472382189,
    0.001619796266897178,
    0.000772653015237154,
    -0.00020932401477292522,
    -0.0001657683852395957,
    8.59284942327592e-06,
    3.6117790115309645e-05,
    8.53727503458325e-06,
    -5.424788088281353e-06,
    -4.030244616349698e-06,
    -2.7806368687016687e-07,
    9.096162642908919e-07,
    4.909168753762385e-07,
    8.24660875645244e-09,
    -1.2656747257378225e-07,
    -1.0202876205356743e-07,
    -1.3315565895833879e-08,
    5.649429673583448e-08,
    1.1747413770279838e-08,
    -1.9336512144398388e-08,
    3.416382888546114e-09,
)

_SMALL = 0.5  # below, the series branch
_CLAMP = 28.0  # erfc(28) = 6e-343 rounds to 0 in float64


def emit_erf(ops: FloatOps, x):
    return _in_float64(ops, x, _erf64)


def emit_erfc(ops: FloatOps, x):
    return _in_float64(ops, x, _erfc64)


def _in_float64(ops: FloatOps, x, compute):
    if ops.is_f64:
        return compute(ops, x)
    d = FloatOps(ops.b, ir.DoubleType())
    return ops.b.fptrunc(compute(d, ops.b.fpext(x, d.ty)), ops.ty)


def _r(d: FloatOps, x):
    """R(x^2) = erf(x)/x - 1, for |x| < 1/2."""
    return d.poly(d.mul(x, x), _ERF_SMALL)


def _erfc_of_abs(d: FloatOps, a):
    """erfc(a) for a = |x| >= 1/2 (finite garbage below, NaN for NaN)."""
    a = d.clamp_above(a, _CLAMP)
    r = d.div(d.c(1.0), d.add(a, d.c(2.0)))
    t = d.mul(d.sub(a, d.c(2.0)), r)
    q = d.mul(d.mul(d.c(4.0), r), d.horner(t, _ERFC_LARGE))  # u * S(t)
    hi = d.mul(a, a)
    lo = d.fma_exact(a, a, d.b.fneg(hi))
    e = emit_exp(d, d.b.fneg(hi), nonpositive=True)
    return d.mul(e, d.fma(d.b.fneg(lo), q, q))


def _erf64(d: FloatOps, x):
    a = d.fabs(x)
    small = d.fma(x, _r(d, x), x)
    large = d.copysign(d.sub(d.c(1.0), _erfc_of_abs(d, a)), x)
    return d.select(d.lt(a, d.c(_SMALL)), small, large)


def _erfc64(d: FloatOps, x):
    a = d.fabs(x)
    small = d.fma(d.b.fneg(x), _r(d, x), d.sub(d.c(1.0), x))
    tail = _erfc_of_abs(d, a)
    large = d.select(d.lt(x, d.c(0.0)), d.sub(d.c(2.0), tail), tail)
    return d.select(d.lt(a, d.c(_SMALL)), small, large)
