"""Complex arithmetic on pairs of real IR values, with NumPy's formulas.

complex_split.py turns every complex tensor into a `Pair` (its real and
imaginary parts, real Syms of one shape, or scalar Literals) and every
complex op into real ops emitted by the functions here. They follow what
NumPy computes, so native code gives NumPy's numbers, not merely close ones:

    mul    (ar br - ai bi, ar bi + ai br), NumPy's loop
    div    Smith's algorithm as NumPy's loop has it (the larger part of the
           divisor divides the other; a zero divisor divides by |br|)
    abs    hypot; angle is atan2 (traced as real ops)
    exp    exp(ar) (cos ai, sin ai), with C99's special values (a zero
           imaginary part stays exact, infinite real parts) and a scaled
           exp where exp(ar) alone would overflow
    log    (log hypot, atan2), log1p((x-1)(x+1) + y^2)/2 near |z| = 1 as
           glibc's clog; log2/log10 scale it by log2(e)/log10(e); log1p
           and expm1 are NumPy's own formulas
    arctanh, arctan: FreeBSD's catanh (Kahan's formula and its cases),
           arctan(z) = -i arctanh(iz)
    arcsin, arccos, arcsinh, arccosh: Kahan's formulas from sqrt(1 +- z),
           log(2z) beyond 1/eps, and glibc's values at nan and infinities
    sqrt   Kahan's half-angle formula with C99's special values
    sinh cosh tanh: the addition formulas, with C99's special values on
           the axes; tanh is glibc's sinh cosh / (sinh^2 + cos^2); sin, cos
           and tan are sinh, cosh and tanh of iz, rotated (as C99 defines them)
    pow    an integer exponent |n| < 100 multiplies by squaring in NumPy's
           order; another exponent is exp(b log a) with C's complex product
           (C99 Annex G's recovery of infinities), as C's cpow

Transcendental results agree with NumPy's (glibc's) to a few units in the
last place, not bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.ops import elementwise as ew


class Pair:
    """A complex value as its real and imaginary parts (real Syms of one shape, or scalar Literals)."""

    __slots__ = ("re", "im")

    def __init__(self, re, im):
        self.re, self.im = re, im


def _lit(like, value):
    """`value` as a scalar Literal of like's (real) dtype."""
    return like.builder.literal(value, like.dtype)


def _isinf(x):
    return ew.eq(ew.abs(x), math.inf)


def _isfinite(x):
    return ew.lt(ew.abs(x), math.inf)


def _signbit(x):
    """x < 0, including -0.0 (1 / -0.0 is -inf)."""
    return ew.logical_or(ew.lt(x, 0.0), ew.logical_and(ew.eq(x, 0.0), ew.lt(1.0 / x, 0.0)))


def _copysign(magnitude, sign):
    """|magnitude| with the sign of `sign` (magnitude >= 0 or nan)."""
    return ew.where(_signbit(sign), ew.neg(magnitude), magnitude)


def _select(cond, a: Pair, b: Pair) -> Pair:
    return Pair(ew.where(cond, a.re, b.re), ew.where(cond, a.im, b.im))


def add(a: Pair, b: Pair) -> Pair:
    return Pair(a.re + b.re, a.im + b.im)


def sub(a: Pair, b: Pair) -> Pair:
    return Pair(a.re - b.re, a.im - b.im)


def neg(a: Pair) -> Pair:
    return Pair(ew.neg(a.re), ew.neg(a.im))


def conj(a: Pair) -> Pair:
    return Pair(a.re, ew.neg(a.im))


def mul(a: Pair, b: Pair) -> Pair:
    return Pair(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)


def div(a: Pair, b: Pair) -> Pair:
    """NumPy's complex division (Smith's algorithm, branch by branch)."""
    abr, abi = ew.abs(b.re), ew.abs(b.im)
    rat1 = b.im / b.re
    scl1 = 1.0 / (b.re + b.im * rat1)
    real_larger = Pair((a.re + a.im * rat1) * scl1, (a.im - a.re * rat1) * scl1)
    by_zero = Pair(a.re / abr, a.im / abr)
    rat2 = b.re / b.im
    scl2 = 1.0 / (b.im + b.re * rat2)
    imag_larger = Pair((a.re * rat2 + a.im) * scl2, (a.im * rat2 - a.re) * scl2)
    zero = ew.logical_and(ew.eq(abr, 0.0), ew.eq(abi, 0.0))
    return _select(ew.ge(abr, abi), _select(zero, by_zero, real_larger), imag_larger)


