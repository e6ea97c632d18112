"""How the native FFT (fft_kernels.py) transforms n points: its passes, its tables, its scratch.

A length is either *direct*, every prime factor at most MAX_RADIX: one Stockham pass per
factor (radix 4 while 4 divides, then 2, 3, 5 and the other odd primes), or *Bluestein*
(a prime factor above MAX_RADIX): a convolution done by FFTs of a smooth length m >= 2n - 1.

A pass (l1, radix, ido) reads the sub-transforms the earlier passes left (l1 of them, each
radix * ido long) and writes radix * l1 sub-transforms of length ido: one decimation-in-
frequency step, whose outputs are in natural order at the end (no bit reversal pass).

Twiddle tables live in one module global per length (computed on the first call):
pass p with ido > 1 owns (radix - 1) * ido complex factors exp(-2 pi i c i / (radix ido));
a Bluestein length owns its chirp exp(-pi i k^2 / n) (n terms) and the m-point FFT of the
conjugate chirp divided by m.
"""
from __future__ import annotations

import dataclasses
import functools

MAX_RADIX = 13  # odd primes up to this are unrolled butterflies (p^2 / 2 products each; 31 compiles 5 s)


def prime_factors(n: int) -> list:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def radices(n: int) -> list:
    """The radix of each pass, in order: 4s first (fewest passes), then 2, then odd primes."""
    primes = prime_factors(n)
    twos = primes.count(2)
    return [4] * (twos // 2) + [2] * (twos % 2) + [p for p in primes if p != 2]


def is_direct(n: int) -> bool:
    return all(p <= MAX_RADIX for p in prime_factors(n))


def smooth_length(at_least: int) -> int:
    """The smallest 2^a 3^b 5^c >= at_least (Bluestein's convolution length)."""
    best, p2 = None, 1
    while True:
        p3 = p2
        while True:
            p5 = p3
            while p5 < at_least:
                p5 *= 5
            best = p5 if best is None else min(best, p5)
            if p3 >= at_least:
                break
            p3 *= 3
        if p2 >= at_least:
            break
        p2 *= 2
    return best


@dataclasses.dataclass(frozen=True)
class Pass:
    l1: int
    radix: int
    ido: int
    table: int  # offset of its twiddles (complex entries) in the length's table, -1 when ido == 1


@dataclasses.dataclass(frozen=True)
class Plan:
    """The plan of one length: its passes (direct) or its convolution length m (Bluestein)."""
    n: int
    passes: tuple
    bluestein_m: int  # 0 for a direct length
    table_size: int  # complex entries of its global table
    scratch: int  # real elements of scratch a call needs (re and im parts)

    @property
    def chirp(self) -> int:
        return 0  # the chirp leads a Bluestein table; the m-point kernel follows it

    @property
    def kernel(self) -> int:
        return self.n


@functools.lru_cache(maxsize=None)
def plan(n: int) -> Plan:
    if n < 1:
        raise ValueError(f"an FFT needs n >= 1 points, got {n}")
    if not is_direct(n):
        m = smooth_length(2 * n - 1)
        # a, its transform (m complex each), then what the m-point FFT itself needs
        return Plan(n, (), m, n + m, 4 * m + plan(m).scratch)
    passes, l1, table = [], 1, 0
    for r in radices(n):
        ido = n // (l1 * r)
        passes.append(Pass(l1, r, ido, table if ido > 1 else -1))
        if ido > 1:
            table += (r - 1) * ido
        l1 *= r
    return Plan(n, tuple(passes), 0, table, 2 * n)
