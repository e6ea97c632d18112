"""The polygamma functions psi^(n)(x) (n = 0: digamma), written once over a
small arithmetic backend so that the NumPy reference (here) and native code
(codegen/scalar_special.py) run the same algorithm:

- for x >= 0: the recurrence psi^(n)(x) = psi^(n)(x + N) - (-1)^n n! sum_k (x + k)^-(n+1)
  over k < N moves the argument to w = x + N >= 10 + 2n, where the asymptotic
  series in 1/w (Bernoulli numbers B2..B16) is below the rounding error;
- for x < 0: the reflection psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi d^n/dx^n cot(pi x),
  the n-th derivative of cot being a polynomial in c = cot(pi r), r = x - round(x)
  (exact, so large |x| keeps its digits);
- at the poles (x a non-positive integer) SciPy's values: digamma(+0) = -inf,
  digamma(-0) = +inf, NaN at the negative integers; for n >= 1, (-1)^(n+1) inf.

Accuracy (tests/functions/test_special.py, against scipy.special): within a few
ULP where psi^(n) is not near a root; near digamma's root 1.4616... the error
is absolute (~1e-16), as the shift subtracts numbers of size ~2.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_BERNOULLI = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510)]  # B2, B4, ..., B16


def shift(n: int) -> int:
    """How far the argument is moved up before the asymptotic series: 10 + 2n."""
    return 10 + 2 * n


def series_coefficients(n: int) -> list:
    """Coefficients a_k of the asymptotic series in 1/w^2 (k = 1..8), as floats:
    n = 0: psi(w) ~ log w - 1/(2w) - sum a_k w^-2k, a_k = B2k / 2k;
    n >= 1: psi^(n)(w) ~ (-1)^(n+1) w^-n ((n-1)! + n!/(2w) + sum a_k w^-2k),
    a_k = B2k (2k + n - 1)! / (2k)!."""
    if n == 0:
        return [float(b / (2 * k)) for k, b in enumerate(_BERNOULLI, start=1)]
    return [float(b * math.factorial(2 * k + n - 1) / math.factorial(2 * k)) for k, b in enumerate(_BERNOULLI, start=1)]


def cot_derivative_coefficients(n: int) -> list:
    """Coefficients (lowest power first) of the polynomial P_n with
    d^n/dx^n cot(pi x) = P_n(cot(pi x)): P_0 = c, P_{k+1} = -pi (1 + c^2) P_k'(c)."""
    p = [0.0, 1.0]
    for _ in range(n):
        dp = [i * p[i] for i in range(1, len(p))]  # P'
        nxt = [0.0] * (len(dp) + 2)
        for i, a in enumerate(dp):  # -pi (1 + c^2) P'
            nxt[i] -= math.pi * a
            nxt[i + 2] -= math.pi * a
        p = nxt
    return p


def polygamma(m, n: int, x):
    """psi^(n)(x) computed with backend `m` (NumpyBackend here, or native code's)."""
    reflect = m.lt(x, 0.0)
    z = m.select(reflect, m.sub(1.0, x), x)
    sign_n = -1.0 if n % 2 else 1.0
    total = None
    for k in range(shift(n)):
        t = m.div(1.0, m.add(z, float(k)))
        term = t
        for _ in range(n):
            term = m.mul(term, t)
        total = term if total is None else m.add(total, term)
    w = m.add(z, float(shift(n)))
    iw = m.div(1.0, w)
    iw2 = m.mul(iw, iw)
    series = m.poly(iw2, [0.0, *series_coefficients(n)])
    if n == 0:
        value = m.sub(m.sub(m.sub(m.log(w), m.mul(0.5, iw)), series), total)
    else:
        iwn = iw
        for _ in range(n - 1):
            iwn = m.mul(iwn, iw)
        head = m.add(m.add(float(math.factorial(n - 1)), m.mul(math.factorial(n) / 2.0, iw)), series)
        asym = m.mul(-sign_n, m.mul(iwn, head))
        value = m.sub(asym, m.mul(sign_n * math.factorial(n), total))
    r = m.sub(x, m.round(x))
    c = m.div(1.0, m.tan(m.mul(math.pi, r)))
    reflected = m.sub(m.mul(sign_n, value), m.mul(math.pi, m.poly(c, cot_derivative_coefficients(n))))
    out = m.select(reflect, reflected, value)
    # poles: x a non-positive integer
    pole = m.logical_and(m.le(x, 0.0), m.eq(r, 0.0))
    if n == 0:
        at_pole = m.select(m.eq(x, 0.0), m.neg(m.div(1.0, x)), m.nan_like(x))  # 1/-0 = -inf: +inf
    else:
        at_pole = m.constant_like(x, -sign_n * math.inf)
    return m.select(pole, at_pole, out)


class NumpyBackend:
    """polygamma's arithmetic on NumPy arrays of one float dtype (the reference)."""

    def __init__(self, dtype):
        self.t = np.dtype(dtype).type

    def _v(self, a):
        return self.t(a) if isinstance(a, float) else a

    def add(self, a, b): return np.add(self._v(a), self._v(b))
    def sub(self, a, b): return np.subtract(self._v(a), self._v(b))
    def mul(self, a, b): return np.multiply(self._v(a), self._v(b))
    def div(self, a, b): return np.divide(self._v(a), self._v(b))
    def neg(self, a): return np.negative(a)
    def log(self, a): return np.log(a)
    def tan(self, a): return np.tan(a)
    def round(self, a): return np.round(a)
    def lt(self, a, b): return np.less(a, self._v(b))
    def le(self, a, b): return np.less_equal(a, self._v(b))
    def eq(self, a, b): return np.equal(a, self._v(b))
    def logical_and(self, a, b): return np.logical_and(a, b)
    def select(self, c, a, b): return np.where(c, self._v(a), self._v(b))
    def nan_like(self, a): return np.full_like(a, np.nan)
    def constant_like(self, a, value): return np.full_like(a, value)

    def poly(self, x, coeffs):
        acc = self.t(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = np.add(np.multiply(acc, x), self.t(c))
        return acc


def polygamma_reference(x, n: int):
    """psi^(n)(x) elementwise in x's float dtype (NumPy), quiet about the poles' divisions."""
    x = np.asarray(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.asarray(polygamma(NumpyBackend(x.dtype), n, x), dtype=x.dtype)