def eq(a: Pair, b: Pair):
    return ew.logical_and(ew.eq(a.re, b.re), ew.eq(a.im, b.im))


def ne(a: Pair, b: Pair):
    return ew.logical_or(ew.ne(a.re, b.re), ew.ne(a.im, b.im))


def abs(a: Pair):
    return ew.hypot(a.re, a.im)


def _exp_overflow(dtype) -> float:
    """Beyond this real part exp(ar) overflows though exp(ar) cos(ai) may not."""
    return 709.0 if np.dtype(dtype) == np.float64 else 88.0


def exp(a: Pair) -> Pair:
    x, y = a.re, a.im
    c, s = ew.cos(y), ew.sin(y)
    r = ew.exp(x)
    plain = Pair(r * c, r * s)
    half = ew.exp(x * 0.5)  # exp(x) = half * half, each finite where exp(x) alone overflows
    scaled = Pair((half * c) * half, (half * s) * half)
    out = _select(ew.gt(x, _exp_overflow(x.dtype)), scaled, plain)
    # C99 (and NumPy's): exp(x + 0i) is exactly exp(x) + 0i; exp(-inf + i(inf|nan)) = 0 + 0i;
    # exp(+inf + i(inf|nan)) = inf + nan i.
    nan = _lit(x, math.nan)
    zero = _lit(x, 0.0)
    infinite_real = ew.logical_and(_isinf(x), ew.logical_not(_isfinite(y)))
    at_infinity = _select(ew.lt(x, 0.0), Pair(zero, zero), Pair(x, nan))
    out = _select(infinite_real, at_infinity, out)
    return _select(ew.eq(y, 0.0), Pair(r, y), out)


def log(a: Pair) -> Pair:
    """(log |z|, arg z); near the unit circle log |z| is log1p((x - 1)(x + 1) + y^2) / 2 (x the
    larger part), which keeps the bits log(hypot) loses there, as glibc's clog does."""
    ax, ay = ew.maximum(ew.abs(a.re), ew.abs(a.im)), ew.minimum(ew.abs(a.re), ew.abs(a.im))
    near_one = ew.logical_and(ew.ge(ax, 0.5), ew.le(ax, 2.0))
    close = 0.5 * ew.log1p((ax - 1.0) * (ax + 1.0) + ay * ay)
    re = ew.where(near_one, close, ew.log(ew.hypot(a.re, a.im)))
    return Pair(re, ew.arctan2(a.im, a.re))


def _naive_log(a: Pair) -> Pair:
    return Pair(ew.log(ew.hypot(a.re, a.im)), ew.arctan2(a.im, a.re))


def _scaled(a: Pair, factor: float) -> Pair:
    return Pair(a.re * factor, a.im * factor)


def log2(a: Pair) -> Pair:
    return _scaled(log(a), 1.0 / math.log(2.0))


def log10(a: Pair) -> Pair:
    return _scaled(log(a), 1.0 / math.log(10.0))


def exp2(a: Pair) -> Pair:
    return exp(_scaled(a, math.log(2.0)))


def log1p(a: Pair) -> Pair:
    return _naive_log(Pair(a.re + 1.0, a.im))  # NumPy's own formula: log(hypot(x + 1, y))


def expm1(a: Pair) -> Pair:
    half = ew.sin(a.im * 0.5)
    return Pair(ew.expm1(a.re) * ew.cos(a.im) - 2.0 * half * half, ew.exp(a.re) * ew.sin(a.im))


