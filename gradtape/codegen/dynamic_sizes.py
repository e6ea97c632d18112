"""Sizes known only when the code runs: a polynomial in one run-time size N.

A dynamic version of a Function (see codegen/dynamic.py) has shapes in which
one size, N, is not a number but `SymSize`: `N`, `4*N`, `N*N + 3`. Code
generation computes with them as with ints (strides, sizes, loop bounds),
and the emitter turns one into LLVM code that reads N at run time.

Every question code generation asks of a size must have the same answer for
every N the version runs with (N >= MIN_SIZE: sizes 0 and 1 get their own,
specialized, versions, as PyTorch's dynamic shapes do): `4*N > 1` is True,
`N == 0` is False. A question whose answer depends on N (`N < 64`, int(N),
N as an index) raises `DynamicUnsupported`, and the caller compiles
specialized versions instead. Equality is structural (`N == 32` is False):
code generation asks it to learn whether two values have the same shape. So a silent wrong answer is
impossible by construction: a size either behaves like every int it stands
for, or it refuses.

>>> n = SymSize.variable()
>>> (4 * n + 2) // 2
2*N+1
>>> 4 * n > 1
True
"""
from __future__ import annotations

from .lowered import Unsupported

MIN_SIZE = 2  # the dynamic version runs for N >= MIN_SIZE


class DynamicUnsupported(Unsupported):
    """A size N cannot be a run-time value here (the message says where); compile per size instead."""


