"""Argument handling shared by the NumPy-like functions: dtype promotion
(NumPy's rules; Python scalars are weak, so `x_f32 * 2.0` stays float32),
conversion to tensors, and axis normalization.
"""
from __future__ import annotations

import sys

import numpy as np

from ..ir.ops.elementwise import cast_p
from ..ir.ops.indexing import concatenate_p
from ..ir.ops.layout import reshape_p
from ..tracer.dispatch import bind
from ..tracer.tensor import Tensor
from ..tracer.weak import WeakScalar

_PY_SCALARS = (bool, int, float, complex)  # weak in promotion: x_f32 * 1j is complex64


def dtype_of(x):
    """The dtype of x, or x itself for a Python scalar (weak in promotion; a traced Python
    scalar argument, a WeakScalar, counts as one of its kind)."""
    if isinstance(x, Tensor):
        return x.dtype.type(0).item() if x.__class__ is WeakScalar else x.dtype
    if isinstance(x, _PY_SCALARS):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    if holds_tensor(x):
        return stacked(x).dtype
    return np.asarray(x).dtype


def convert(x, dtype):
    """x as the given dtype: Tensors through a differentiable cast, others as NumPy values."""
    if not isinstance(dtype, np.dtype):  # np.dtype(a dtype) costs as much as the rest
        dtype = np.dtype(dtype)
    if isinstance(x, Tensor):
        return x if x.dtype == dtype else bind(cast_p, x, dtype=dtype)
    if holds_tensor(x):
        return convert(stacked(x), dtype)
    if isinstance(x, _PY_SCALARS):
        return dtype.type(x)
    value = np.asarray(x)
    return value if value.dtype == dtype else value.astype(dtype)


def _fast_promote(args):
    """`args` converted to their result dtype when it is obvious, else None (NumPy's rules
    must decide). Obvious: tensors and arrays of one float dtype, which pass unchanged, and
    Python floats and ints, which are weak and take that dtype. This gives what
    `convert(a, dtype) for a in args` would, in one pass without its checks.
    """
    dtype = None
    weak = False
    for a in args:
        cls = a.__class__
        if cls is float or cls is int:  # exact types: bool (an int) promotes differently
            weak = True
        elif cls is WeakScalar:
            return None
        elif cls is np.ndarray or isinstance(a, Tensor):  # arrays are not weak: as tensors
            d = a.dtype
            if dtype is None:
                dtype = d
            elif d is not dtype and d != dtype:
                return None
        else:
            return None
    if dtype is None or dtype.kind != "f":
        return None
    if not weak:
        return args
    to = dtype.type
    return [to(a) if a.__class__ is float or a.__class__ is int else a for a in args]


def holds_tensor(x) -> bool:
    """True for a list or tuple with a Tensor in it, at any depth."""
    if x.__class__ is not list and x.__class__ is not tuple:
        return False
    return any(isinstance(e, Tensor) or holds_tensor(e) for e in x)


def stacked(x, name: str = "array") -> Tensor:
    """A nested list or tuple holding Tensors, as one Tensor: its items stacked
    along a new first axis, recursively, as `jnp.array` does, so the derivative
    flows to each tensor inside (np.asarray would make it a constant).

    Raises:
      ValueError: the items do not all have one shape (a ragged list).
    """
    items = [stacked(e, name) if holds_tensor(e) else e for e in x]
    items = [e if isinstance(e, (Tensor, np.ndarray, *_PY_SCALARS)) else np.asarray(e) for e in items]
    items = [as_tensor(e) for e in promote(*items)] if len(items) > 1 else [as_tensor(items[0])]
    shapes = {t.shape for t in items}
    if len(shapes) != 1:
        raise ValueError(
            f"{name}: a list of tensors must be rectangular to become one tensor, got items of shapes "
            + ", ".join(str(t.shape) for t in items)
            + "; broadcast or pad them first"
        )
    rows = [bind(reshape_p, t, shape=(1, *t.shape)) for t in items]
    return rows[0] if len(rows) == 1 else bind(concatenate_p, *rows, axis=0)


def _promote_by_numpy(args, float_result: bool) -> list:
    args = [stacked(a) if holds_tensor(a) else a for a in args]
    dtype = np.result_type(*[dtype_of(a) for a in args])
    if float_result and dtype.kind not in "fc":
        dtype = np.dtype(np.float64)
    return [convert(a, dtype) for a in args]