def sqrt(a: Pair) -> Pair:
    x0, y0 = a.re, a.im
    finfo = np.finfo(x0.dtype)
    # Subnormal parts lose bits when halved: scale them up by 2^(2m) first, the root down by 2^m.
    m = finfo.nmant + 1 + (finfo.nmant + 1) % 2
    tiny = ew.lt(ew.hypot(x0, y0), float(finfo.tiny) * 4.0)
    x = ew.where(tiny, x0 * float(2.0 ** (2 * m)), x0)
    y = ew.where(tiny, y0 * float(2.0 ** (2 * m)), y0)
    unscale = ew.where(tiny, _lit(x0, 2.0 ** -m), _lit(x0, 1.0))
    h = ew.hypot(x, y)
    t_pos = ew.sqrt(x * 0.5 + h * 0.5)
    t_neg = ew.sqrt(h * 0.5 - x * 0.5)
    out = _select(ew.ge(x, 0.0), Pair(t_pos * unscale, y / (2.0 * t_pos) * unscale),
                  Pair(ew.abs(y) / (2.0 * t_neg) * unscale, _copysign(t_neg, y) * unscale))
    x, y = x0, y0
    inf, nan = _lit(x, math.inf), _lit(x, math.nan)
    # C99's special values, the later ones first (each where() overrides what follows it).
    out = _select(ew.eq(x, math.inf), Pair(x, _copysign(y - y, y)), out)
    out = _select(ew.eq(x, -math.inf), Pair(ew.abs(y - y), _copysign(inf, y)), out)
    out = _select(ew.ne(x, x), Pair(nan, nan), out)
    out = _select(_isinf(y), Pair(inf, y), out)
    zero = ew.logical_and(ew.eq(x, 0.0), ew.eq(y, 0.0))
    return _select(zero, Pair(_lit(x, 0.0), y), out)


def _far_sinh_cosh(x, y, cosh_first: bool) -> Pair:
    """sinh or cosh of x + iy where cosh(x) alone overflows: e^|x| / 2 (cos y, +-sin y), with e^|x|
    as two finite halves (glibc's scaling)."""
    half = ew.exp(ew.abs(x) * 0.5)
    sign = ew.where(_signbit(x), _lit(x, -1.0), _lit(x, 1.0))
    c, s = (half * 0.5 * ew.cos(y)) * half, (half * 0.5 * ew.sin(y)) * half
    return Pair(c, sign * s) if cosh_first else Pair(sign * c, s)


def _overflows(x):
    return ew.logical_and(ew.gt(ew.abs(x), _exp_overflow(x.dtype)), _isfinite(x))


def sinh(a: Pair) -> Pair:
    x, y = a.re, a.im
    out = Pair(ew.sinh(x) * ew.cos(y), ew.cosh(x) * ew.sin(y))
    out = _select(_overflows(x), _far_sinh_cosh(x, y, False), out)
    # C99's values on the axes: sinh(x + 0i) = sinh(x) + 0i, sinh(0 + iy) = 0 + i sin(y).
    out = _select(ew.eq(x, 0.0), Pair(x, ew.sin(y)), out)
    # C99 leaves the sign of sinh(+-inf + i(inf|nan)) = +-inf + nan i open; glibc's is +.
    out = _select(ew.logical_and(_isinf(x), ew.logical_not(_isfinite(y))),
                  Pair(_lit(x, math.inf), _lit(x, math.nan)), out)
    return _select(ew.eq(y, 0.0), Pair(ew.sinh(x), y), out)


def cosh(a: Pair) -> Pair:
    x, y = a.re, a.im
    out = Pair(ew.cosh(x) * ew.cos(y), ew.sinh(x) * ew.sin(y))
    out = _select(_overflows(x), _far_sinh_cosh(x, y, True), out)
    # C99's values on the axes: cosh(x + 0i) = cosh(x) + 0i, cosh(0 + iy) = cos(y) + 0i.
    zero = _lit(x, 0.0)
    out = _select(ew.eq(x, 0.0), Pair(ew.cos(y), ew.where(_isfinite(y), out.im, zero)), out)
    out = _select(ew.logical_and(_isinf(x), ew.logical_not(_isfinite(y))),
                  Pair(_lit(x, math.inf), _lit(x, math.nan)), out)
    return _select(ew.eq(y, 0.0), Pair(ew.cosh(x), ew.where(_isfinite(x), x * y, zero)), out)


