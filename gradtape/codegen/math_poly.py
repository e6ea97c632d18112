"""Branch-free polynomial exp, expm1, log, log1p, log10 and tanh (and softplus
and sigmoid built on them), written in LLVM IR.

Each routine is straight-line scalar code (no calls but LLVM intrinsics that
become single AVX2 instructions: fmuladd, fabs, copysign), so the loop
vectorizer widens it to 4 x f64 or 8 x f32 like any arithmetic. Special
values are handled with selects, so a NaN or an infinity in one lane costs
nothing in the others.

The methods, in one line each:
- exp:   x = n*ln2 + r, |r| <= ln2/2; exp(x) = 2^n * (1 + r + r^2 P(r)).
- expm1: the same reduction; expm1(x) = 2^n*r_hi + (2^n - 1) + 2^n*c, where
         r_hi is exact and c = r^2 P(r) - n*ln2_lo is small, so only two
         roundings reach the result (about 1 ULP even where 2^n - 1 cancels).
- log:   x = 2^e * z, z in [sqrt(1/2), sqrt(2)), f = z - 1, s = f/(2+f);
         log(x) = e*ln2 + f - f^2/2 + s*(f^2/2 + R(s^2)) (the classic
         atanh form, where R is small so f carries the leading bits exactly).
- log10: the same split; e*log10(2) + f/ln(10) carried exactly as a sum
         and its error, plus (log(1 + f) - f)/ln(10): one rounding of the
         large terms, so log10(10^n) = n exactly (emit_log10).
- log1p: log of u = 1 + x with the rounding error of that sum, (x-(u-1))/u,
         added back; f = x itself when u needs no rescaling.
- tanh:  t = expm1(2|x|), tanh(x) = sign(x) * t/(t+2).
- softplus: max(x, 0) + log1p(e) and sigmoid: (x < 0 ? e : 1) / (1 + e), with
         e = exp(-|x|) <= 1: nothing overflows, and both keep full relative
         precision for x << 0 (where they are about e). log1p of e in [0, 1]
         has its own cheaper range reduction (_log1p_of_unit).

Range reduction uses Cody-Waite constants (ln2_hi has trailing zero bits, so
n*ln2_hi and x - n*ln2_hi are exact with or without FMA) and carries no
fast-math flags: reassociation would fold the shifter rounding away.
Integers come out of the shifter's low
bits and 2^n is built with integer shifts, since AVX2 cannot convert packed
f64 to i64.

Polynomial coefficients are weighted-minimax fits (Remez exchange in 60-digit
mpmath) of P(r) = (expm1(r) - r)/r^2 on |r| <= 1.0005*ln2/2 for relative
error of expm1, and of T(z) = R(z)/z with R(z) = (2 atanh(s) - 2s)/s, z = s^2,
s <= 1.001*(3 - 2*sqrt(2)). Fit errors: expm1 2^-61.7 (f64) and 2^-32.0
(f32) relative; R 2^-62.4 (f64) and 2^-27.4 (f32) absolute.
"""
from __future__ import annotations

import dataclasses

from .math_ir import FloatOps


@dataclasses.dataclass(frozen=True)
class PolyConstants:
    """Everything the routines need that depends on the float format."""

    shifter: float  # 1.5 * 2^mant: x + shifter rounds x to an integer in the low bits
    log2e: float
    ln2_hi: float  # n * ln2_hi is exact for |n| < 2^11 (f64) / 2^8 (f32)
    ln2_lo: float  # ln2 - ln2_hi
    expm1_p: tuple  # expm1(r) ~ r + r^2 * P(r)
    log_t: tuple  # 2 atanh(s) ~ 2s + s * z * T(z), z = s^2
    exp_max: float  # exp overflows to inf above; keeps n within the scaling's reach
    exp_min: float  # exp underflows to 0 below
    expm1_min: float  # expm1 rounds to -1 below
    scale_bias: int  # 2^n is applied as 2^(n -+ bias) * 2^(+-bias): both factors normal
    tanh_one: float  # tanh rounds to +-1 beyond
    min_normal: float
    sqrt_half_bits: int  # bit pattern of sqrt(1/2) rounded
    sqrt2_minus_1: float  # log1p's argument above which 1 + x is split as 2 * (1 + f)
    log10_2_hi: float  # e * log10_2_hi is exact for every exponent e of the format
    log10_2_lo: float  # log10(2) - log10_2_hi
    ivln10_hi: float  # 1/ln(10) rounded
    ivln10_lo: float  # 1/ln(10) - ivln10_hi


