"""Statistics with NumPy's signatures: the nan* reductions, average and ptp.

All are compositions of existing ops (so they batch, compile natively and
differentiate to every order). The order statistics (median, quantile,
percentile and their nan* forms) are in quantiles.py.
"""
from __future__ import annotations


import numpy as np

from ..ir.ops import elementwise as ew_ops
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from . import reductions as red
from ._promote import as_tensor, convert, normalize_axis, promote, refuse_complex
from .reductions import _no_out, _reshape
from .scans import cumprod, cumsum
from .shape import broadcast_to

__all__ = ["nansum", "nanmean", "nanprod", "nanmax", "nanmin", "nanvar", "nanstd", "nancumsum",
           "nancumprod", "average", "ptp"]

_NO_VALUE = np._NoValue


def _isnan(x):
    return bind(ew_ops.ne_p, x, x)


def _without_nans(x):
    """x with NaNs replaced by 0 (their gradient is 0); integers have none."""
    if x.dtype.kind not in "fc":
        return x
    return ew.where(_isnan(x), x.dtype.type(0), x)


# --- nansum, nanmean ------------------------------------------------------------------

@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False):
    """Sum over the given axes treating NaNs as 0, as numpy.nansum.

    The gradient is 0 at the NaN entries and 1 elsewhere.

    Args:
      a: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints.
      dtype: accumulate and return in this dtype.
      keepdims: keep the reduced axes with length 1.

    Returns:
      A Tensor (0 for an all-NaN group).

    Example::

        >>> gradtape.nansum(gradtape.constant([1.0, np.nan, 2.0]))
        Tensor(3., dtype=float64)
    """
    _no_out("nansum", out)
    return red.sum(_without_nans(as_tensor(a)), axis, dtype, keepdims=keepdims)


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    """Mean over the given axes ignoring NaNs, as numpy.nanmean (integers give float64).

    Args:
      a: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints.
      dtype: compute and return in this dtype.
      keepdims: keep the reduced axes with length 1.

    Returns:
      A floating-point Tensor; NaN for an all-NaN group (NumPy also warns).

    Example::

        >>> gradtape.nanmean(gradtape.constant([1.0, np.nan, 2.0]))
        Tensor(1.5, dtype=float64)
    """
    _no_out("nanmean", out)
    a = as_tensor(a)
    if a.dtype.kind not in "fc":
        return red.mean(a, axis, dtype, keepdims=keepdims)
    if dtype is not None:
        a = convert(a, dtype)
    total = red.sum(_without_nans(a), axis, keepdims=keepdims)
    count = red.sum(ew.cast(ew.logical_not(_isnan(a)), a.dtype), axis, keepdims=keepdims)
    return ew.divide(total, count)


def _nan_to(x, value):
    """x with NaNs replaced by `value` (their gradient is 0); integers have none."""
    if x.dtype.kind not in "fc":
        return x
    return ew.where(_isnan(x), x.dtype.type(value), x)


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False):
    """Product over the given axes treating NaNs as 1, as numpy.nanprod (exact with zeros).

    Example::

        >>> gradtape.nanprod(gradtape.constant([2.0, np.nan, 3.0]))
        Tensor(6., dtype=float64)
    """
    _no_out("nanprod", out)
    return red.prod(_nan_to(as_tensor(a), 1), axis, dtype, keepdims=keepdims)


def _nan_extreme(name, reduce, fill, a, axis, out, keepdims):
    _no_out(name, out)
    a = as_tensor(a)
    if a.dtype.kind not in "fc":
        return reduce(a, axis, keepdims=keepdims)
    nan = _isnan(a)
    result = reduce(ew.where(nan, a.dtype.type(fill), a), axis, keepdims=keepdims)
    all_nan = ew.equal(red.sum(ew.cast(ew.logical_not(nan), np.int64), axis, keepdims=keepdims),
                       np.int64(0))
    return ew.where(all_nan, a.dtype.type(np.nan), result)  # NumPy also warns


@implements(np.nanmax)
def nanmax(a, axis=None, out=None, keepdims=False):
    """Maximum over the given axes ignoring NaNs, as numpy.nanmax (NaN for an all-NaN group).

    Ties share the gradient, as in `max`; NaN entries get none.

    Example::

        >>> gradtape.nanmax(gradtape.constant([2.0, np.nan, 3.0]))
        Tensor(3., dtype=float64)
    """
    return _nan_extreme("nanmax", red.max, -np.inf, a, axis, out, keepdims)


@implements(np.nanmin)
def nanmin(a, axis=None, out=None, keepdims=False):
    """Minimum over the given axes ignoring NaNs, as numpy.nanmin (NaN for an all-NaN group).

    Example::

        >>> gradtape.nanmin(gradtape.constant([2.0, np.nan, 3.0]))
        Tensor(2., dtype=float64)
    """
    return _nan_extreme("nanmin", red.min, np.inf, a, axis, out, keepdims)


def _nanvar(name, a, axis, dtype, ddof, keepdims):
    a = as_tensor(a)
    if dtype is not None:
        a = convert(a, dtype)
    refuse_complex(name, a)
    if a.dtype.kind != "f":
        a = convert(a, np.float64)
    nan = _isnan(a)
    clean = ew.where(nan, a.dtype.type(0), a)  # so that no NaN meets a derivative below
    count = red.sum(ew.cast(ew.logical_not(nan), a.dtype), axis, keepdims=True)
    centered = ew.where(nan, a.dtype.type(0),
                        ew.subtract(clean, ew.divide(red.sum(clean, axis, keepdims=True), count)))
    squares = red.sum(ew.multiply(centered, centered), axis, keepdims=keepdims)
    count = count if keepdims else _reshape(count, squares.shape)
    # As NumPy: count - ddof <= 0 gives inf or NaN (NumPy also warns).
    return ew.divide(squares, ew.maximum(ew.subtract(count, a.dtype.type(ddof)), a.dtype.type(0)))


