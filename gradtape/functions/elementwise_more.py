"""NumPy's elementwise functions that compose gradtape's ops: fmax/fmin with
NumPy's NaN rules, logaddexp, sinc, nan_to_num, heaviside, copysign, the
degree conversions.

Each is written so that its value matches NumPy's and its derivative (from
the ops' own rules, through `where`'s masks) is the function's: no branch
that is not taken contributes to a gradient.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.ops import complex_parts as cp
from ..ir.ops import elementwise as ew
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ._promote import as_tensor, float_operand, promote_pair, refuse_complex
from .elementwise import abs, log1p, maximum, where

__all__ = ["fmax", "fmin", "logaddexp", "logaddexp2", "deg2rad", "rad2deg", "radians", "degrees", "sinc",
           "nan_to_num", "heaviside", "copysign"]


def _isnan(x):
    return bind(ew.ne_p, x, x)


def _fselect(op, x, y):
    x, y = promote_pair(x, y)
    return bind(ew.where_p, _isnan(x), y, bind(ew.where_p, _isnan(y), x, bind(op, x, y)))


@implements(np.fmax)
def fmax(x, y):
    """Elementwise maximum that ignores NaN, as numpy.fmax: where one operand is
    NaN the result is the other (NaN only where both are).

    The derivative goes to the operand chosen: the non-NaN one, else the
    larger, split evenly between equal operands (as in `maximum`).

    Example::

        >>> gradtape.fmax(gradtape.constant([1.0, float("nan")]), 0.0)
        Tensor([1., 0.], dtype=float64)
    """
    return _fselect(ew.maximum_p, x, y)


@implements(np.fmin)
def fmin(x, y):
    """Elementwise minimum that ignores NaN, as numpy.fmin (see fmax).

    Example::

        >>> gradtape.fmin(gradtape.constant([1.0, float("nan")]), 0.0)
        Tensor([0., 0.], dtype=float64)
    """
    return _fselect(ew.minimum_p, x, y)


def _logaddexp(x, y, tail, tail_at_0):
    """larger + tail(-|x - y|), with the larger operand and the sign of x - y picked by one
    mask (x - y >= 0), not by maximum and abs: each side is then an analytic function of
    x and y, so derivatives of every order are right at x == y too (maximum's tie rule
    and abs' zero slope there made the second derivative 0). Equal infinities (x - y is
    NaN there) give themselves, with derivative 1/2 to each, from finite stand-ins."""
    x, y = promote_pair(x, y, True)
    refuse_complex("logaddexp", x)
    zero = x.dtype.type(0)
    infinite_tie = bind(ew.logical_and_p, bind(ew.eq_p, x, y), bind(ew.eq_p, abs(x), x.dtype.type(np.inf)))
    safe_x, safe_y = where(infinite_tie, zero, x), where(infinite_tie, zero, y)
    d = safe_x - safe_y
    x_larger = bind(ew.ge_p, d, zero)  # False where d is NaN: y + tail(NaN) is NaN
    apart = where(x_larger, safe_x, safe_y) + tail(where(x_larger, -d, d))
    return where(infinite_tie, (x + y) * 0.5 + tail_at_0, apart)


@implements(np.logaddexp)
def logaddexp(x, y):
    """log(exp(x) + exp(y)) without overflow, as numpy.logaddexp.

    Its derivatives are sigmoid(x - y) and sigmoid(y - x).

    Example::

        >>> gradtape.logaddexp(1000.0, gradtape.constant(1000.0))
        Tensor(1000.69314718, dtype=float64)
    """
    return _logaddexp(x, y, lambda t: bind(ew.softplus_p, t), math.log(2.0))


_LOG2E = 1.0 / math.log(2.0)


@implements(np.logaddexp2)
def logaddexp2(x, y):
    """log2(2**x + 2**y) without overflow, as numpy.logaddexp2.

    Example::

        >>> gradtape.logaddexp2(3.0, gradtape.constant(3.0))
        Tensor(4., dtype=float64)
    """
    return _logaddexp(x, y, lambda t: log1p(bind(ew.exp2_p, t)) * _LOG2E, 1.0)


@implements(np.deg2rad, np.radians)
def deg2rad(x):
    """Degrees to radians, x * pi / 180, as numpy.deg2rad."""
    return float_operand(x) * (math.pi / 180.0)


@implements(np.rad2deg, np.degrees)
def rad2deg(x):
    """Radians to degrees, x * 180 / pi, as numpy.rad2deg."""
    return float_operand(x) * (180.0 / math.pi)


radians, degrees = deg2rad, rad2deg


@implements(np.sinc)
def sinc(x):
    """The normalized sinc, sin(pi x) / (pi x) and 1 at 0, as numpy.sinc.

    Near 0 it is its Taylor series, so the derivatives are right there too
    (sinc'(0) = 0, sinc''(0) = -pi^2 / 3), not 0/0.

    Example::

        >>> gradtape.sinc(gradtape.constant([0.0, 0.5]))
        Tensor([1.        , 0.63661977], dtype=float64)
    """
    x = float_operand(x)
    t = x * math.pi
    small = bind(ew.lt_p, abs(t), t.dtype.type(1e-3))
    t2 = t * t
    series = 1.0 - t2 * (1.0 / 6.0) + t2 * t2 * (1.0 / 120.0)  # error below (1e-3)^6 / 5040
    safe = where(small, 1.0, t)
    return where(small, series, bind(ew.sin_p, safe) / safe)


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """x with NaN, +inf and -inf replaced, as numpy.nan_to_num (by default by 0
    and the largest finite values of x's dtype). Integer tensors pass unchanged.

    The derivative is 1 at finite elements and 0 at replaced ones.

    Example::

        >>> gradtape.nan_to_num(gradtape.constant([float("nan"), float("inf"), 1.0]))
        Tensor([0.00000000e+000, 1.79769313e+308, 1.00000000e+000], dtype=float64)
    """
    x = as_tensor(x)
    if x.dtype.kind == "c":  # NumPy replaces in the real and imaginary parts apart
        parts = [nan_to_num(bind(part, x), copy, nan, posinf, neginf) for part in (cp.real_p, cp.imag_p)]
        re, im = (bind(ew.cast_p, part, dtype=x.dtype) for part in parts)
        return bind(ew.add_p, re, bind(ew.mul_p, im, x.dtype.type(1j)))
    if x.dtype.kind != "f":
        return x
    info = np.finfo(x.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    out = where(bind(ew.eq_p, x, x.dtype.type(np.inf)), x.dtype.type(big), x)
    out = where(bind(ew.eq_p, x, x.dtype.type(-np.inf)), x.dtype.type(small), out)
    return where(_isnan(x), x.dtype.type(nan), out)


@implements(np.heaviside)
def heaviside(x1, x2):
    """The Heaviside step: 0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0, as numpy.heaviside.

    The derivative with respect to x1 is 0; x2's gradient is taken where x1 == 0.

    Example::

        >>> gradtape.heaviside(gradtape.constant([-1.0, 0.0, 2.0]), 0.5)
        Tensor([0. , 0.5, 1. ], dtype=float64)
    """
    x1, x2 = promote_pair(x1, x2, True)
    refuse_complex("heaviside", x1)
    one, zero = x1.dtype.type(1), x1.dtype.type(0)
    step = where(bind(ew.lt_p, x1, zero), zero, where(bind(ew.gt_p, x1, zero), one, x2))
    return where(_isnan(x1), x1 * zero, step)  # NaN stays NaN, with a zero derivative


@implements(np.copysign)
def copysign(x1, x2):
    """abs(x1) with the sign of x2, as numpy.copysign (-0.0 counts as negative).

    Example::

        >>> gradtape.copysign(gradtape.constant([1.0, -2.0]), -0.0)
        Tensor([-1., -2.], dtype=float64)
    """
    x1, x2 = promote_pair(x1, x2, True)
    zero = x2.dtype.type(0)
    # -0.0 < 0 is False; arctan2(-0.0, -1) = -pi tells its sign bit
    negative_zero = bind(ew.lt_p, bind(ew.arctan2_p, x2, x2.dtype.type(-1)), zero)
    negative = bind(ew.logical_or_p, bind(ew.lt_p, x2, zero),
                    bind(ew.logical_and_p, bind(ew.eq_p, x2, zero), negative_zero))
    magnitude = abs(x1)
    return where(negative, -magnitude, magnitude)