def sin(a: Pair) -> Pair:
    s = sinh(Pair(ew.neg(a.im), a.re))  # sin z = -i sinh(i z), as C99 defines it
    out = Pair(s.im, ew.neg(s.re))
    # glibc's sin(x + i inf) for x inf or nan is nan + i inf (C99 leaves the sign unspecified).
    odd = ew.logical_and(_isinf(a.im), ew.logical_not(_isfinite(a.re)))
    return _select(odd, Pair(_lit(a.re, math.nan), ew.abs(a.im)), out)


def cos(a: Pair) -> Pair:
    return cosh(Pair(ew.neg(a.im), a.re))  # cos z = cosh(i z)


def _tanh_far(dtype) -> float:
    """Beyond this |real part| sinh^2 overflows; tanh is +-1 + (4 sin cos e^-2|x|) i there."""
    return 354.0 if np.dtype(dtype) == np.float64 else 44.0


def tanh(a: Pair) -> Pair:
    x, y = a.re, a.im
    sh, ch, s, c = ew.sinh(x), ew.cosh(x), ew.sin(y), ew.cos(y)
    den = sh * sh + c * c
    near = Pair(ew.where(ew.eq(x, 0.0), x, sh * ch / den), s * c / den)  # tanh(0 + iy) = 0 + i tan(y)
    one = ew.where(_signbit(x), _lit(x, -1.0), _lit(x, 1.0))
    tail = 4.0 * s * c * ew.exp(-2.0 * ew.abs(x))
    far = _select(_isfinite(y), Pair(one, tail),  # C99: tanh(+-inf + iy) = +-1 + 0i for any y
                  _select(_isinf(x), Pair(one, _lit(x, 0.0)), Pair(_lit(x, math.nan), _lit(x, math.nan))))
    out = _select(ew.gt(ew.abs(x), _tanh_far(x.dtype)), far, near)
    return _select(ew.logical_and(ew.ne(x, x), ew.eq(y, 0.0)), Pair(x, y), out)  # tanh(nan + 0i) = nan + 0i


def tan(a: Pair) -> Pair:
    t = tanh(Pair(ew.neg(a.im), a.re))  # tan z = -i tanh(i z)
    return Pair(t.im, ew.neg(t.re))


def int_power(a: Pair, n: int) -> Pair:
    """a ** n for a constant integer |n| < 100, multiplying in NumPy's order."""
    one = Pair(_lit(a.re, 1.0), _lit(a.re, 0.0))
    if n == 1:
        return a
    if n == 2:
        return mul(a, a)
    if n == 3:
        return mul(a, mul(a, a))
    m, mask, acc, p = -n if n < 0 else n, 1, one, a
    while True:
        if m & mask:
            acc = mul(acc, p)
        mask <<= 1
        if m < mask:
            break
        p = mul(p, p)
    return div(one, acc) if n < 0 else acc


def const_power(a: Pair, exponent: complex) -> Pair:
    """a ** exponent for a constant exponent, as NumPy's power: 1 for a zero exponent; at a zero
    base 0 for an exponent of positive real part and nan otherwise; else int_power or
    exp(b log a) (C's cpow)."""
    br, bi = exponent.real, exponent.imag
    x = a.re
    if br == 0 and bi == 0:
        return Pair(_lit(x, 1.0), _lit(x, 0.0))
    if bi == 0 and br == int(br) and -100 < br < 100:
        out = int_power(a, int(br))
    else:
        out = exp(c_mul(Pair(_lit(x, br), _lit(x, bi)), log(a)))  # C's cpow, which NumPy calls
    return _at_zero_base(a, _lit(x, br), out)


def _at_zero_base(a: Pair, br, out: Pair) -> Pair:
    x = a.re
    zero = ew.logical_and(ew.eq(a.re, 0.0), ew.eq(a.im, 0.0))
    at_zero = ew.where(ew.gt(br, 0.0), _lit(x, 0.0), _lit(x, math.nan))  # NumPy 2: 0 ** b is 0 for Re(b) > 0
    return _select(zero, Pair(at_zero, at_zero), out)


