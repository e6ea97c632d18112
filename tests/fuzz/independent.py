"""Derivatives against central differences of the NumPy reference.

The interpreter and native code run the same derivative rules, so a wrong
rule (sin' = 1.001 cos) gives the same wrong gradient on both and no
comparison between them can see it. Here the program's text runs with NumPy
(numpy_reference, in float64 whatever the program's dtype) at points on the
line x + s t, t the program's tangents (one random direction per input), and
  f'(x) t   (reverse: t . grad; forward: the JVP's tangent)
  t0 H t0   (the HVP, forward over reverse, along argument 0)
are compared with central differences of it. The float64 evaluation is the
function that a float32 program rounds, as gradtape differentiates it: a cast
to float32 adds, at every point, the rounding error the cast made at x (a
constant shift: derivative 1, as gradtape's rule for the cast, and the ops
after it evaluated at the rounded value, as gradtape's derivatives are), and
stop_gradient returns, at every point, the value it had at x (a constant, as
gradtape treats it).

Gradtape's IR of the same text (traced in float64) is used only for its
fingerprint (differential.fingerprint: every discrete decision and
finiteness): differences are trusted only where the fingerprint is the same
at every point evaluated, no op sits on a singularity of its derivative, and
the estimates at steps h and h/2 agree.
"""
from __future__ import annotations

import types

import numpy as np

import gradtape as gt

from . import numpy_reference

# Steps, relative to the tangents (standard normal draws, inputs of order 1).
# First order: the rounding error of a difference is ~ eps * |terms| / h, 2e-11
# of the terms at h = 1e-5, and Richardson's extrapolation of h and h/2 leaves
# a truncation error of order h^4. Second order divides by h^2: a larger step
# (1e-3) keeps rounding at ~ eps / (h/2)^2 ~ 1e-9 of the terms.
H1, H2 = 1e-5, 1e-3
# Tolerance relative to the magnitudes involved, by the precision of the
# gradient compared (float64, or float32 anywhere in the program): a float64
# gradient is right to a few ulp times the program's condition, a float32 one
# to ~1e-7 times it; a wrong rule is off by far more (1.001 is caught in float64).
RTOL1 = {np.dtype(np.float64): 1e-6, np.dtype(np.float32): 1e-3}
RTOL2 = {np.dtype(np.float64): 1e-5, np.dtype(np.float32): 2e-3}


class _AtBasePoint:
    """A quantity the NumPy reference takes from the base point x at every point.

    The k-th call at x records `measure(x, *rest)`; the k-th call at any other
    point returns `apply(x, recorded, *rest)` with what the k-th call recorded
    at x (the fingerprint being equal, the program makes the same calls in the
    same order). `counts(*rest)` False: a call outside the scheme (passed through).
    """

    def __init__(self, measure, apply, counts=lambda *rest: True):
        self.measure, self.apply, self.counts = measure, apply, counts
        self.values, self.replaying, self.k = [], False, 0

    def __call__(self, x, *rest):
        if not self.counts(*rest):
            return self.apply(x, None, *rest)
        if not self.replaying:
            self.values.append(self.measure(np.array(x, np.float64), *rest))
        elif self.k >= len(self.values):
            raise _NotSmooth("called more often than at the base point")
        self.k += 1
        return self.apply(x, self.values[self.k - 1], *rest)

    def done(self):
        """After a call of the function: check that it made as many calls as at x, then replay."""
        if self.replaying and self.k != len(self.values):
            raise _NotSmooth("called less often than at the base point")
        self.replaying = True


class _NotSmooth(Exception):
    pass


def _frozen_stop_gradient():
    # stop_gradient: its value at the base point, at every point.
    return _AtBasePoint(lambda x: x, lambda x, value: value)


def _narrows(dtype) -> bool:
    return np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize < 8


def _rounding_error(x, dtype):
    """What casting float64 x to `dtype` adds to it (0 where x or the rounded x is not finite:
    the shift is then meaningless, and such a point is not smooth anyway)."""
    with np.errstate(all="ignore"):
        rounded = x.astype(dtype).astype(np.float64)
        return np.where(np.isfinite(x) & np.isfinite(rounded), rounded - x, 0.0)


def _shift_or_cast(x, shift, dtype):
    x = np.asarray(x)
    if shift is not None:
        return x.astype(np.float64) + shift
    return x.astype(np.float64) if np.dtype(dtype).kind == "f" else x.astype(dtype)


def _frozen_rounding():
    # A cast to a narrower float: x plus the rounding error the cast made at the
    # base point, at every point. Gradtape differentiates the cast as the identity
    # and the ops after it at the rounded value; with the cast the identity here,
    # log1p(v) at 1 + v ~ 1.6e-6 (seed 2870) had a derivative 1% off the one at the
    # rounded value, and finite differences reported every path wrong. Rounding at
    # every point instead would be a step function (derivative 0 at step 1e-5).
    return _AtBasePoint(_rounding_error, _shift_or_cast, counts=_narrows)


