"""Order statistics with NumPy's signatures: median, quantile, percentile and
their NaN-ignoring forms nanmedian, nanquantile, nanpercentile.

Each group (the reduced axes, moved last and merged) is sorted once by the
`argsort` op (O(n log n) in native code, codegen/sort.py; NaN last) and
the results are read from the sorted values at the positions NumPy's
method picks (quantile_positions.py), interpolated with NumPy's formula.
The derivative flows through the sort's permutation to the elements each
result is read from, weighted as the interpolation weights them; a tie
sends it to one of the tied elements (the one a stable sort puts there).

A group with a NaN gives NaN (NumPy's median and quantile). The nan*
forms use each group's count m of non-NaN values, known only at run time:
the positions are tabulated for every m from 0 to n and looked up; a
group of NaNs only gives NaN (NumPy also warns).
"""
from __future__ import annotations

import numpy as np

from ..ir.ops.layout import transpose_p
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from . import reductions as red
from ._promote import as_tensor, convert, normalize_axis
from .quantile_positions import DISCRETE, check_method, element_index, interpolation
from .reductions import _no_out, _reshape
from .shape import getitem, stack
from .sorting import sort, take_along_axis

__all__ = ["median", "quantile", "percentile", "nanmedian", "nanquantile", "nanpercentile"]


def _groups(name, a, axis):
    """(sorted groups (kept..., n), the result's shape, with keepdims, without) of a float a."""
    a = as_tensor(a)
    if a.dtype.kind not in "fiub":
        raise TypeError(f"{name}: expected real numbers, got a tensor of dtype {a.dtype} (shape {a.shape})")
    if a.dtype.kind != "f":
        a = convert(a, np.float64)
    axes = normalize_axis(name, axis, a.ndim)
    kept = tuple(i for i in range(a.ndim) if i not in axes)
    n = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    if n == 0:
        raise ValueError(f"{name}: cannot take it over an empty group (a has shape {a.shape}, axis={axis})")
    perm = kept + axes
    moved = a if perm == tuple(range(a.ndim)) else bind(transpose_p, a, perm=perm)
    batch = tuple(a.shape[i] for i in kept)
    keep_shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
    return sort(_reshape(moved, batch + (n,)), axis=-1), batch, keep_shape


def _at(s, k):
    """s[..., k] for a static position k."""
    return getitem(s, (Ellipsis, int(k)))


def _at_each(s, k):
    """s[..., k[...]] for a run-time position per group (int64 of s's batch shape)."""
    return _reshape(take_along_axis(s, _reshape(k, k.shape + (1,)), axis=-1), k.shape)


def _lerp(a, b, t):
    """NumPy's lerp: a + (b - a) * t, from b's end when t >= 0.5 (t a float or a tensor)."""
    step = ew.subtract(b, a)
    if not isinstance(t, Tensor):
        if t >= 0.5:
            return ew.subtract(b, ew.multiply(step, a.dtype.type(1.0 - t)))
        return ew.add(a, ew.multiply(step, a.dtype.type(t)))
    low = ew.add(a, ew.multiply(step, t))
    high = ew.subtract(b, ew.multiply(step, ew.subtract(a.dtype.type(1.0), t)))
    return ew.where(ew.greater_equal(t, a.dtype.type(0.5)), high, low)


def _nan_where(mask, out):
    return ew.where(mask, out.dtype.type(np.nan), out)


def _static_quantiles(s, qs, method):
    """One result per q of groups of s's static length (NaN where a group holds NaN)."""
    n = s.shape[-1]
    has_nan = ew.not_equal(_at(s, n - 1), _at(s, n - 1))  # NaN sorts last
    if method in DISCRETE:
        results = [_at(s, k) for k in element_index(n, qs, method)]
    else:
        previous, following, gamma = interpolation(n, qs, method)
        results = [_lerp(_at(s, p), _at(s, f), float(g)) for p, f, g in zip(previous, following, gamma)]
    return [_nan_where(has_nan, r) for r in results]


def _table(values, count):
    """values[count] for a run-time count per group (values: a NumPy table over counts)."""
    return getitem(as_tensor(values), count)


