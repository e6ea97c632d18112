"""Predicates and integer results on tensors, as NumPy: isnan, isinf,
isfinite, isclose, allclose, array_equal, count_nonzero, shape, ndim, size.

Their results are not differentiable (bools, integers, Python values), so
they work on watched tensors and in staged functions and simply carry no
gradient, as TensorFlow's integer paths do. The array-valued ones are
bool or int64 Tensors (0-d for allclose and array_equal: `bool(t)` and `if`
work on them eagerly; in a staged function use them with gradtape.where).
shape, ndim and size are known while tracing, so they are Python values.
"""
from __future__ import annotations

import numpy as np

from ..ir.ops import elementwise as ew_ops
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from . import elementwise as ew
from . import reductions as red
from ._promote import as_tensor, promote, shape_of
from .creation import ones_like, zeros_like

# `shape` is left out: gradtape.functions.shape is the module of layout functions.
__all__ = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "all", "any", "isclose", "allclose", "array_equal",
           "count_nonzero", "ndim", "size"]

_BOOL = np.dtype(np.bool_)


def _is_float(x) -> bool:
    return x.dtype.kind in "fc"


@implements(np.isnan)
def isnan(x):
    """Elementwise NaN test, as numpy.isnan (a bool Tensor; no gradient).

    Example::

        >>> gradtape.isnan(gradtape.constant([1.0, np.nan]))
        Tensor([False,  True], dtype=bool)
    """
    x = as_tensor(x)
    if not _is_float(x):
        return zeros_like(x, dtype=_BOOL)
    return bind(ew_ops.ne_p, x, x)


@implements(np.isinf)
def isinf(x):
    """Elementwise test for +inf or -inf, as numpy.isinf (a bool Tensor; no gradient).

    Example::

        >>> gradtape.isinf(gradtape.constant([1.0, -np.inf, np.nan]))
        Tensor([False,  True, False], dtype=bool)
    """
    x = as_tensor(x)
    if not _is_float(x):
        return zeros_like(x, dtype=_BOOL)
    return bind(ew_ops.eq_p, ew.abs(x), np.finfo(x.dtype).dtype.type(np.inf))  # |z| is real for complex z


@implements(np.isfinite)
def isfinite(x):
    """Elementwise test for finite values (not inf, not NaN), as numpy.isfinite.

    Example::

        >>> gradtape.isfinite(gradtape.constant([1.0, np.inf, np.nan]))
        Tensor([ True, False, False], dtype=bool)
    """
    x = as_tensor(x)
    if not _is_float(x):
        return ones_like(x, dtype=_BOOL)
    return bind(ew_ops.lt_p, ew.abs(x), np.finfo(x.dtype).dtype.type(np.inf))  # NaN < inf is False


@implements(np.isposinf)
def isposinf(x, out=None):
    """Elementwise test for +inf, as numpy.isposinf (a bool Tensor; no gradient)."""
    return _equals_constant("isposinf", x, out, np.inf)


@implements(np.isneginf)
def isneginf(x, out=None):
    """Elementwise test for -inf, as numpy.isneginf (a bool Tensor; no gradient)."""
    return _equals_constant("isneginf", x, out, -np.inf)


def _equals_constant(name, x, out, value):
    red._no_out(name, out)
    x = as_tensor(x)
    if not _is_float(x):
        return zeros_like(x, dtype=_BOOL)
    return bind(ew_ops.eq_p, x, x.dtype.type(value))