@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Variance over the given axes ignoring NaNs, as numpy.nanvar.

    Example::

        >>> gradtape.nanvar(gradtape.constant([1.0, np.nan, 3.0]))
        Tensor(1., dtype=float64)
    """
    _no_out("nanvar", out)
    return _nanvar("nanvar", a, axis, dtype, ddof, keepdims)


@implements(np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Standard deviation over the given axes ignoring NaNs, as numpy.nanstd.

    Where a group's variance is 0 (one non-NaN element, or all equal) the
    gradient is 0: std is identically 0 over one element, and over several
    equal ones 0 is the choice made here where std has no derivative
    (`std` gives inf there).

    Example::

        >>> gradtape.nanstd(gradtape.constant([1.0, np.nan, 3.0]))
        Tensor(1., dtype=float64)
    """
    _no_out("nanstd", out)
    variance = _nanvar("nanstd", a, axis, dtype, ddof, keepdims)
    positive = ew.greater(variance, variance.dtype.type(0))
    root = ew.sqrt(ew.where(positive, variance, variance.dtype.type(1)))
    return ew.where(positive, root, variance)  # 0 (or NaN/inf) passes through, gradient 0


@implements(np.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaNs as 0, as numpy.nancumsum.

    Example::

        >>> gradtape.nancumsum(gradtape.constant([1.0, np.nan, 2.0]))
        Tensor([1., 1., 3.], dtype=float64)
    """
    _no_out("nancumsum", out)
    return cumsum(_nan_to(as_tensor(a), 0), axis, dtype)


@implements(np.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaNs as 1, as numpy.nancumprod.

    Example::

        >>> gradtape.nancumprod(gradtape.constant([2.0, np.nan, 3.0]))
        Tensor([2., 2., 6.], dtype=float64)
    """
    _no_out("nancumprod", out)
    return cumprod(_nan_to(as_tensor(a), 1), axis, dtype)


# --- average ----------------------------------------------------------------------------

def _concrete_value(t):
    """t's value, or None while tracing (the value is unknown then)."""
    return None if isinstance(t, Tensor) and t.is_abstract else np.asarray(
        t.numpy() if isinstance(t, Tensor) else t)


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average over the given axes, as numpy.average: sum(a * w) / sum(w).

    Differentiable with respect to both `a` and `weights`.

    Args:
      a: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints.
      weights: None (the plain mean), an array of a's shape, or a 1-D array whose
        length is that of a along `axis` (an int then).
      returned: also return the sum of the weights, broadcast to the result's shape.
      keepdims: keep the reduced axes with length 1.

    Returns:
      The average (a floating-point Tensor), or (average, sum of weights) if returned.

    Raises:
      TypeError: weights of another shape without an int axis.
      ValueError: a 1-D weights whose length is not a's along `axis`.
      ZeroDivisionError: the weights of a group sum to 0 (checked when the values are
        known; in a staged function such a group gives inf or NaN).

    Example::

        >>> gradtape.average(gradtape.constant([1.0, 2.0, 4.0]), weights=[3.0, 1.0, 0.0])
        Tensor(1.25, dtype=float64)
    """
    a = as_tensor(a)
    axes = normalize_axis("average", axis, a.ndim)
    if weights is None:
        avg = red.mean(a, axes, keepdims=keepdims)
        if not returned:
            return avg
        count = float(np.prod([a.shape[i] for i in axes], dtype=np.int64))
        return avg, broadcast_to(np.asarray(count, avg.dtype), avg.shape)
    w = weights if isinstance(weights, Tensor) else np.asarray(weights)
    if w.shape != a.shape:
        if axis is None:
            raise TypeError(
                f"average: axis must be specified when the shapes of a {a.shape} and weights "
                f"{w.shape} differ"
            )
        if w.ndim != 1 or len(axes) != 1:
            raise TypeError(
                f"average: 1D weights expected when the shapes of a {a.shape} and weights "
                f"{w.shape} differ"
            )
        if w.shape[0] != a.shape[axes[0]]:
            raise ValueError(
                f"average: the length of weights ({w.shape[0]}) is not that of a {a.shape} "
                f"along axis {axes[0]}"
            )
        w = _reshape(as_tensor(w), tuple(w.shape[0] if i == axes[0] else 1 for i in range(a.ndim)))
    a, w = promote(a, w)
    if a.dtype.kind not in "fc":
        a, w = convert(a, np.float64), convert(w, np.float64)
    scale = red.sum(broadcast_to(w, a.shape), axes, keepdims=keepdims)
    known = _concrete_value(scale)
    if known is not None and np.any(known == 0.0):
        raise ZeroDivisionError("average: weights sum to zero, can't be normalized")
    avg = ew.divide(red.sum(ew.multiply(a, w), axes, keepdims=keepdims), scale)
    return (avg, scale) if returned else avg


# --- ptp --------------------------------------------------------------------------------

@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=False):
    """Range (max - min) over the given axes, as numpy.ptp.

    Args:
      a: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints.
      keepdims: keep the reduced axes with length 1.

    Returns:
      A Tensor of a's dtype.

    Example::

        >>> gradtape.ptp(gradtape.constant([[4.0, 9.0, 2.0]]), axis=1)
        Tensor([7.], dtype=float64)
    """
    _no_out("ptp", out)
    a = as_tensor(a)
    return ew.subtract(red.max(a, axis, keepdims=keepdims), red.min(a, axis, keepdims=keepdims))
