"""The array API's creation functions: tensors made from Python values or shapes.

Each returns a constant tensor (no derivative), computed by NumPy, except
those `_like` functions and `tril`/`triu`, which are gradtape's and so keep
the derivative of their input where they have one.
"""
from __future__ import annotations

import numpy as np

from .. import functions
from ..functions._promote import as_tensor
from ..tracer.tensor import Tensor
from . import _device

_DEFAULT_FLOAT = np.dtype(np.float64)


def _const(value) -> Tensor:
    return Tensor(np.asarray(value))


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """A tensor of `obj` (a tensor, array, Python scalar or nested sequence), of `dtype` if given.

    `copy=False` refuses to copy (ValueError) where a conversion is needed;
    `copy=True` always returns a new object.

    Example::

        >>> from gradtape import array_api as xp
        >>> xp.asarray([[1, 2], [3, 4]], dtype=xp.float32).dtype
        dtype('float32')
    """
    _device.check(device)
    if isinstance(obj, Tensor):
        if dtype is None or np.dtype(dtype) == obj.dtype:
            return functions.copy(obj) if copy else obj
        if copy is False:
            raise ValueError(f"asarray: copy=False but {obj.dtype} -> {np.dtype(dtype)} needs a copy")
        return functions.cast(obj, np.dtype(dtype))
    if copy is False and not isinstance(obj, np.ndarray):
        raise ValueError("asarray: copy=False but a Python object must be copied into a tensor")
    value = np.array(obj, dtype=dtype, copy=True) if copy is not False else np.asarray(obj, dtype=dtype)
    if copy is False and value is not obj and not np.shares_memory(value, obj):
        raise ValueError("asarray: copy=False but the conversion needs a copy")
    return as_tensor(value)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Evenly spaced values in [start, stop), as numpy.arange."""
    _device.check(device)
    return _const(np.arange(start, stop, step, dtype=dtype))


def empty(shape, *, dtype=None, device=None):
    """A tensor of `shape` (its values are zeros: a tensor never holds uninitialized memory)."""
    return zeros(shape, dtype=dtype, device=device)


def zeros(shape, *, dtype=None, device=None):
    """A tensor of zeros."""
    _device.check(device)
    return _const(np.zeros(shape, dtype=dtype or _DEFAULT_FLOAT))


def ones(shape, *, dtype=None, device=None):
    """A tensor of ones."""
    _device.check(device)
    return _const(np.ones(shape, dtype=dtype or _DEFAULT_FLOAT))


def full(shape, fill_value, *, dtype=None, device=None):
    """A tensor of `shape` filled with `fill_value` (a Python scalar; a tensor fill keeps its derivative)."""
    _device.check(device)
    if isinstance(fill_value, Tensor):
        return functions.full(shape, fill_value, dtype=dtype)
    if dtype is None and isinstance(fill_value, float):
        dtype = _DEFAULT_FLOAT
    return _const(np.full(shape, fill_value, dtype=dtype))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """Ones on the k-th diagonal of an n_rows x n_cols matrix."""
    _device.check(device)
    return _const(np.eye(n_rows, n_cols, k=k, dtype=dtype or _DEFAULT_FLOAT))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """`num` evenly spaced values from start to stop."""
    _device.check(device)
    return _const(np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype or _DEFAULT_FLOAT))


def _like(fill):
    def like(x, /, *, dtype=None, device=None):
        _device.check(device)
        x = as_tensor(x)
        return _const(np.full(x.shape, fill, dtype=dtype or x.dtype))

    return like


empty_like = zeros_like = _like(0)
ones_like = _like(1)
empty_like.__doc__ = zeros_like.__doc__ = "Zeros of x's shape (and dtype, unless given)."
ones_like.__doc__ = "Ones of x's shape (and dtype, unless given)."


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """`fill_value` in x's shape (and dtype, unless given)."""
    _device.check(device)
    x = as_tensor(x)
    return full(x.shape, fill_value, dtype=dtype or x.dtype)


def meshgrid(*arrays, indexing="xy"):
    """Coordinate tensors of the 1-d inputs (a list, as the standard asks)."""
    return list(functions.meshgrid(*arrays, indexing=indexing))


def tril(x, /, *, k=0):
    """x with the elements above the k-th diagonal of its last two axes zeroed."""
    return functions.tril(x, k=k)


def triu(x, /, *, k=0):
    """x with the elements below the k-th diagonal of its last two axes zeroed."""
    return functions.triu(x, k=k)


def from_dlpack(x, /, *, device=None, copy=None):
    """A tensor of a DLPack-exporting array (through NumPy's from_dlpack)."""
    _device.check(device)
    return as_tensor(np.from_dlpack(x) if copy is not True else np.array(np.from_dlpack(x)))