class SymSize:
    """An integer polynomial in N (coefficients: {power: int}), never a constant.

    Arithmetic with ints and other SymSizes gives a SymSize, or an int when
    the N terms cancel. Comparisons are decided for every N >= MIN_SIZE or
    raise DynamicUnsupported; so do int(), float(), str() and use as an index.
    """

    __slots__ = ("coeffs", "_hash")
    symbolic_size = True  # what ir.TensorType looks for (ir imports nothing of codegen)

    def __init__(self, coeffs: dict):
        self.coeffs = {p: c for p, c in coeffs.items() if c}
        self._hash = hash(tuple(sorted(self.coeffs.items())))

    @staticmethod
    def variable() -> "SymSize":
        return SymSize({1: 1})

    @staticmethod
    def make(coeffs: dict):
        """The polynomial, or a plain int when it has no N term."""
        coeffs = {p: c for p, c in coeffs.items() if c}
        if all(p == 0 for p in coeffs):
            return coeffs.get(0, 0)
        return SymSize(coeffs)

    def at(self, n: int) -> int:
        """The value for N = n."""
        return sum(c * n ** p for p, c in self.coeffs.items())

    # --- arithmetic -------------------------------------------------------------------------
    def __add__(self, other):
        other = _coeffs(other)
        if other is None:
            return NotImplemented
        out = dict(self.coeffs)
        for p, c in other.items():
            out[p] = out.get(p, 0) + c
        return SymSize.make(out)

    __radd__ = __add__

    def __neg__(self):
        return SymSize({p: -c for p, c in self.coeffs.items()})

    def __sub__(self, other):
        other = _coeffs(other)
        if other is None:
            return NotImplemented
        return self + SymSize.make({p: -c for p, c in other.items()})

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        other = _coeffs(other)
        if other is None:
            return NotImplemented
        out: dict = {}
        for p, c in self.coeffs.items():
            for q, d in other.items():
                out[p + q] = out.get(p + q, 0) + c * d
        return SymSize.make(out)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if type(other) is int and other != 0 and all(c % other == 0 for c in self.coeffs.values()):
            return SymSize.make({p: c // other for p, c in self.coeffs.items()})
        raise DynamicUnsupported(f"{self!r} // {other!r} is not a polynomial in the run-time size")

    def __mod__(self, other):
        if type(other) is int and other != 0 and all(c % other == 0 for c in self.coeffs.values()):
            return 0
        raise DynamicUnsupported(f"{self!r} % {other!r} depends on the run-time size")

    def __rfloordiv__(self, other):
        raise DynamicUnsupported(f"{other!r} // {self!r} depends on the run-time size")

    __rmod__ = __rtruediv__ = __truediv__ = __rfloordiv__

    # --- comparisons: decided for every N >= MIN_SIZE, or refused ---------------------------------
    def _holds(self, other, signs: set) -> bool:
        """Whether sign(self - other) is in `signs` for every N >= MIN_SIZE (raises if that depends on N)."""
        diff = self - other
        possible = {(diff > 0) - (diff < 0)} if type(diff) is int else _signs_for_all(diff.coeffs)
        if possible <= signs:
            return True
        if not possible & signs:
            return False
        raise DynamicUnsupported(
            f"whether {self!r} compares to {other!r} depends on the run-time size N (N >= {MIN_SIZE})")

    def __eq__(self, other):
        # Structural: `N == 32` is False although N may be 32 at run time. Equality of sizes is
        # how code generation asks whether two values have the same shape, and values whose
        # shapes are equal for every N have equal polynomials (the IR was checked at two sizes
        # and is checked again at each: codegen takes the path that is right for every N).
        other = _coeffs(other)
        return other is not None and {p: c for p, c in other.items() if c} == self.coeffs

    def __ne__(self, other):
        return not self == other

    def __lt__(self, other):
        return self._holds(other, {-1})

    def __le__(self, other):
        return self._holds(other, {-1, 0})

    def __gt__(self, other):
        return self._holds(other, {1})

    def __ge__(self, other):
        return self._holds(other, {0, 1})

    def __bool__(self):
        return self._holds(0, {-1, 1})

    def __hash__(self):
        return self._hash

    def _refuse(self, *_):
        raise DynamicUnsupported(f"the run-time size {self!r} was needed as a number during code generation")

    __int__ = __index__ = __float__ = __str__ = __format__ = _refuse

    def __repr__(self):
        terms = []
        for p, c in sorted(self.coeffs.items(), reverse=True):
            var = "" if p == 0 else "N" if p == 1 else f"N**{p}"
            if not var:
                terms.append(str(c))
            else:
                terms.append(var if c == 1 else f"-{var}" if c == -1 else f"{c}*{var}")
        return "+".join(terms).replace("+-", "-")


def _coeffs(x):
    if type(x) is int:
        return {0: x}
    if isinstance(x, SymSize):
        return x.coeffs
    if hasattr(x, "__index__") and not isinstance(x, (float, bool)):  # NumPy integers
        return {0: int(x)}
    return None


def _signs_for_all(coeffs: dict) -> set:
    """The signs the polynomial may take at integers N >= MIN_SIZE (a superset).

    Substituting N = MIN_SIZE + M (M >= 0): when every coefficient of the
    shifted polynomial has one sign, so does its value.
    """
    degree = max(coeffs)
    shifted = [0] * (degree + 1)
    for p, c in coeffs.items():  # expand c * (M + MIN_SIZE)**p
        binom = 1
        for j in range(p + 1):
            shifted[j] += c * binom * MIN_SIZE ** (p - j)
            binom = binom * (p - j) // (j + 1)
    if all(c == 0 for c in shifted):
        return {0}
    if all(c >= 0 for c in shifted):
        return {1} if shifted[0] > 0 else {0, 1}  # 0 at N = MIN_SIZE when the constant term is
    if all(c <= 0 for c in shifted):
        return {-1} if shifted[0] < 0 else {-1, 0}
    return {-1, 0, 1}


def at_least(size, bound) -> bool:
    """size >= bound, for choices of algorithm or storage by size (heuristics, right either way):
    when the answer depends on N, the one for large N (a dynamic version is for sizes that vary,
    usually batches, and a choice for large sizes costs little at small ones)."""
    try:
        return size >= bound
    except DynamicUnsupported:
        diff = size - bound
        return diff.coeffs[max(diff.coeffs)] > 0  # the sign of the leading term


def surely(question) -> bool:
    """question() when it has one answer for every N, else False (for optional optimizations)."""
    try:
        return bool(question())
    except DynamicUnsupported:
        return False


def is_symbolic(x) -> bool:
    return isinstance(x, SymSize)


def concrete(x, n: int):
    """x (an int or a SymSize) for N = n."""
    return x.at(n) if isinstance(x, SymSize) else x
