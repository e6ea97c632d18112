"""NumPy's numerical calculus and sampling functions on tensors: trapezoid,
gradient, unwrap, geomspace, logspace, cov, corrcoef, histogram,
histogram_bin_edges and interp (the NaN-ignoring quantiles are in quantiles.py).

Compositions of gradtape's functions: they differentiate, batch and compile
as those do. Sizes (num, bins, edge_order) must be concrete.
"""
from __future__ import annotations

import math

import numpy as np

from ..tracer.numpy_dispatch import implements
from . import elementwise as ew
from . import elementwise_division as division
from ..ir.ops import elementwise as ew_ops
from ..tracer.dispatch import bind
from . import reductions, scans, shape, sorting
from .nn import clip
from ._promote import as_tensor, float_operand, normalize_axis
from .complex_numbers import imag, real
from .grids import linspace
from .shape import concatenate, moveaxis, reshape

__all__ = ["trapezoid", "gradient", "unwrap", "geomspace", "logspace", "cov", "corrcoef", "histogram",
           "histogram_bin_edges", "interp"]


def _along(x, axis):
    """x with `axis` moved last."""
    return moveaxis(x, axis, -1)


@implements(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of y by the trapezoidal rule along axis (samples at x, or spaced dx), as numpy.trapezoid.

    Example::

        >>> gradtape.trapezoid(gradtape.constant([1.0, 2.0, 3.0]))
        Tensor(4., dtype=float64)
    """
    y = _along(float_operand(y), axis)
    if x is None:
        widths = dx
    else:
        x = as_tensor(x)
        x = _along(x, axis) if x.ndim > 1 else x
        widths = ew.subtract(x[..., 1:], x[..., :-1])
    return reductions.sum(ew.multiply(widths, ew.multiply(ew.add(y[..., 1:], y[..., :-1]), 0.5)), axis=-1)


def _weighted(g, at, weights):
    """sum of weights[k] * g[..., at[k]] (kept as a length-1 last axis), summed left to right."""
    total = None
    for i, w in zip(at, weights):
        term = ew.multiply(w, g[..., i:i + 1] if i != -1 else g[..., -1:])
        total = term if total is None else ew.add(total, term)
    return total


@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """Derivative estimates of sampled f: central differences inside, one-sided
    differences of first or second order at the ends, as numpy.gradient with
    scalar spacings.

    Args:
      f: a Tensor or array-like with at least edge_order + 1 samples along
        each axis used.
      *varargs: one spacing for all axes, or one per axis (numbers; arrays of
        coordinates are not supported).
      axis: None (every axis), an int or a tuple of ints.
      edge_order: 1 or 2, the order of the differences at the ends.

    Returns:
      A Tensor for one axis, else a tuple of Tensors (one per axis), as NumPy.

    Raises:
      ValueError: an axis has fewer than edge_order + 1 samples, or edge_order
        is not 1 or 2 (NumPy's messages, naming the axis).

    Example::

        >>> gradtape.gradient(gradtape.constant([1.0, 4.0, 9.0, 16.0]))
        Tensor([3., 4., 6., 7.], dtype=float64)
        >>> gradtape.gradient(gradtape.constant([1.0, 4.0, 9.0, 16.0]), edge_order=2)
        Tensor([2., 4., 6., 8.], dtype=float64)
    """
    f = float_operand(f)
    axes = normalize_axis("gradient", axis, f.ndim, sort=False)
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: 'edge_order' must be 1 or 2 (NumPy: greater than 2 not supported), "
                         f"got {edge_order!r}")
    spacings = list(varargs) if len(varargs) > 1 else [varargs[0] if varargs else 1.0] * len(axes)
    if len(spacings) != len(axes) or any(np.ndim(h) != 0 for h in spacings):
        raise TypeError("gradient: spacings must be numbers, one for all axes or one per axis "
                        "(coordinate arrays are not supported)")
    out = []
    for ax, h in zip(axes, spacings):
        g = _along(f, ax)
        if g.shape[-1] < edge_order + 1:
            raise ValueError(
                "gradient: Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) "
                f"elements are required: axis {ax} of the array of shape {tuple(f.shape)} has {g.shape[-1]} with "
                f"edge_order={edge_order}; sample more points, or leave that axis out with axis="
            )
        if edge_order == 1:
            first = ew.divide(ew.subtract(g[..., 1:2], g[..., 0:1]), h)
            last = ew.divide(ew.subtract(g[..., -1:], g[..., -2:-1]), h)
        else:  # NumPy's coefficients, in its order of operations (the same rounding)
            first = _weighted(g, (0, 1, 2), (-1.5 / h, 2.0 / h, -0.5 / h))
            last = _weighted(g, (-3, -2, -1), (0.5 / h, -2.0 / h, 1.5 / h))
        inner = ew.divide(ew.subtract(g[..., 2:], g[..., :-2]), 2.0 * h)
        out.append(moveaxis(concatenate([first, inner, last], axis=-1), -1, ax))
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.unwrap)
def unwrap(p, discont=None, axis=-1, *, period=2 * math.pi):
    """p with jumps larger than period/2 (or discont) between neighbours removed
    by adding multiples of period, as numpy.unwrap.

    Example::

        >>> gradtape.unwrap(gradtape.constant([0.0, 3.0, 6.5])).numpy().round(4)
        array([0.    , 3.    , 0.2168])
    """
    p = _along(float_operand(p), axis)
    half = period / 2
    discont = half if discont is None else max(discont, half)
    dd = ew.subtract(p[..., 1:], p[..., :-1])
    ddmod = ew.subtract(division.remainder(ew.add(dd, half), period), half)
    ddmod = ew.where(ew.logical_and(ew.equal(ddmod, -half), ew.greater(dd, 0)), half, ddmod)
    correction = ew.where(ew.less(ew.abs(dd), discont), 0.0, ew.subtract(ddmod, dd))
    shifts = concatenate([ew.multiply(p[..., :1], 0.0), scans.cumsum(correction, axis=-1)], axis=-1)
    return moveaxis(ew.add(p, shifts), -1, axis)


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** linspace(start, stop, num), as numpy.logspace (differentiable in start and stop).

    Example::

        >>> gradtape.logspace(gradtape.constant(0.0), 2.0, 3)
        Tensor([  1.,  10., 100.], dtype=float64)
    """
    exponents = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    out = ew.power(base, exponents)
    return out if dtype is None else ew.cast(out, dtype)


@implements(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Numbers spaced evenly on a log scale from start to stop (ends exact), as numpy.geomspace.

    start and stop must be nonzero and of one sign (real numbers only).

    Example::

        >>> gradtape.geomspace(gradtape.constant(1.0), 1000.0, 4)
        Tensor([   1.,   10.,  100., 1000.], dtype=float64)
    """
    start, stop = float_operand(start), float_operand(stop)
    sign = ew.sign(start)
    logs = linspace(ew.log10(ew.abs(start)), ew.log10(ew.abs(stop)), num, endpoint=endpoint, axis=axis)
    out = ew.multiply(sign, ew.power(10.0, logs))
    n = int(num)
    if n > 0 and out.ndim == 1:  # NumPy sets the ends exactly
        parts = [reshape(start, (1,))]
        if n > 1:
            parts.append(out[1:n - 1] if endpoint else out[1:])
            if endpoint:
                parts.append(reshape(stop, (1,)))
        out = concatenate(parts) if len(parts) > 1 else parts[0]
    return out if dtype is None else ew.cast(out, dtype)


@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """The covariance matrix of the variables in m (rows, unless rowvar=False), as numpy.cov.

    Weights (fweights, aweights) are not supported.

    Example::

        >>> gradtape.cov(gradtape.constant([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        Tensor([[ 1., -1.],
                [-1.,  1.]], dtype=float64)
    """
    if fweights is not None or aweights is not None:
        raise TypeError("cov: fweights and aweights are not supported by gradtape")
    x = float_operand(m)
    if x.ndim > 2:
        raise ValueError(f"cov: m has more than 2 dimensions: shape {x.shape}")
    x = reshape(x, (1, -1)) if x.ndim < 2 else x
    if not rowvar and x.shape[0] != 1:
        x = moveaxis(x, 0, 1)
    if y is not None:
        yy = float_operand(y)
        yy = reshape(yy, (1, -1)) if yy.ndim < 2 else yy
        if not rowvar and yy.shape[0] != 1:
            yy = moveaxis(yy, 0, 1)
        x = concatenate([x, ew.cast(yy, x.dtype)], axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    n = x.shape[1]
    centered = ew.subtract(x, reductions.mean(x, axis=1, keepdims=True))
    out = ew.divide(np.matmul(centered, moveaxis(centered, 0, 1)), float(n - ddof))
    out = out if dtype is None else ew.cast(out, dtype)
    return reshape(out, ()) if out.shape == (1, 1) else out


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients, cov / sqrt(outer(var, var)), clipped to [-1, 1], as numpy.corrcoef.

    Example::

        >>> gradtape.corrcoef(gradtape.constant([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        Tensor([[ 1., -1.],
                [-1.,  1.]], dtype=float64)
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return ew.divide(c, c)
    d = ew.sqrt(reductions.sum(ew.multiply(c, np.eye(c.shape[0], dtype=c.dtype)), axis=1))
    out = ew.divide(ew.divide(c, reshape(d, (-1, 1))), reshape(d, (1, -1)))
    return np.clip(out, -1.0, 1.0)


def _bin_edges(name, a, bins, range_):
    if not isinstance(bins, (int, np.integer)) or bins < 1:
        raise TypeError(f"{name}: gradtape supports an integer number of bins >= 1, got {bins!r}")
    flat = reshape(float_operand(a), (-1,))
    if range_ is None:
        lo, hi = reductions.min(flat), reductions.max(flat)
    else:
        lo, hi = (as_tensor(v, flat.dtype) for v in range_)
    # NumPy widens an empty range to [lo - 0.5, hi + 0.5]
    same = ew.equal(lo, hi)
    lo, hi = ew.where(same, ew.subtract(lo, 0.5), lo), ew.where(same, ew.add(hi, 0.5), hi)
    return flat, linspace(lo, hi, int(bins) + 1)


@implements(np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges numpy.histogram uses: bins + 1 evenly spaced values from min(a) to max(a).

    Differentiable in a through its minimum and maximum (or in range's ends).

    Example::

        >>> gradtape.histogram_bin_edges(gradtape.constant([0.0, 1.0, 4.0]), bins=2)
        Tensor([0., 2., 4.], dtype=float64)
    """
    return _bin_edges("histogram_bin_edges", a, bins, range)[1]


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """(counts, bin edges) of a, as numpy.histogram with an integer number of bins.

    Counts (sums of weights, if given) are computed by comparing every value
    with every edge: O(len(a) * bins). They are differentiable in weights and
    (with density) through the edges; plain counts are int64.

    Example::

        >>> counts, edges = gradtape.histogram(gradtape.constant([0.0, 1.0, 4.0]), bins=2)
        >>> counts.numpy(), edges.numpy()
        (array([2, 1]), array([0., 2., 4.]))
    """
    flat, edges = _bin_edges("histogram", a, bins, range)
    n = int(bins)
    values = reshape(flat, (-1, 1))
    lower, upper = reshape(edges[:-1], (1, n)), reshape(edges[1:], (1, n))
    last = np.arange(n) == n - 1  # the last bin includes its right edge
    inside = ew.logical_and(ew.greater_equal(values, lower),
                            ew.logical_or(ew.less(values, upper), ew.logical_and(last, ew.equal(values, upper))))
    if weights is None and not density:
        return reductions.sum(ew.cast(inside, np.int64), axis=0), edges
    w = ew.multiply(reshape(float_operand(weights), (-1, 1)), 1.0) if weights is not None else 1.0
    counts = reductions.sum(ew.where(inside, ew.add(ew.multiply(values, 0.0), w), 0.0), axis=0)
    if density:
        counts = ew.divide(counts, ew.multiply(reductions.sum(counts), ew.subtract(edges[1:], edges[:-1])))
    return counts, edges


def _complex_interp(x, xp, fp, left, right, period):
    """interp of complex fp (and left, right): complex128, real and imaginary parts apart."""
    parts = [interp(x, xp, part(fp), None if left is None else part(left), None if right is None else part(right),
                    period) for part in (real, imag)]
    return ew.add(ew.cast(parts[0], np.complex128), ew.multiply(ew.cast(parts[1], np.complex128), 1j))


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at x, as numpy.interp.

    Differentiable in x (the slope of x's segment) and in fp, left and right (the
    interpolation weights); xp gets no gradient. Built from searchsorted, take and
    arithmetic, so it works on the tape, staged and in native code.

    Args:
      x: where to evaluate, any shape.
      xp: 1-d increasing sample points (sorted here when `period` is given).
      fp: 1-d values at xp, of xp's length.
      left, right: the value for x < xp[0] and x > xp[-1] (fp[0] and fp[-1] by default).
      period: the period of periodic x-coordinates (left and right are then ignored).

    Returns:
      A float64 Tensor of x's shape.

    Example::

        >>> gradtape.interp(gradtape.constant([0.5, 2.5]), [0.0, 1.0, 2.0], [0.0, 10.0, 20.0])
        Tensor([ 5., 20.], dtype=float64)
    """
    if as_tensor(fp).dtype.kind == "c":  # NumPy interpolates the real and imaginary parts
        return _complex_interp(x, xp, as_tensor(fp), left, right, period)
    x, fp = as_tensor(x, np.float64), as_tensor(fp, np.float64)  # float64, as NumPy's result
    xp = bind(ew_ops.stop_gradient_p, as_tensor(xp, np.float64))
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError(f"interp: xp and fp must be 1-d, got shapes {xp.shape} and {fp.shape}")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError("interp: fp and xp are not of the same length")
    if xp.shape[0] == 0:
        raise ValueError("interp: array of sample points is empty")
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        x, xp = division.remainder(x, period), division.remainder(xp, period)
        order = sorting.argsort(xp)
        xp, fp = shape.take(xp, order), shape.take(fp, order)
        xp = shape.concatenate([ew.subtract(xp[-1:], period), xp, ew.add(xp[:1], period)])
        fp = shape.concatenate([fp[-1:], fp, fp[:1]])
        left = right = None
    n = xp.shape[0]
    first, last = fp[0], fp[n - 1]
    inside = first  # one sample point: fp[0] wherever x is not below or above it (NaN too)
    if n > 1:
        hi = clip(sorting.searchsorted(xp, x, side="right"), 1, n - 1)
        lo = ew.subtract(hi, 1)
        x0, x1 = shape.take(xp, lo), shape.take(xp, hi)
        f0, f1 = shape.take(fp, lo), shape.take(fp, hi)
        width = ew.subtract(x1, x0)
        slope = ew.divide(ew.subtract(f1, f0), ew.where(ew.equal(width, 0), 1.0, width))
        inside = ew.add(ew.multiply(slope, ew.subtract(x, x0)), f0)  # NumPy's formula, to the last bit
        inside = ew.where(ew.equal(x, xp[n - 1]), last, inside)  # NumPy gives fp[-1] there exactly
    below = first if left is None else left
    above = last if right is None else right
    return ew.where(ew.less(x, xp[0]), below, ew.where(ew.greater(x, xp[n - 1]), above, inside))
