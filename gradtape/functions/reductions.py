"""Reductions with NumPy's signatures: sum, mean, var, std, max/amax, min/amin,
prod, argmax, argmin; plus their registrations for NumPy dispatch
(`np.sum(t)`, `np.add.reduce(t)`, ...) and the Tensor methods `.sum()` etc.

`axis` is None (all axes), an int (negatives count from the end) or a
tuple; `keepdims=True` keeps the reduced axes as length 1 (a reshape after
the reduction). Dtypes follow NumPy: bools and small integers are summed
and multiplied as int64 (uint64 for unsigned), and the mean, var and std of
integers are float64.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..ir.errors import ShapeError
from ..ir.ops import elementwise as ew_ops, layout, reduce as red
from ..tracer.deferred import PendingTensor
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from ._promote import as_tensor, convert, normalize_axis
from .complex_numbers import imag, real
from .fresh import always_new, fresh

__all__ = [
    "sum",
    "mean",
    "var",
    "std",
    "max",
    "amax",
    "min",
    "amin",
    "prod",
    "argmax",
    "argmin",
]


# --- helpers ------------------------------------------------------------------------

def _no_out(name, out):
    if out is not None:
        raise TypeError(
            f"{name}: the out= argument is not supported with gradtape Tensors "
            "(tensors are immutable); use the returned value instead"
        )


def _accumulated(x, requested) -> Tensor:
    """x as a Tensor of NumPy's dtype for sum/prod: `requested`, else x's own, with bools
    and narrow integers widened to 64 bits."""
    x = as_tensor(x)
    if requested is not None:
        return convert(x, requested)
    dtype = x.dtype
    if dtype.itemsize < 8 and dtype.kind in "biu":
        return convert(x, np.dtype(np.uint64 if dtype.kind == "u" else np.int64))
    return x


def _floating(x, requested) -> Tensor:
    """x as a Tensor of NumPy's dtype for mean/var/std: `requested`, else x's own, with
    integers and bools becoming float64."""
    x = as_tensor(x)
    if requested is not None:
        return convert(x, requested)
    return x if x.dtype.kind in "fc" else convert(x, np.dtype(np.float64))


def _divide(total, n: int):
    """total / n as ew.divide(total, float(n)) computes it; a float total (the common case:
    every mean of a training loss) is divided by n as a scalar of its dtype at once."""
    dtype = total.dtype
    if dtype.kind == "f":
        return bind(ew_ops.div_p, total, dtype.type(float(n)))
    return ew.divide(total, float(n))


def _kept(out, x, axes):
    """out, a reduction of x over axes, with those axes kept as length 1 (keepdims)."""
    return _reshape(out, red.kept_shape(x.shape, axes))


def _reshape(x, shape):
    shape = tuple(shape)
    return x if x.shape == shape else bind(layout.reshape_p, x, shape=shape)


def _count(shape, axes) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _reduce(op, name, x, axis, keepdims):
    return _reduce_axes(op, x, normalize_axis(name, axis, len(x.shape)), keepdims)


def _reduce_axes(op, x, axes: tuple, keepdims):
    """op over `axes`, already normalized (sorted, non-negative)."""
    out = bind(op, x, axes=axes) if axes else x
    return _kept(out, x, axes) if keepdims else out


# --- sum, prod ------------------------------------------------------------------------

@implements(np.sum)
@always_new  # a 0-d x, returned as it is by _reduce, is made a fresh object below
def sum(x, axis=None, dtype=None, out=None, keepdims=False):
    """Sum of elements over the given axes, as numpy.sum.

    Args:
      x: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints; negatives count from the end.
      dtype: accumulate and return in this dtype (default: x's dtype, with
        bools and small integers widened to int64 as NumPy does).
      keepdims: keep the reduced axes with length 1.

    Returns:
      A Tensor with the reduced axes removed (or of length 1 with keepdims).

    Raises:
      numpy.exceptions.AxisError: an axis is out of range.

    Example::

        >>> gradtape.sum(gradtape.constant([[1.0, 2.0], [3.0, 4.0]]), axis=0)
        Tensor([4., 6.], dtype=float64)
    """
    if x.__class__ is PendingTensor and axis is None and dtype is None and out is None and not keepdims \
            and x.shape and x.dtype.itemsize == 8:
        # what the general path binds for a recorded tensor wider than 0-d whose dtype
        # _accumulated keeps: the sum of a loss's terms, every step of a recorded loop
        return bind(red.reduce_sum_p, x, axes=tuple(range(len(x.shape))))
    _no_out("sum", out)
    total = _reduce(red.reduce_sum_p, "sum", _accumulated(x, dtype), axis, keepdims)
    return fresh(total) if total is x else total


@implements(np.prod)
def prod(x, axis=None, dtype=None, out=None, keepdims=False):
    """Product of elements over the given axes, as numpy.prod.

    The gradient is exact where elements are zero: d prod / d x_i is the
    product of the other elements, never prod / x_i.

    Args:
      x: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints; negatives count from the end.
      dtype: accumulate in this dtype (default as for `sum`).
      keepdims: keep the reduced axes with length 1.

    Returns:
      A Tensor with the reduced axes removed (or of length 1 with keepdims).

    Example::

        >>> gradtape.prod(gradtape.constant([2.0, 0.0, 3.0]))
        Tensor(0., dtype=float64)
    """
    _no_out("prod", out)
    return _reduce(red.reduce_prod_p, "prod", _accumulated(x, dtype), axis, keepdims)


# --- mean, var, std -------------------------------------------------------------------

@implements(np.mean)
@always_new  # ends in a division
def mean(x, axis=None, dtype=None, out=None, keepdims=False):
    """Arithmetic mean over the given axes, as numpy.mean (integers give float64).

    Args:
      x: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints.
      dtype: compute and return in this dtype.
      keepdims: keep the reduced axes with length 1.

    Returns:
      A floating-point Tensor (NaN, with a warning, for an empty reduction).

    Example::

        >>> gradtape.constant([[1.0, 2.0], [3.0, 5.0]]).mean(axis=1, keepdims=True)
        Tensor([[1.5],
                [4. ]], dtype=float64)
    """
    _no_out("mean", out)
    x = _floating(x, dtype)
    shape = x.shape
    axes = normalize_axis("mean", axis, len(shape))
    return _divide(_reduce_axes(red.reduce_sum_p, x, axes, keepdims), _count(shape, axes))


def _var(name, x, axis, dtype, ddof, keepdims, correction):
    if correction is not None:
        if ddof != 0:
            raise ValueError(f"{name}: ddof and correction can't be provided simultaneously.")
        ddof = correction
    x = _floating(x, dtype)
    axes = normalize_axis(name, axis, x.ndim)
    centered = ew.subtract(x, mean(x, axes, keepdims=True))
    if centered.dtype.kind == "c":  # NumPy's variance of complex values: the mean of |x - mean|^2, real
        square = ew.add(ew.multiply(real(centered), real(centered)), ew.multiply(imag(centered), imag(centered)))
    else:
        square = ew.multiply(centered, centered)
    squares = _reduce_axes(red.reduce_sum_p, square, axes, keepdims)
    # As NumPy: n - ddof <= 0 divides by 0 (inf or nan), it does not raise.
    n = _count(x.shape, axes)
    return _divide(squares, builtins.max(n - ddof, 0)), n


@implements(np.var)
def var(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
    """Variance over the given axes, as numpy.var: sum((x - mean)**2) / (n - ddof).

    Args:
      x: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints.
      dtype: compute and return in this dtype (integers default to float64).
      ddof: delta degrees of freedom (1 for the unbiased sample variance).
      keepdims: keep the reduced axes with length 1.
      correction: the Array API's name for ddof.

    Returns:
      A floating-point Tensor.

    Example::

        >>> gradtape.var(gradtape.constant([1.0, 2.0, 3.0, 4.0]), ddof=1)
        Tensor(1.66666667, dtype=float64)
    """
    _no_out("var", out)
    return _var("var", x, axis, dtype, ddof, keepdims, correction)[0]


@implements(np.std)
def std(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
    """Standard deviation over the given axes, as numpy.std: sqrt(var(x, ddof=ddof)).

    The gradient is infinite where the variance is 0 in a group of several equal
    elements (std is not differentiable there), and 0 over groups of one element
    (where std is identically 0).

    Args:
      x: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints.
      dtype: compute and return in this dtype (integers default to float64).
      ddof: delta degrees of freedom.
      keepdims: keep the reduced axes with length 1.
      correction: the Array API's name for ddof.

    Returns:
      A floating-point Tensor.

    Example::

        >>> gradtape.std(gradtape.constant([1.0, 3.0]))
        Tensor(1., dtype=float64)
    """
    _no_out("std", out)
    variance, n = _var("std", x, axis, dtype, ddof, keepdims, correction)
    if n == 1:
        # Groups of one: the variance is exactly 0 (or NaN/inf when ddof >= 1), equal to its
        # square root, and does not depend on x; sqrt's infinite slope at 0 would make
        # the gradient 0 * inf = NaN instead of 0.
        return variance
    return ew.sqrt(variance)


# --- max, min -------------------------------------------------------------------------

def extreme(x, axis, keepdims, *, largest: bool, initial=np._NoValue, name=None):
    """The maximum (largest=True) or minimum over `axis`, with NumPy's `initial`.

    An empty reduction raises NumPy's ValueError (as ShapeError) naming `name`, the public
    function, unless `initial` is given: its value where there is nothing to reduce, and a
    bound on the result elsewhere (max(x, initial=0) >= 0).
    """
    op, ufunc = (red.reduce_max_p, "maximum") if largest else (red.reduce_min_p, "minimum")
    name = name or ("max" if largest else "min")
    axes = normalize_axis(name, axis, len(x.shape))
    empty = [a for a in axes if x.shape[a] == 0]
    if initial is np._NoValue:
        if empty:
            raise ShapeError(
                f"{name}: zero-size array to reduction operation {ufunc} which has no identity (axis "
                f"{empty[0]} of the input of shape {tuple(x.shape)} has length 0); reduce over non-empty "
                "axes, or pass initial= (the value of an empty reduction)"
            )
        return _reduce_axes(op, x, axes, keepdims)
    bound = np.asarray(initial, x.dtype)
    if bound.ndim:
        raise ValueError(f"{name}: initial must be a scalar, got an array of shape {bound.shape}")
    if empty:  # a sum over the same axes (0 here) keeps the result connected to x: a zero gradient
        return ew.add(_reduce_axes(red.reduce_sum_p, x, axes, keepdims), bound)
    return (ew.maximum if largest else ew.minimum)(_reduce_axes(op, x, axes, keepdims), bound)


@implements(np.max, np.amax)
def max(x, axis=None, out=None, keepdims=False, initial=np._NoValue):
    """Maximum over the given axes, as numpy.max.

    Where several elements tie for the maximum, the gradient is shared
    equally among them (so it still sums to the output's cotangent).

    Args:
      x: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints.
      keepdims: keep the reduced axes with length 1.
      initial: a scalar the result is at least (the result of an empty
        reduction); without it an empty reduction is an error, as in NumPy.

    Returns:
      A Tensor of x's dtype.

    Raises:
      ValueError (gradtape.ir.ShapeError): reducing over an axis of length 0
        without `initial` (NumPy's "zero-size array to reduction operation
        maximum which has no identity").
      numpy.exceptions.AxisError: an axis is out of range.

    Example::

        >>> gradtape.max(gradtape.constant([[1.0, 5.0], [3.0, 2.0]]), axis=1)
        Tensor([5., 3.], dtype=float64)
        >>> gradtape.max(gradtape.constant(np.zeros((0, 2))), axis=0, initial=-1.0)
        Tensor([-1., -1.], dtype=float64)
    """
    _no_out("max", out)
    return extreme(as_tensor(x), axis, keepdims, largest=True, initial=initial)


@implements(np.min, np.amin)
def min(x, axis=None, out=None, keepdims=False, initial=np._NoValue):
    """Minimum over the given axes, as numpy.min; ties share the gradient equally.

    Args:
      x: a Tensor or array-like.
      axis: None (all axes), an int or a tuple of ints.
      keepdims: keep the reduced axes with length 1.
      initial: a scalar the result is at most (the result of an empty
        reduction); without it an empty reduction is an error, as in NumPy.

    Returns:
      A Tensor of x's dtype.

    Raises:
      ValueError (gradtape.ir.ShapeError): reducing over an axis of length 0 without `initial`.
      numpy.exceptions.AxisError: an axis is out of range.

    Example::

        >>> gradtape.min(gradtape.constant([[1.0, 5.0], [3.0, 2.0]]), axis=0)
        Tensor([1., 2.], dtype=float64)
    """
    _no_out("min", out)
    return extreme(as_tensor(x), axis, keepdims, largest=False, initial=initial)


amax = max
amin = min


# --- argmax, argmin -------------------------------------------------------------------

def _arg(op, name, x, axis, out, keepdims):
    _no_out(name, out)
    x = as_tensor(x)
    if axis is None:  # over the flattened array, as NumPy
        index = bind(op, _reshape(x, (x.size,)), axis=0)
        return _reshape(index, (1,) * x.ndim) if keepdims else index
    (axis,) = normalize_axis(name, int(axis), x.ndim)
    index = bind(op, x, axis=axis)
    return _kept(index, x, (axis,)) if keepdims else index


@implements(np.argmax)
def argmax(x, axis=None, out=None, *, keepdims=False):
    """Indices (int64) of the maximum along `axis`, as numpy.argmax; the first wins ties.

    The result is an integer Tensor: no gradient flows through it.

    Args:
      x: a Tensor or array-like.
      axis: an int, or None for the index into the flattened array.
      keepdims: keep the reduced axis with length 1.

    Returns:
      An int64 Tensor.

    Example::

        >>> gradtape.argmax(gradtape.constant([[1.0, 5.0], [3.0, 2.0]]), axis=1)
        Tensor([1, 0], dtype=int64)
    """
    return _arg(red.argmax_p, "argmax", x, axis, out, keepdims)


@implements(np.argmin)
def argmin(x, axis=None, out=None, *, keepdims=False):
    """Indices (int64) of the minimum along `axis`, as numpy.argmin; the first wins ties.

    Args:
      x: a Tensor or array-like.
      axis: an int, or None for the index into the flattened array.
      keepdims: keep the reduced axis with length 1.

    Returns:
      An int64 Tensor.

    Example::

        >>> gradtape.argmin(gradtape.constant([[1.0, 5.0], [3.0, 2.0]]), axis=1)
        Tensor([0, 1], dtype=int64)
    """
    return _arg(red.argmin_p, "argmin", x, axis, out, keepdims)


# --- ufunc.reduce: like the functions above, but axis defaults to 0 ---------------------

def _ufunc_reduce(fn, ufunc_name, with_dtype):
    def reduce(x, axis=0, dtype=None, out=None, keepdims=False):
        _no_out(f"numpy.{ufunc_name}.reduce", out)
        if with_dtype:
            return fn(x, axis=axis, dtype=dtype, keepdims=keepdims)
        x = as_tensor(x) if dtype is None else as_tensor(x, dtype)
        return fn(x, axis=axis, keepdims=keepdims)

    reduce.__name__ = f"{ufunc_name}_reduce"
    reduce.__doc__ = f"numpy.{ufunc_name}.reduce on Tensors (axis defaults to 0)."
    return reduce


implements(reduce_of=np.add)(_ufunc_reduce(sum, "add", True))
implements(reduce_of=np.multiply)(_ufunc_reduce(prod, "multiply", True))
implements(reduce_of=np.maximum)(_ufunc_reduce(max, "maximum", False))
implements(reduce_of=np.minimum)(_ufunc_reduce(min, "minimum", False))


# --- Tensor methods -------------------------------------------------------------------

Tensor.sum = sum
Tensor.mean = mean
Tensor.var = var
Tensor.std = std
Tensor.max = max
Tensor.min = min
Tensor.prod = prod
Tensor.argmax = argmax
Tensor.argmin = argmin
