"""Argument handling shared by the NumPy-like functions: dtype promotion
(NumPy's rules; Python scalars are weak, so `x_f32 * 2.0` stays float32),
conversion to tensors, and axis normalization.
"""
from __future__ import annotations

import numpy as np

from ..ir.ops.elementwise import cast_p
from ..tracer.dispatch import bind
from ..tracer.tensor import Tensor

_PY_SCALARS = (bool, int, float)


def dtype_of(x):
    """The dtype of x, or x itself for a Python scalar (weak in promotion)."""
    if isinstance(x, Tensor):
        return x.dtype
    if isinstance(x, _PY_SCALARS):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    return np.asarray(x).dtype


def convert(x, dtype):
    """x as the given dtype: Tensors through a differentiable cast, others as NumPy values."""
    dtype = np.dtype(dtype)
    if isinstance(x, Tensor):
        return x if x.dtype == dtype else bind(cast_p, x, dtype=dtype)
    if isinstance(x, _PY_SCALARS):
        return dtype.type(x)
    value = np.asarray(x)
    return value if value.dtype == dtype else value.astype(dtype)


def _fast_dtype(args):
    """The result dtype when it is obvious (tensors and arrays of one float dtype,
    plus Python scalars, which are weak); None when NumPy's rules must decide."""
    dtype = None
    for a in args:
        if isinstance(a, Tensor) or type(a) is np.ndarray:  # arrays are not weak: as tensors
            d = a.dtype
            if dtype is None:
                dtype = d
            elif d != dtype:
                return None
        elif type(a) is not float and type(a) is not int:
            return None
    return dtype if dtype is not None and dtype.kind == "f" else None


def promote(*args) -> list:
    """Convert all arguments to their common NumPy result dtype."""
    dtype = _fast_dtype(args)
    if dtype is None:
        dtype = np.result_type(*[dtype_of(a) for a in args])
    return [convert(a, dtype) for a in args]


def promote_float(*args) -> list:
    """Like promote, but integers and bools become float64 (as np.exp(int) does)."""
    dtype = _fast_dtype(args)
    if dtype is None:
        dtype = np.result_type(*[dtype_of(a) for a in args])
        if dtype.kind not in "f":
            dtype = np.dtype(np.float64)
    return [convert(a, dtype) for a in args]


def as_tensor(x, dtype=None) -> Tensor:
    """x as a Tensor (Tensors pass through unchanged unless a dtype is asked for)."""
    if isinstance(x, Tensor):
        return x if dtype is None else convert(x, dtype)
    return Tensor(np.asarray(x, dtype=dtype))


def shape_of(x) -> tuple:
    return x.shape if isinstance(x, Tensor) else np.shape(x)


def normalize_axis(name: str, axis, ndim: int, sort: bool = True) -> tuple:
    """`axis` (None, int or tuple, negatives allowed) as a tuple of axes,
    sorted unless `sort=False` (where the order means something, as in norm)."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(
                f"{name}: axis {a} is out of bounds for an array of dimension {ndim}"
            )
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {axis}")
    return tuple(sorted(out)) if sort else tuple(out)