F64 = PolyConstants(
    shifter=6755399441055744.0,  # 0x1.8p52
    log2e=1.4426950408889634,
    ln2_hi=0.6931471805598903,  # 0x1.62e42fefa38p-1: 42 significant bits
    ln2_lo=5.497923018708371e-14,
    expm1_p=(
        0.5,
        0.16666666666666677,
        0.041666666666666505,
        0.008333333333321653,
        0.0013888888888962606,
        0.00019841269886073528,
        2.4801587172230043e-05,
        2.7557244254107167e-06,
        2.7557402775144027e-07,
        2.510902449248963e-08,
        2.0875329164768077e-09,
    ),
    log_t=(
        0.6666666666666666,
        0.4000000000000107,
        0.28571428570413127,
        0.2222222250803848,
        0.1818178233332149,
        0.1538695654627196,
        0.13250405892677247,
        0.13267453809859933,
    ),
    exp_max=710.0,  # exp(709.79) is the largest finite double
    exp_min=-746.0,  # exp(-745.14) is below half the smallest subnormal
    expm1_min=-40.0,
    scale_bias=512,
    tanh_one=20.0,  # 1 - tanh(20) = 8.5e-18 < 2^-54
    min_normal=2.2250738585072014e-308,
    sqrt_half_bits=0x3FE6A09E667F3BCD,
    sqrt2_minus_1=0.41421356237309503,
    log10_2_hi=0.3010299956640665,  # 0x1.34413509f8p-2: 40 significant bits, |e| <= 1075 needs 11
    log10_2_lo=-8.532344317057107e-14,
    ivln10_hi=0.4342944819032518,
    ivln10_lo=1.098319650216765e-17,
)

F32 = PolyConstants(
    shifter=12582912.0,  # 0x1.8p23
    log2e=1.4426950216293335,
    ln2_hi=0.693145751953125,  # 16 significant bits
    ln2_lo=1.4286067653301870e-06,
    expm1_p=(
        0.5,
        0.1666666567325592,
        0.04166635870933533,
        0.008333389647305012,
        0.0013940668432042003,
        0.00019845881615765393,
    ),
    log_t=(0.6666674017906189, 0.39977219700813293, 0.2992932200431824),
    exp_max=89.0,  # expf(88.73) is the largest finite float
    exp_min=-104.0,  # expf(-103.98) is below half the smallest subnormal
    expm1_min=-20.0,
    scale_bias=64,
    tanh_one=10.0,  # 1 - tanh(10) = 4.1e-9 < 2^-25
    min_normal=1.1754943508222875e-38,
    sqrt_half_bits=0x3F3504F3,
    sqrt2_minus_1=0.41421353816986084,  # rounded down in float32
    log10_2_hi=0.301025390625,  # 0x1.344p-2: 15 significant bits, |e| <= 150 needs 8
    log10_2_lo=4.605039066518657e-06,
    ivln10_hi=0.4342944920063019,
    ivln10_lo=-1.0103049952192578e-08,
)


def constants_for(ops: FloatOps) -> PolyConstants:
    return F64 if ops.is_f64 else F32


def _reduce_ln2(ops: FloatOps, k: PolyConstants, x):
    """x = n*ln2 + r. Returns (t, n, r_hi, r): t holds n in its low mantissa bits,
    r_hi = x - n*ln2_hi exactly, r = r_hi - n*ln2_lo (one rounding)."""
    t = ops.fma(x, ops.c(k.log2e), ops.c(k.shifter))
    n = ops.sub(t, ops.c(k.shifter))
    r_hi = ops.fma(n, ops.c(-k.ln2_hi), x)
    r = ops.fma(n, ops.c(-k.ln2_lo), r_hi)
    return t, n, r_hi, r


def _n_shifted(ops: FloatOps, t):
    """n << mant_bits (two's complement), read from the shifter sum t.

    t = shifter + n exactly, and the shifter's low bits are zero, so shifting
    its bit pattern left leaves only n, already placed in the exponent field.
    """
    return ops.shl(ops.bits(t), ops.mant_bits)


def _exponent_bits(ops: FloatOps, e: int) -> int:
    return (e << ops.mant_bits) & ((1 << (64 if ops.is_f64 else 32)) - 1)