def promote(*args):
    """Convert all arguments to their common NumPy result dtype (a list or tuple)."""
    if len(args) == 2:
        return promote_pair(args[0], args[1])
    fast = _fast_promote(args)
    return fast if fast is not None else _promote_by_numpy(args, False)


def promote_float(*args):
    """Like promote, but integers and bools become float64 (as np.exp(int) does)."""
    fast = _fast_promote(args)
    return fast if fast is not None else _promote_by_numpy(args, True)


def promote_pair(x, y, float_result: bool = False):
    """promote(x, y), or promote_float(x, y) if float_result.

    Every binary op of a training loop comes here, so `_fast_promote`'s common
    cases are written out for two operands (half the cost of its loop).
    """
    cx, cy = x.__class__, y.__class__
    if cx is WeakScalar or cy is WeakScalar:
        return _promote_by_numpy((x, y), float_result)
    if cx is np.ndarray or isinstance(x, Tensor):
        d = x.dtype
        if d.kind == "f":
            if cy is np.ndarray or isinstance(y, Tensor):
                dy = y.dtype
                if dy is d or dy == d:
                    return x, y
            elif cy is float or cy is int:
                return x, d.type(y)
    elif (cx is float or cx is int) and (cy is np.ndarray or isinstance(y, Tensor)):
        d = y.dtype
        if d.kind == "f":
            return d.type(x), y
    return _promote_by_numpy((x, y), float_result)


def float_operand(x):
    """promote_float(x)[0] for a function of real numbers: x itself when it is a float tensor or
    array (the common case, checked first because every unary op of a training loop comes
    here). A weak float (WeakScalar) stays float64, as numpy.exp(2.5) is a float64.

    Raises:
      TypeError: x is complex, naming the calling function (functions that take complex
        numbers call inexact_operand instead).
    """
    if (x.__class__ is np.ndarray or isinstance(x, Tensor)) and x.dtype.kind == "f":
        return x
    out = promote_float(x)[0]
    if out.dtype.kind == "c":
        frame = sys._getframe(1)
        while frame.f_code.co_name[0] in "_<" and frame.f_back is not None:  # the public function
            frame = frame.f_back
        caller = frame.f_code.co_name
        raise TypeError(f"{caller}: complex input is not supported, got a value of dtype {out.dtype}; "
                        "take numpy.real or numpy.abs first (docs/complex.md lists the complex functions)")
    return out


def refuse_complex(name: str, *xs):
    """A TypeError naming the function for a complex operand of a function of real numbers."""
    for x in xs:
        if getattr(x, "dtype", None) is not None and np.dtype(x.dtype).kind == "c" or isinstance(x, complex):
            raise TypeError(f"{name}: complex input is not supported, got a value of dtype "
                            f"{np.asarray(x).dtype if isinstance(x, complex) else x.dtype}")


def inexact_operand(x):
    """float_operand(x) for a function of complex numbers too: complex x passes unchanged."""
    if (x.__class__ is np.ndarray or isinstance(x, Tensor)) and x.dtype.kind in "fc":
        return x
    return promote_float(x)[0]


def as_tensor(x, dtype=None) -> Tensor:
    """x as a Tensor (Tensors pass through unchanged unless a dtype is asked for)."""
    if isinstance(x, Tensor):
        return x if dtype is None else convert(x, dtype)
    if holds_tensor(x):
        return stacked(x) if dtype is None else convert(stacked(x), dtype)
    value = np.asarray(x, dtype=dtype)
    if not value.dtype.isnative:  # as NumPy's functions return it: gradtape computes in native order
        value = value.astype(value.dtype.newbyteorder("="))
    return Tensor(value)


def shape_of(x) -> tuple:
    if isinstance(x, Tensor) or x.__class__ is np.ndarray:  # np.shape would dispatch first
        return x.shape
    return np.shape(x)


def normalize_axis(name: str, axis, ndim: int, sort: bool = True) -> tuple:
    """`axis` (None, int or tuple, negatives allowed) as a tuple of axes,
    sorted unless `sort=False` (where the order means something, as in norm)."""
    if axis is None:
        return tuple(range(ndim))
    if axis.__class__ is int and -ndim <= axis < ndim:  # the common case, one valid axis
        return (axis % ndim,)
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