def _nan_quantiles(s, qs, method):
    """One result per q of the non-NaN values of each group (NaN for a group of NaNs)."""
    n = s.shape[-1]
    count = red.sum(ew.equal(s, s), axis=-1)  # int64: the non-NaN values, sorted first
    sizes = range(1, n + 1)
    results = []
    for q in qs:
        if method in DISCRETE:
            table = np.array([0] + [element_index(m, np.array([q]), method)[0] for m in sizes], np.int64)
            out = _at_each(s, _table(table, count))
        else:
            rows = [interpolation(m, np.array([q]), method) for m in sizes]
            previous, following, gamma = (np.array([0] + [r[i][0] for r in rows]) for i in range(3))
            out = _lerp(_at_each(s, _table(previous.astype(np.int64), count)),
                        _at_each(s, _table(following.astype(np.int64), count)),
                        _table(gamma.astype(s.dtype), count))
        results.append(_nan_where(ew.equal(count, np.int64(0)), out))
    return results


def _finish(results, q, shape, dtype):
    results = [_reshape(r, shape) for r in results]
    out = results[0] if q.ndim == 0 else _reshape(stack(results), q.shape + shape)
    return out if out.dtype == dtype else convert(out, dtype)


def _check_q(name, q, scale):
    if isinstance(q, Tensor):
        raise TypeError(f"{name}: q must be numbers, not a Tensor (gradtape does not differentiate with "
                        "respect to q); pass q.numpy() if it is a constant")
    q = np.asanyarray(q, dtype=np.float64)
    if q.ndim > 2:
        raise ValueError(f"{name}: q must be a scalar or 1d, got q of shape {q.shape}")
    if not (np.all(q >= 0) and np.all(q <= scale)):
        raise ValueError(f"{name}: {'quantiles' if scale == 1 else 'percentiles'} must be in the range "
                         f"[0, {scale}], got {q}")
    return q / scale if scale != 1 else q


def _quantile(name, a, q, axis, method, keepdims, ignore_nan, scale=1):
    method = check_method(name, method)
    q = _check_q(name, q, scale)
    s, batch, keep_shape = _groups(name, a, axis)
    qs = q.reshape(-1)
    results = (_nan_quantiles if ignore_nan else _static_quantiles)(s, qs, method)
    # NumPy's result dtype (float32 stays float32 for a scalar q; integers give float64, or
    # int64 for the methods that pick an element).
    dtype = np.quantile(np.zeros(1, as_tensor(a).dtype), q if q.ndim else float(q), method=method).dtype
    return _finish(results, q, keep_shape if keepdims else batch, dtype)


def _unsupported(name, out, weights):
    _no_out(name, out)
    if weights is not None:
        raise NotImplementedError(f"{name}: weights= is not supported (got weights of shape {np.shape(weights)})")