def emit_exp(ops: FloatOps, x0, *, nonpositive: bool = False):
    """exp(x0); with `nonpositive`, for x0 known to be <= 0 or NaN (e.g. -|x|),
    which saves the overflow clamp and the choice of the scaling's sign."""
    k = constants_for(ops)
    x = ops.clamp_below(x0 if nonpositive else ops.clamp_above(x0, k.exp_max), k.exp_min)
    t, _, _, r = _reduce_ln2(ops, k, x)
    p = ops.add(ops.c(1.0), ops.fma(ops.mul(r, r), ops.poly(r, k.expm1_p), r))
    # p * 2^n = (p * 2^(n - b)) * 2^b with b = +-bias: both factors are
    # normal, and only the second product rounds (to inf, or into the
    # subnormals) once. Multiplying, rather than adding n to p's exponent
    # bits, keeps a NaN in p a NaN. For n <= 0, b = -bias always works.
    bias = k.scale_bias
    one = ops.bits_of_one()
    down_bits, up_bits = ops.ci(one + _exponent_bits(ops, bias)), ops.ci(one - _exponent_bits(ops, bias))
    down, up = ops.c(2.0**-bias), ops.c(2.0**bias)
    if nonpositive:
        return ops.mul(ops.mul(p, ops.from_bits(ops.iadd(_n_shifted(ops, t), down_bits))), down)
    negative = ops.lt(x, ops.c(0.0))
    scale_bits = ops.iadd(_n_shifted(ops, t), ops.select(negative, down_bits, up_bits))
    return ops.mul(ops.mul(p, ops.from_bits(scale_bits)), ops.select(negative, down, up))


def _expm1_scaled(ops: FloatOps, k: PolyConstants, x, may_overflow: bool):
    """expm1(x) for x already clamped to [expm1_min, exp_max]."""
    t, n, r_hi, r = _reduce_ln2(ops, k, x)
    c = ops.fma(ops.mul(r, r), ops.poly(r, k.expm1_p), ops.mul(n, ops.c(-k.ln2_lo)))
    one_bits = ops.ci(ops.bits_of_one())
    if not may_overflow:
        s = ops.from_bits(ops.iadd(_n_shifted(ops, t), one_bits))  # 2^n
        return ops.fma(s, c, ops.fma(s, r_hi, ops.sub(s, ops.c(1.0))))
    # For large x, work with 2^(n - bias) (2^n itself may be inf) and rescale.
    # Below half of exp_max, 2^n is finite and the plain form is used: biasing
    # small x would flush r_hi * 2^(n - bias) to zero.
    bias = k.scale_bias
    big = ops.gt(x, ops.c(0.5 * k.exp_max))
    biased_one = ops.ci(ops.bits_of_one() - _exponent_bits(ops, bias))
    s = ops.from_bits(ops.iadd(_n_shifted(ops, t), ops.select(big, biased_one, one_bits)))
    m = ops.select(big, ops.c(2.0**-bias), ops.c(1.0))
    y = ops.fma(s, c, ops.fma(s, r_hi, ops.sub(s, m)))
    return ops.mul(y, ops.select(big, ops.c(2.0**bias), ops.c(1.0)))


def emit_expm1(ops: FloatOps, x0):
    k = constants_for(ops)
    x = ops.clamp_below(ops.clamp_above(x0, k.exp_max), k.expm1_min)
    y = _expm1_scaled(ops, k, x, may_overflow=True)
    return ops.select(ops.eq(x0, ops.c(0.0)), x0, y)  # keeps the sign of -0


def emit_tanh(ops: FloatOps, x):
    k = constants_for(ops)
    a = ops.clamp_above(ops.fabs(x), k.tanh_one)
    t = _expm1_scaled(ops, k, ops.add(a, a), may_overflow=False)
    # tanh = t/(t + 2). With d = t + 2 rounded, err = t + 2 - d exactly,
    # r = 1/d and q = t*r, the residual t - q*(d + err) is computed exactly
    # (the inner fma) up to the tiny q*err, and one Newton step adds
    # residual/(t + 2) ~ residual*r back. The result is rounded once, from q
    # plus a small correction; the roundings of d and of the quotient would
    # otherwise cost up to 1.5 ULP.
    d = ops.add(t, ops.c(2.0))
    err = _two_sum_error(ops, t, ops.c(2.0), d)
    r = ops.div(ops.c(1.0), d)
    q = ops.mul(t, r)
    residual = ops.fma(ops.b.fneg(q), err, ops.fma_exact(ops.b.fneg(q), d, t))
    return ops.copysign(ops.fma(residual, r, q), x)