@implements(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise abs(a - b) <= atol + rtol * abs(b), as numpy.isclose (a bool Tensor).

    Infinities are close only to themselves; NaNs only with equal_nan=True.

    Args:
      a, b: Tensors or array-likes (broadcast together).
      rtol, atol: relative and absolute tolerances (numbers).
      equal_nan: whether NaN is close to NaN.

    Returns:
      A bool Tensor of the broadcast shape.

    Example::

        >>> gradtape.isclose(gradtape.constant([1.0, 2.0]), [1.0 + 1e-9, 2.1])
        Tensor([ True, False], dtype=bool)
    """
    a, b = (as_tensor(v) for v in promote(a, b))
    if not _is_float(a):
        a, b = ew.cast(a, np.float64), ew.cast(b, np.float64)
    dt = a.dtype.type
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: infinities are decided below, as NumPy does
        within = ew.less_equal(ew.abs(ew.subtract(a, b)),
                               ew.add(dt(atol), ew.multiply(dt(rtol), ew.abs(b))))
    close = ew.logical_or(ew.logical_and(within, isfinite(b)), ew.equal(a, b))
    if equal_nan:
        close = ew.logical_or(close, ew.logical_and(isnan(a), isnan(b)))
    return close


def _all(condition):
    """A 0-d bool Tensor: every element of the bool tensor `condition` is True."""
    return all(condition)


@implements(np.all)
def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether every element is true (nonzero; NaN counts as true), as numpy.all.

    Returns:
      A bool Tensor with the reduced axes removed (0-d for axis=None).

    Example::

        >>> gradtape.all(gradtape.constant([[1.0, 0.0], [2.0, 3.0]]), axis=1)
        Tensor([False,  True], dtype=bool)
    """
    return _count_test("all", a, axis, out, keepdims, where, ew.equal, ew.equal)


@implements(np.any)
def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether any element is true (nonzero; NaN counts as true), as numpy.any.

    Example::

        >>> gradtape.any(gradtape.constant([[1.0, 0.0], [0.0, 0.0]]), axis=1)
        Tensor([ True, False], dtype=bool)
    """
    return _count_test("any", a, axis, out, keepdims, where, ew.not_equal, ew.greater)


def _count_test(name, a, axis, out, keepdims, where, select, decide):
    """all: no element equals 0; any: some element is not 0 (by counting them)."""
    red._no_out(name, out)
    if where is not None:
        raise NotImplementedError(f"{name}: where= is not supported on gradtape Tensors")
    a = as_tensor(a)
    hits = select(a, np.zeros((), a.dtype))
    count = red.sum(ew.cast(hits, np.int64), axis, keepdims=keepdims)
    return decide(count, np.int64(0))


@implements(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of a is close to b's (isclose), as numpy.allclose.

    Returns:
      A 0-d bool Tensor (`bool()` of it, or `if`, works outside staged functions).

    Example::

        >>> bool(gradtape.allclose(gradtape.constant([1.0, 2.0]), [1.0, 2.0 + 1e-9]))
        True
    """
    return _all(isclose(a, b, rtol, atol, equal_nan))


@implements(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    """Whether a1 and a2 have the same shape and elements, as numpy.array_equal.

    Returns:
      A 0-d bool Tensor (False, without comparing, when the shapes differ).

    Example::

        >>> bool(gradtape.array_equal(gradtape.constant([1.0, 2.0]), [1.0, 2.0]))
        True
    """
    a1, a2 = (as_tensor(v) for v in promote(a1, a2))
    if a1.shape != a2.shape:
        return as_tensor(np.False_)
    same = ew.equal(a1, a2)
    if equal_nan:
        same = ew.logical_or(same, ew.logical_and(isnan(a1), isnan(a2)))
    return _all(same)


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    """How many elements are not 0 over the given axes, as numpy.count_nonzero (int64).

    Example::

        >>> gradtape.count_nonzero(gradtape.constant([[0.0, 1.0], [2.0, 0.0]]), axis=1)
        Tensor([1, 1], dtype=int64)
    """
    a = as_tensor(a)
    nonzero = ew.not_equal(a, np.zeros((), a.dtype))
    return red.sum(ew.cast(nonzero, np.int64), axis, keepdims=keepdims)


@implements(np.shape)
def shape(a):
    """The shape of a, as a tuple of ints (known while tracing too)."""
    return tuple(shape_of(a))


@implements(np.ndim)
def ndim(a):
    """The number of dimensions of a (an int, known while tracing too)."""
    return len(shape_of(a))


@implements(np.size)
def size(a, axis=None):
    """The number of elements of a, or its length along `axis`, as numpy.size (an int)."""
    dims = shape_of(a)
    if axis is None:
        return int(np.prod(dims, dtype=np.int64))
    return dims[axis]