@implements(np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """The q-th quantiles over the given axes, as numpy.quantile, with every method NumPy 2 has.

    Differentiable with respect to `a` through the elements each quantile is
    read or interpolated from; each group is sorted once, O(n log n).

    Args:
      a: a Tensor or array-like (integers give float64).
      q: a number or array of numbers in [0, 1] (not a Tensor).
      axis: None (all axes), an int or a tuple of ints.
      method: "linear" (the default), "lower", "higher", "midpoint", "nearest", or one of
        Hyndman and Fan's "inverted_cdf", "averaged_inverted_cdf", "closest_observation",
        "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased", "normal_unbiased".
      keepdims: keep the reduced axes with length 1.
      interpolation: NumPy's old name for method.

    Returns:
      A Tensor of shape q.shape + the reduced shape; NaN for groups with a NaN.

    Raises:
      ValueError: q is outside [0, 1], an unknown method, or an empty group.
      TypeError: q is a Tensor.
      NotImplementedError: weights= (NumPy's weighted inverted_cdf).

    Example::

        >>> gradtape.quantile(gradtape.constant([4.0, 1.0, 3.0, 2.0]), [0.25, 0.5])
        Tensor([1.75, 2.5 ], dtype=float64)
    """
    _unsupported("quantile", out, weights)
    method = interpolation if interpolation is not None else method
    return _quantile("quantile", a, q, axis, method, keepdims, ignore_nan=False)


@implements(np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """The q-th percentiles (q in [0, 100]) over the given axes, as numpy.percentile.

    Args and Returns: as `quantile`, with q in percent.

    Raises:
      ValueError: q is outside [0, 100], an unknown method, or an empty group.

    Example::

        >>> gradtape.percentile(gradtape.constant([4.0, 1.0, 3.0, 2.0]), 50)
        Tensor(2.5, dtype=float64)
    """
    _unsupported("percentile", out, weights)
    method = interpolation if interpolation is not None else method
    return _quantile("percentile", a, q, axis, method, keepdims, ignore_nan=False, scale=100)


@implements(np.nanquantile)
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                weights=None, interpolation=None):
    """The q-th quantiles of the non-NaN values over the given axes, as numpy.nanquantile.

    Args, Returns and Raises: as `quantile`; a group of NaNs only gives NaN.

    Example::

        >>> gradtape.nanquantile(gradtape.constant([4.0, np.nan, 1.0, 3.0]), 0.5)
        Tensor(3., dtype=float64)
    """
    _unsupported("nanquantile", out, weights)
    method = interpolation if interpolation is not None else method
    return _quantile("nanquantile", a, q, axis, method, keepdims, ignore_nan=True)


@implements(np.nanpercentile)
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                  weights=None, interpolation=None):
    """The q-th percentiles (q in [0, 100]) of the non-NaN values, as numpy.nanpercentile.

    Example::

        >>> gradtape.nanpercentile(gradtape.constant([4.0, np.nan, 1.0, 3.0]), 50)
        Tensor(3., dtype=float64)
    """
    _unsupported("nanpercentile", out, weights)
    method = interpolation if interpolation is not None else method
    return _quantile("nanpercentile", a, q, axis, method, keepdims, ignore_nan=True, scale=100)


def _median_dtype(a):
    return np.median(np.zeros(1, as_tensor(a).dtype)).dtype


@implements(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over the given axes, as numpy.median (the mean of the two middle
    elements of an even group).

    Args:
      a: a Tensor or array-like (integers give float64).
      axis: None (all axes), an int or a tuple of ints.
      keepdims: keep the reduced axes with length 1.

    Returns:
      A floating-point Tensor; NaN for groups with a NaN.

    Raises:
      ValueError: an empty group.

    Example::

        >>> gradtape.median(gradtape.constant([[4.0, 1.0], [3.0, 2.0]]), axis=0)
        Tensor([3.5, 1.5], dtype=float64)
    """
    _no_out("median", out)
    s, batch, keep_shape = _groups("median", a, axis)
    n = s.shape[-1]
    if n % 2:
        mid = _at(s, n // 2)
    else:
        mid = ew.multiply(ew.add(_at(s, n // 2 - 1), _at(s, n // 2)), s.dtype.type(0.5))
    out = _nan_where(ew.not_equal(_at(s, n - 1), _at(s, n - 1)), mid)
    return _finish([out], np.asarray(0.5), keep_shape if keepdims else batch, _median_dtype(a))


@implements(np.nanmedian)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median of the non-NaN values over the given axes, as numpy.nanmedian.

    Args, Returns and Raises: as `median`; a group of NaNs only gives NaN.

    Example::

        >>> gradtape.nanmedian(gradtape.constant([4.0, np.nan, 1.0]))
        Tensor(2.5, dtype=float64)
    """
    _no_out("nanmedian", out)
    s, batch, keep_shape = _groups("nanmedian", a, axis)
    count = red.sum(ew.equal(s, s), axis=-1)  # int64: the non-NaN values, sorted first
    m = np.arange(s.shape[-1] + 1)
    low = _at_each(s, _table(np.maximum(m - 1, 0) // 2, count))
    high = _at_each(s, _table(np.minimum(m // 2, s.shape[-1] - 1), count))
    mid = ew.where(_table(m % 2 == 1, count), low, ew.multiply(ew.add(low, high), s.dtype.type(0.5)))
    out = _nan_where(ew.equal(count, np.int64(0)), mid)
    return _finish([out], np.asarray(0.5), keep_shape if keepdims else batch, _median_dtype(a))