class NumpyFunction:
    """The program's text with NumPy in float64: f(args) -> float."""

    def __init__(self, program, load):
        self.frozen, self.rounding = _frozen_stop_gradient(), _frozen_rounding()
        ns = types.SimpleNamespace(**vars(numpy_reference.namespace))
        ns.cast, ns.stop_gradient = self.rounding, self.frozen
        self.f = load(program, ns)

    def __call__(self, args) -> float:
        self.frozen.k = self.rounding.k = 0
        with np.errstate(all="ignore"):
            out = float(np.asarray(self.f(*[np.asarray(a, np.float64) for a in args])))
        self.frozen.done()
        self.rounding.done()
        return out


class _GtFloat64:
    """The gt namespace where a cast to a narrower float adds the rounding error that the
    NumPy function's cast made at the base point (`shifts`, in call order): the IR whose
    decisions the float64 NumPy function makes (its fingerprint)."""

    def __init__(self, shifts):
        self.shifts = iter(shifts)

    def __getattr__(self, name):
        return getattr(gt, name)

    def cast(self, x, dtype):  # as _shift_or_cast
        if np.dtype(dtype).kind != "f":
            return gt.cast(x, dtype)
        x = x if getattr(x, "dtype", None) == np.float64 else gt.cast(x, np.float64)
        return x + next(self.shifts) if _narrows(dtype) else x


def float64_ir(program, load, args64, f):
    """The IR of the program in float64 for NumpyFunction f (called at args64 first, so
    that its casts' rounding errors at the base point are known)."""
    f(args64)
    return gt.make_ir(load(program, _GtFloat64(f.rounding.values)), *args64)


class Line:
    """f and the fingerprint at x + s d, for the steps s a check needs."""

    def __init__(self, f, fp_ir, fingerprint, args, direction):
        self.f, self.fp_ir, self.fingerprint = f, fp_ir, fingerprint
        self.args, self.direction = args, direction
        self.base = fingerprint(fp_ir, args)
        self.smooth = not self.base[-1]
        self.f0 = f(args) if self.smooth else None  # records stop_gradient's values first (or replays them)

    def at(self, s):
        point = [a + s * d for a, d in zip(self.args, self.direction)]
        if not same(self.fingerprint(self.fp_ir, point), self.base):
            raise _NotSmooth(f"a decision changes at step {s:g}")
        value = self.f(point)
        if not np.isfinite(value):
            raise _NotSmooth(f"not finite at step {s:g}")
        return value

    def first(self):
        """(f'(x) d, spread) by central differences, or None where not smooth."""
        if not self.smooth or not np.isfinite(self.f0):
            return None
        try:
            coarse, fine = ((self.at(h) - self.at(-h)) / (2 * h) for h in (H1, H1 / 2))
        except _NotSmooth:
            return None
        return _extrapolate(coarse, fine, 1e-4)

    def second(self):
        """(d H d, spread) by second differences, or None where not smooth."""
        if not self.smooth or not np.isfinite(self.f0):
            return None
        try:
            coarse, fine = ((self.at(h) - 2 * self.f0 + self.at(-h)) / (h * h) for h in (H2, H2 / 2))
        except _NotSmooth:
            return None
        return _extrapolate(coarse, fine, 1e-3)


def _extrapolate(coarse, fine, agree):
    spread = abs(coarse - fine)
    if spread > agree * (1 + abs(fine)):
        return None  # a kink, domain edge or steep region within the step
    return (4 * fine - coarse) / 3, spread  # Richardson: the h^2 error terms cancel


def same(a, b) -> bool:
    """Equal fingerprints (lists of arrays)."""
    return len(a) == len(b) and all(np.shape(x) == np.shape(y) and np.array_equal(x, y) for x, y in zip(a, b))


def directional(grads, direction):
    """(t . g, sum |t_i g_i|) in float64, or None if a product is not finite."""
    products = [np.asarray(g, np.float64) * d for g, d in zip(grads, direction)]
    if not all(np.all(np.isfinite(p)) for p in products):
        return None
    return sum(float(np.sum(p)) for p in products), sum(float(np.sum(np.abs(p))) for p in products)


def off_by(got, magnitude, estimate, spread, rtol):
    """Why `got` (a derivative; magnitude: the sum of its terms' sizes) is not the
    estimate to within rtol of the magnitudes plus the estimate's own spread."""
    scale = 1.0 + abs(estimate) + magnitude
    if abs(got - estimate) > rtol * scale + 10 * spread:
        return f"{got!r}, finite differences of the NumPy reference {estimate!r} (spread {spread:.2e})"
    return None
