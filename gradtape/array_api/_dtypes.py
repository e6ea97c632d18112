"""The array API's data types and data type functions, on NumPy's dtypes.

gradtape tensors have NumPy dtypes, so the namespace's dtype objects are
`numpy.dtype` instances, and the functions of the standard's "data type
functions" section are NumPy's own where NumPy has them (NumPy 2 follows
the standard's promotion rules). The complex dtypes are named, as the
standard requires; gradtape computes with them (docs/complex.md), but
this namespace has not been checked against the suite's complex tests yet.
"""
from __future__ import annotations

import collections

import numpy as np

from .. import functions
from ..functions._promote import as_tensor
from ..tracer.tensor import Tensor
from . import _device

bool = np.dtype(np.bool_)  # noqa: A001  (the standard's name)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float32, float64 = np.dtype(np.float32), np.dtype(np.float64)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

DTYPES = {"bool": bool, "int8": int8, "int16": int16, "int32": int32, "int64": int64, "uint8": uint8,
          "uint16": uint16, "uint32": uint32, "uint64": uint64, "float32": float32, "float64": float64,
          "complex64": complex64, "complex128": complex128}
KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
    "numeric": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
                "complex64", "complex128"),
}


def _dtype_of(x):
    return x.dtype if isinstance(x, (Tensor, np.ndarray)) else np.dtype(x)


def astype(x, dtype, /, *, copy=True, device=None):
    """x converted to `dtype` (a new tensor; `copy=False` returns x itself when nothing changes).

    Example::

        >>> from gradtape import array_api as xp
        >>> xp.astype(xp.asarray([1.7, -2.2]), xp.int32)
        Tensor([ 1, -2], dtype=int32)
    """
    _device.check(device)
    x = as_tensor(x)
    dtype = np.dtype(dtype)
    if x.dtype == dtype and not copy:
        return x
    return functions.cast(x, dtype) if x.dtype != dtype else functions.copy(x)  # a new object: t[i] = v rebinds


def can_cast(from_, to, /):
    """Whether `from_` (a dtype or tensor) converts to `to` by the standard's promotion rules."""
    return np.can_cast(_dtype_of(from_), np.dtype(to), casting="safe")


FInfo = collections.namedtuple("FInfo", ["bits", "eps", "max", "min", "smallest_normal", "dtype"])


def finfo(type, /):  # noqa: A002  (the standard's name)
    """Machine limits of a floating dtype: bits, eps, max, min, smallest_normal (Python floats), dtype."""
    f = np.finfo(_dtype_of(type))
    return FInfo(int(f.bits), float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), f.dtype)


def iinfo(type, /):  # noqa: A002
    """Machine limits of an integer dtype (NumPy's iinfo: bits, max, min, dtype)."""
    return np.iinfo(_dtype_of(type))


def isdtype(dtype, kind):
    """Whether `dtype` is of `kind`: a dtype, a kind name ("real floating", "integral", ...) or a tuple of them."""
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; the standard's kinds are {', '.join(KINDS)}")
        return any(np.dtype(dtype) == DTYPES[name] for name in KINDS[kind])
    return np.dtype(dtype) == np.dtype(kind)


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion gives these tensors, dtypes and Python scalars."""
    if not arrays_and_dtypes:
        raise ValueError("result_type needs at least one array or dtype")
    typed = [_dtype_of(a) if not isinstance(a, (int, float, complex)) else a for a in arrays_and_dtypes]
    return np.result_type(*typed)
