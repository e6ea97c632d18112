"""Abstract values of the IR: a shape and a dtype, nothing about data.

>>> TensorType((3, 4), np.float64)
f64[3,4]
"""
from __future__ import annotations

import numpy as np

from . import config

_SHORT_NAMES = {
    np.dtype(np.float64): "f64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32",
    np.dtype(np.int16): "i16",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.bool_): "bool",
    np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
}


def dtype_name(dtype) -> str:
    """The short dtype name used in IR text: f64, f32, i64, bool, ..."""
    dtype = np.dtype(dtype)
    return _SHORT_NAMES.get(dtype, dtype.name)


def is_float(dtype) -> bool:
    """True for the dtypes gradients flow through: real and complex floating point
    (complex64, complex128; derivatives by JAX's convention, docs/complex.md)."""
    return np.dtype(dtype).kind in "fc"


def is_complex(dtype) -> bool:
    """True for complex64 and complex128."""
    return np.dtype(dtype).kind == "c"


def real_dtype(dtype) -> np.dtype:
    """The real dtype of a complex one's parts (complex64 -> float32); other dtypes as they are."""
    dtype = np.dtype(dtype)
    return np.finfo(dtype).dtype if dtype.kind == "c" else dtype


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype whose parts have the given real dtype (float32 -> complex64)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return dtype
    return np.dtype(np.complex64) if dtype == np.float32 else np.dtype(np.complex128)


class TensorType:
    """The type of an IR value: a static shape (tuple of ints) and a NumPy dtype.

    Types are immutable, hashable and compare by value, so they can key caches.
    The dtype is in the machine's byte order (that of `>f8` is float64).

    Raises:
        ValueError: a negative dimension, or more bytes than any array can hold (2**63 - 1),
            with NumPy's words ("array is too big").
        MemoryError: more bytes than config.max_array_bytes (GRADTAPE_MAX_ARRAY_BYTES,
            default the machine's physical memory), as NumPy's allocation would.
    """

    __slots__ = ("shape", "dtype", "size", "_hash")

    def __init__(self, shape, dtype):
        # Types are made on every recorded op: skip conversions when the
        # arguments already have the canonical form (NumPy shapes and dtypes).
        if type(shape) is not tuple or not all(type(d) is int for d in shape):
            # A size known only at run time (codegen/dynamic_sizes.py) stays as it is.
            shape = tuple(d if getattr(d, "symbolic_size", False) else int(d) for d in shape)
        if type(dtype) is not np.dtype and not isinstance(dtype, np.dtype):
            dtype = np.dtype(dtype)
        if not dtype.isnative:  # a big-endian array's type: values are computed in the machine's order
            dtype = dtype.newbyteorder("=")
        size = 1
        for d in shape:
            size *= d
        if type(size) is int and (size * dtype.itemsize > config.max_array_bytes or size < 0):  # no overflow
            _refuse(shape, dtype, size)
        setter = object.__setattr__
        setter(self, "shape", shape)
        setter(self, "dtype", dtype)
        setter(self, "size", size)
        setter(self, "_hash", hash((shape, dtype)))

    def __setattr__(self, name, value):
        raise AttributeError("TensorType is immutable")

    def __reduce__(self):
        # Immutable: pickle rebuilds it through the constructor (a Function travels to another process).
        return (TensorType, (self.shape, self.dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_float(self) -> bool:
        """True for the dtypes gradients flow through: real and complex floating point."""
        return self.dtype.kind in "fc"

    @property
    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    def with_shape(self, shape) -> "TensorType":
        return TensorType(shape, self.dtype)

    def with_dtype(self, dtype) -> "TensorType":
        return TensorType(self.shape, dtype)

    def __eq__(self, other):
        return (
            isinstance(other, TensorType)
            and self.shape == other.shape
            and self.dtype == other.dtype
        )

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"{dtype_name(self.dtype)}[{','.join(map(repr, self.shape))}]"

    __str__ = __repr__


_MAX_BYTES = 2**63 - 1  # numpy's limit: an array's byte count must fit a signed 64-bit index


def _refuse(shape, dtype, size):
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimensions are not allowed: shape {shape}")
    nbytes = size * dtype.itemsize
    if nbytes > _MAX_BYTES:
        raise ValueError(
            f"array is too big: shape {shape} of {dtype} would hold {size} elements ({nbytes} bytes), "
            f"more than the largest possible array ({_MAX_BYTES} bytes)")
    raise MemoryError(
        f"Unable to allocate {_bytes_text(nbytes)} for an array with shape {shape} and data type {dtype}: "
        f"more than the limit of {_bytes_text(config.max_array_bytes)} (gradtape.ir.config.max_array_bytes, "
        "GRADTAPE_MAX_ARRAY_BYTES, default this machine's physical memory)")


def _bytes_text(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.3g} {unit}"
        n /= 1024
    return ""


def type_of(value) -> TensorType:
    """The TensorType of a concrete NumPy array or scalar."""
    value = np.asarray(value)
    return TensorType(value.shape, value.dtype)