def _two_sum_error(ops: FloatOps, a, b, s):
    """(a + b) - s exactly, where s is a + b rounded (Knuth's TwoSum)."""
    bb = ops.sub(s, a)
    return ops.add(ops.sub(a, ops.sub(s, bb)), ops.sub(b, bb))


def _split_exponent(ops: FloatOps, k: PolyConstants, x):
    """x = 2^e * z with z in [sqrt(1/2), sqrt(2)), for positive normal x.

    Subtracting sqrt(1/2)'s pattern makes the exponent field round at sqrt(2)
    rather than at 2; z keeps x's mantissa under the adjusted exponent.
    """
    ix = ops.bits(x)
    e = ops.ashr(ops.isub(ix, ops.ci(k.sqrt_half_bits)), ops.mant_bits)
    z = ops.from_bits(ops.isub(ix, ops.shl(e, ops.mant_bits)))
    return ops.small_int_to_float(e), z


def _log_kernel(ops: FloatOps, k: PolyConstants, e, f, tail):
    """e*ln2 + log(1 + f) + tail for |f| <= sqrt(2) - 1 and small `tail`."""
    s = ops.div(f, ops.add(ops.c(2.0), f))
    z = ops.mul(s, s)
    r = ops.mul(z, ops.poly(z, k.log_t))
    hfsq = ops.mul(ops.mul(ops.c(0.5), f), f)
    low = ops.fma(e, ops.c(k.ln2_lo), tail)
    y_low = ops.sub(f, ops.sub(hfsq, ops.fma(s, ops.add(hfsq, r), low)))
    return ops.fma(e, ops.c(k.ln2_hi), y_low)


def _split_positive(ops: FloatOps, k: PolyConstants, x):
    """x = 2^e * (1 + f), f in [sqrt(1/2) - 1, sqrt(2) - 1) exactly, for positive
    finite x, subnormals included (they are scaled up into the normals first)."""
    subnormal = ops.lt(x, ops.c(k.min_normal))
    xs = ops.select(subnormal, ops.mul(x, ops.c(2.0**ops.mant_bits)), x)
    e, z = _split_exponent(ops, k, xs)
    e = ops.add(e, ops.select(subnormal, ops.c(-float(ops.mant_bits)), ops.c(0.0)))
    return e, ops.sub(z, ops.c(1.0))


def _log_special_values(ops: FloatOps, x, y):
    """y for positive finite x; +inf and NaN pass through, log(0) = -inf, log(< 0) = NaN."""
    inf = float("inf")
    y = ops.select(ops.lt(x, ops.c(inf)), y, x)
    special = ops.select(ops.eq(x, ops.c(0.0)), ops.c(-inf), ops.c(float("nan")))
    return ops.select(ops.gt(x, ops.c(0.0)), y, special)


def emit_log(ops: FloatOps, x):
    k = constants_for(ops)
    e, f = _split_positive(ops, k, x)
    return _log_special_values(ops, x, _log_kernel(ops, k, e, f, ops.c(0.0)))


def emit_log10(ops: FloatOps, x):
    """log10(x) = e*log10(2) + log10(1 + f), with x = 2^e (1 + f) as for log.

    Scaling log(x) by 1/ln(10) would round twice, and an integer result then
    comes out an ULP off (glibc 2.36's AVX-512 log10f gives 3.0000002 for
    1000, its SSE/AVX2 log10 7.000000000000001 for 1e7). Here the large
    terms are kept exact and summed once: e*log10_2_hi is exact (Cody-Waite
    constant), f*ivln10_hi is a rounded product p plus its exact error
    (fma_exact), and the sum a + p is a rounded s plus its exact error
    (Fast2Sum: |a| >= 0.30 > 0.18 >= |p| unless e = 0, when s = p). All the
    rest, log(1 + f) - f = c (|c| <= f^2/2, a few of its own ULPs off) times
    1/ln(10), and the low parts of the constants, is below a fifth of the
    result and goes into one small correction. Its error is then far below
    half an ULP of an integer result, so log10(10^n) is exactly n, and
    elsewhere the result is rounded about once.
    """
    k = constants_for(ops)
    e, f = _split_positive(ops, k, x)
    s = ops.div(f, ops.add(ops.c(2.0), f))
    z = ops.mul(s, s)
    r = ops.mul(z, ops.poly(z, k.log_t))
    hfsq = ops.mul(ops.mul(ops.c(0.5), f), f)
    c = ops.fma(s, ops.add(hfsq, r), ops.b.fneg(hfsq))  # log(1 + f) - f
    p = ops.mul(f, ops.c(k.ivln10_hi))
    p_err = ops.fma_exact(f, ops.c(k.ivln10_hi), ops.b.fneg(p))
    a = ops.mul(e, ops.c(k.log10_2_hi))
    total = ops.add(a, p)
    total_err = ops.sub(p, ops.sub(total, a))
    low = ops.fma(e, ops.c(k.log10_2_lo), ops.add(p_err, total_err))
    low = ops.fma(f, ops.c(k.ivln10_lo), low)
    low = ops.fma(c, ops.c(k.ivln10_hi), low)
    return _log_special_values(ops, x, ops.add(total, low))