def power(a: Pair, b: Pair) -> Pair:
    """a ** b elementwise, as NumPy's power decides per element: 1 where b is 0; at a zero base 0
    or nan; an integer b, |b| < 100, by squaring (the bits of |b| chosen by selects, so every
    element multiplies in NumPy's order); else exp(b log a) with C's complex product."""
    x = a.re
    one = Pair(_lit(x, 1.0), _lit(x, 0.0))
    m = ew.abs(b.re)
    acc, p = one, a
    for k in range(7):  # |b| < 100 < 2^7
        q = ew.floor(m * (0.5 ** k))
        bit = ew.eq(q - 2.0 * ew.floor(q * 0.5), 1.0)
        acc = _select(bit, mul(acc, p), acc)
        if k < 6:
            p = mul(p, p)
    by_squaring = _select(ew.lt(b.re, 0.0), div(one, acc), acc)
    n = b.re
    small_int = ew.logical_and(ew.logical_and(ew.eq(b.im, 0.0), ew.eq(ew.floor(n), n)),
                               ew.lt(ew.abs(n), 100.0))
    out = _select(small_int, by_squaring, exp(c_mul(b, log(a))))
    out = _select(ew.logical_and(small_int, ew.eq(n, 3.0)), mul(a, mul(a, a)), out)
    out = _select(ew.logical_and(small_int, ew.eq(n, 2.0)), mul(a, a), out)
    out = _select(ew.logical_and(small_int, ew.eq(n, 1.0)), a, out)
    out = _at_zero_base(a, b.re, out)
    exponent_zero = ew.logical_and(ew.eq(b.re, 0.0), ew.eq(b.im, 0.0))
    return _select(exponent_zero, one, out)


def c_mul(p: Pair, q: Pair) -> Pair:
    """p * q as C computes a complex product (C99 Annex G, GCC's __muldc3): the plain formula,
    and where that is nan + nan i, infinite parts boxed to +-1 (the others to +-0) times inf."""
    a, b, c, d = p.re, p.im, q.re, q.im
    ac, bd, ad, bc = a * c, b * d, a * d, b * c
    plain = Pair(ac - bd, ad + bc)
    lost = ew.logical_and(ew.ne(plain.re, plain.re), ew.ne(plain.im, plain.im))
    p_inf = ew.logical_or(_isinf(a), _isinf(b))
    q_inf = ew.logical_or(_isinf(c), _isinf(d))
    overflowed = ew.logical_or(ew.logical_or(_isinf(ac), _isinf(bd)), ew.logical_or(_isinf(ad), _isinf(bc)))

    def box(v):  # +-1 for an infinite part, +-0 for a finite one
        return _copysign(ew.where(_isinf(v), _lit(v, 1.0), _lit(v, 0.0)), v)

    def unnan(v):
        return ew.where(ew.ne(v, v), _copysign(_lit(v, 0.0), v), v)

    # GCC's three cases in order: p infinite, q infinite, a product overflowed.
    a2, b2 = ew.where(p_inf, box(a), a), ew.where(p_inf, box(b), b)
    c2, d2 = ew.where(p_inf, unnan(c), c), ew.where(p_inf, unnan(d), d)
    c2, d2 = ew.where(q_inf, box(c), c2), ew.where(q_inf, box(d), d2)
    a2, b2 = ew.where(q_inf, unnan(a2), a2), ew.where(q_inf, unnan(b2), b2)
    neither = ew.logical_not(ew.logical_or(p_inf, q_inf))
    third = ew.logical_and(neither, overflowed)
    a2, b2 = ew.where(third, unnan(a2), a2), ew.where(third, unnan(b2), b2)
    c2, d2 = ew.where(third, unnan(c2), c2), ew.where(third, unnan(d2), d2)
    boxed = Pair((a2 * c2 - b2 * d2) * math.inf, (a2 * d2 + b2 * c2) * math.inf)
    recalc = ew.logical_and(lost, ew.logical_or(ew.logical_not(neither), overflowed))
    return _select(recalc, boxed, plain)