def emit_log1p(ops: FloatOps, x):
    k = constants_for(ops)
    u = ops.add(ops.c(1.0), x)
    e, z = _split_exponent(ops, k, u)
    unscaled = ops.eq(e, ops.c(0.0))
    # When u is not rescaled, f = u - 1 would just be x rounded: take x.
    f = ops.select(unscaled, x, ops.sub(z, ops.c(1.0)))
    rounding = ops.div(ops.sub(x, ops.sub(u, ops.c(1.0))), u)
    tail = ops.select(unscaled, ops.c(0.0), rounding)
    y = _log_kernel(ops, k, e, f, tail)
    inf = float("inf")
    y = ops.select(ops.lt(x, ops.c(inf)), y, x)
    special = ops.select(ops.eq(x, ops.c(-1.0)), ops.c(-inf), ops.c(float("nan")))
    y = ops.select(ops.gt(x, ops.c(-1.0)), y, special)
    return ops.select(ops.eq(x, ops.c(0.0)), x, y)  # keeps the sign of -0


def _exp_of_minus_abs(ops: FloatOps, x):
    """exp(-|x|), in [0, 1]: the one exponential softplus and sigmoid need (it never overflows)."""
    return emit_exp(ops, ops.b.fneg(ops.fabs(x)), nonpositive=True)


def _log1p_of_unit(ops: FloatOps, k: PolyConstants, e):
    """log1p(e) for e in [0, 1] (or NaN), cheaper than emit_log1p and as accurate.

    1 + e lies in [1, 2], so its exponent split needs no bit work: below
    sqrt(2), f = e exactly (no rounding to add back); above, 1 + e = 2(1 + f)
    with f = (e - 1)/2, where e - 1 is exact for e >= 1/2 and otherwise off by
    the exact residual lo = e - (1 + (e - 1)) (Fast2Sum: |-1| >= e). Its share
    of the log, (lo/2)/(1 + f), is taken as (lo/2)(1 - f), off by f^2 < 0.09
    of a value below a quarter ULP of the result. So there is no division but
    the kernel's and the dependency chain after exp is short: softplus runs
    in 17 us per 4000 doubles here, against 21 us through emit_log1p.
    """
    upper = ops.lt(ops.c(k.sqrt2_minus_1), e)
    t = ops.sub(e, ops.c(1.0))
    f_upper = ops.mul(t, ops.c(0.5))
    half_lo = ops.mul(ops.sub(e, ops.add(t, ops.c(1.0))), ops.c(0.5))
    f = ops.select(upper, f_upper, e)
    tail = ops.select(upper, ops.fma(ops.b.fneg(half_lo), f_upper, half_lo), ops.c(0.0))
    return _log_kernel(ops, k, ops.select(upper, ops.c(1.0), ops.c(0.0)), f, tail)


def emit_softplus(ops: FloatOps, x):
    positive_part = ops.select(ops.gt(x, ops.c(0.0)), x, ops.c(0.0))  # NaN reaches the sum through log1p
    return ops.add(positive_part, _log1p_of_unit(ops, constants_for(ops), _exp_of_minus_abs(ops, x)))


def emit_sigmoid(ops: FloatOps, x):
    e = _exp_of_minus_abs(ops, x)
    numerator = ops.select(ops.lt(x, ops.c(0.0)), e, ops.c(1.0))  # NaN: 1 / (1 + NaN)
    return ops.div(numerator, ops.add(ops.c(1.0), e))