def arctanh(a: Pair) -> Pair:
    """FreeBSD's catanh (Kahan's formula, with its cases for the real axis, the imaginary axis,
    nan, |z| beyond 1/eps, |z| below sqrt(3 eps)/2, and |x| = 1), written as selects."""
    x, y = a.re, a.im
    ax, ay = ew.abs(x), ew.abs(y)
    eps = float(np.finfo(x.dtype).eps)
    half_pi = _lit(x, math.pi / 2)
    zero, nan = _lit(x, 0.0), _lit(x, math.nan)
    one_minus = 1.0 - ax
    rx = 0.25 * ew.log1p(4.0 * ax / (one_minus * one_minus + ay * ay))
    rx = ew.where(ew.logical_and(ew.eq(ax, 1.0), ew.lt(ay, eps)), (math.log(2.0) - ew.log(ay)) * 0.5, rx)
    ry = 0.5 * ew.arctan2(2.0 * ay, one_minus * (1.0 + ax) - ay * ay)
    ry = ew.where(ew.lt(ay, eps), 0.5 * ew.arctan2(2.0 * ay, one_minus * (1.0 + ax)), ry)
    ry = ew.where(ew.eq(ax, 1.0), 0.5 * ew.arctan2(_lit(x, 2.0), ew.neg(ay)), ry)
    out = Pair(_copysign(rx, x), _copysign(ry, y))
    tiny = math.sqrt(3.0 * eps) / 2.0
    out = _select(ew.logical_and(ew.lt(ax, tiny), ew.lt(ay, tiny)), a, out)
    h = ew.hypot(x, y)
    far = ew.logical_or(ew.gt(ax, 1.0 / eps), ew.gt(ay, 1.0 / eps))
    out = _select(far, Pair((x / h) / h, _copysign(half_pi, y)), out)
    infinite = ew.logical_or(_isinf(x), _isinf(y))
    out = _select(infinite, Pair(_copysign(zero, x), _copysign(half_pi, y)), out)
    some_nan = ew.logical_or(ew.ne(x, x), ew.ne(y, y))
    nan_case = _select(_isinf(y), Pair(_copysign(zero, x), _copysign(half_pi, y)), Pair(nan, nan))
    nan_case = _select(_isinf(x), Pair(_copysign(zero, x), nan), nan_case)
    out = _select(some_nan, nan_case, out)
    out = _select(ew.eq(x, 0.0), Pair(x, ew.arctan(y)), out)
    return _select(ew.logical_and(ew.eq(y, 0.0), ew.le(ax, 1.0)), Pair(ew.arctanh(x), y), out)


def arctan(a: Pair) -> Pair:
    t = arctanh(Pair(ew.neg(a.im), a.re))  # arctan z = -i arctanh(i z), as C99 defines it
    return Pair(t.im, ew.neg(t.re))


# --- arcsinh, arcsin, arccos, arccosh: Kahan's formulas in the finite range (accurate near 0
# and near the branch points), C99's values for nan and infinities, and log(2z) beyond 1/eps.

def _log_far(x, y) -> Pair:
    """log(z) + log(2) for |z| > 1/eps (no overflow in |z|: log(max) + log1p((min/max)^2) / 2)."""
    ax, ay = ew.abs(x), ew.abs(y)
    big, small = ew.maximum(ax, ay), ew.minimum(ax, ay)
    ratio = ew.where(ew.eq(small, big), _lit(x, 1.0), small / big)  # 1 for inf and inf
    return Pair(ew.log(big) + 0.5 * ew.log1p(ratio * ratio) + math.log(2.0), ew.arctan2(y, x))


def _far(x, y):
    eps = float(np.finfo(x.dtype).eps)
    return ew.logical_or(ew.gt(ew.abs(x), 1.0 / eps), ew.gt(ew.abs(y), 1.0 / eps))


def arcsinh(a: Pair) -> Pair:
    x, y = a.re, a.im
    # Kahan: arcsinh z = -i arcsin(iz); arcsin w = (atan2(Re w, Re(s1 s2)), arcsinh(Im(conj(s1) s2)))
    # with s1 = sqrt(1 - w), s2 = sqrt(1 + w), w = iz = (-y, x).
    s1 = sqrt(Pair(1.0 + y, ew.neg(x)))
    s2 = sqrt(Pair(1.0 - y, x))
    w_re = ew.arctan2(ew.neg(y), s1.re * s2.re - s1.im * s2.im)
    w_im = ew.arcsinh(s1.re * s2.im - s1.im * s2.re)
    out = Pair(w_im, ew.neg(w_re))
    far = _log_far(ew.abs(x), ew.abs(y))
    out = _select(_far(x, y), Pair(_copysign(far.re, x), _copysign(far.im, y)), out)
    nan = _lit(x, math.nan)
    nan_case = _select(ew.eq(y, 0.0), Pair(nan, y), Pair(nan, nan))
    nan_case = _select(_isinf(y), Pair(ew.abs(y), nan), nan_case)
    nan_case = _select(_isinf(x), Pair(x, nan), nan_case)
    return _select(ew.logical_or(ew.ne(x, x), ew.ne(y, y)), nan_case, out)


def arcsin(a: Pair) -> Pair:
    t = arcsinh(Pair(ew.neg(a.im), a.re))  # arcsin z = -i arcsinh(iz), as C99 defines it
    out = Pair(t.im, ew.neg(t.re))
    # glibc's arcsin(+-inf + nan i) is nan + inf i (C99 leaves the sign open)
    odd = ew.logical_and(_isinf(a.re), ew.ne(a.im, a.im))
    return _select(odd, Pair(_lit(a.re, math.nan), _lit(a.re, math.inf)), out)


def arccos(a: Pair) -> Pair:
    x, y = a.re, a.im
    s1, s2 = sqrt(Pair(1.0 - x, ew.neg(y))), sqrt(Pair(1.0 + x, y))
    out = Pair(2.0 * ew.arctan2(s1.re, s2.re), ew.arcsinh(s2.re * s1.im - s2.im * s1.re))
    far = _log_far(x, y)
    out = _select(_far(x, y), Pair(ew.abs(far.im), ew.where(_signbit(y), far.re, ew.neg(far.re))), out)
    nan, inf = _lit(x, math.nan), _lit(x, math.inf)
    nan_case = _select(ew.eq(x, 0.0), Pair(_lit(x, math.pi / 2), nan), Pair(nan, nan))
    nan_case = _select(_isinf(y), Pair(nan, ew.neg(y)), nan_case)
    nan_case = _select(_isinf(x), Pair(nan, ew.neg(inf)), nan_case)
    return _select(ew.logical_or(ew.ne(x, x), ew.ne(y, y)), nan_case, out)


def arccosh(a: Pair) -> Pair:
    w = arccos(a)
    rx, ry = w.im, w.re  # FreeBSD's cacosh from cacos
    out = Pair(ew.abs(rx), _copysign(ry, a.im))
    out = _select(ew.ne(ry, ry), Pair(ry, ry), out)
    out = _select(ew.ne(rx, rx), Pair(ew.abs(ry), rx), out)
    out = _select(ew.logical_and(ew.ne(rx, rx), ew.ne(ry, ry)), Pair(ry, rx), out)
    # glibc's values where FreeBSD's differ: arccosh(0 + nan i) = nan + i pi/2,
    # arccosh of an infinity and a nan = inf + nan i
    x, y = a.re, a.im
    nan_im = ew.ne(y, y)
    out = _select(ew.logical_and(ew.eq(x, 0.0), nan_im), Pair(_lit(x, math.nan), _lit(x, math.pi / 2)), out)
    inf_and_nan = ew.logical_and(ew.logical_or(_isinf(x), _isinf(y)), ew.logical_or(nan_im, ew.ne(x, x)))
    return _select(inf_and_nan, Pair(_lit(x, math.inf), _lit(x, math.nan)), out)
