"""NumPy's bundled OpenBLAS, called from generated code.

numpy ships an ILP64 OpenBLAS with suffixed symbols (`scipy_cblas_dgemm64_`)
in numpy.libs. Generated code declares the
function by name; its address travels in `Lowered.externals` for the runtime
to register, which keeps compiled objects cacheable (no baked addresses). Loading a
cached object needs only `symbol_address`, so this module imports nothing of
code generation's heavier modules (the math library): a disk cache load
stays a few milliseconds.
"""
from __future__ import annotations

import ctypes
import functools
import os

import llvmlite.ir as ir
import numpy as np

from .dtypes import F32, F64, I32, I64

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112

_SYMBOLS = {
    ("gemm", np.dtype(np.float64)): "scipy_cblas_dgemm64_",
    ("gemm", np.dtype(np.float32)): "scipy_cblas_sgemm64_",
    ("gemv", np.dtype(np.float64)): "scipy_cblas_dgemv64_",
    ("gemv", np.dtype(np.float32)): "scipy_cblas_sgemv64_",
    # Complex products, keyed by the dtype of the parts (complex_gemm.py).
    ("complex_gemm", np.dtype(np.float64)): "scipy_cblas_zgemm64_",
    ("complex_gemm", np.dtype(np.float32)): "scipy_cblas_cgemm64_",
}


@functools.lru_cache(maxsize=None)
def _library():
    """The loaded OpenBLAS of this NumPy, or None when it has none (then no BLAS path)."""
    libs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(np.__file__))), "numpy.libs")
    try:
        names = sorted(os.listdir(libs))
    except OSError:
        return None
    for name in names:
        if name.startswith("libscipy_openblas64_") and name.endswith(".so"):
            try:
                return ctypes.CDLL(os.path.join(libs, name))
            except OSError:
                continue
    return None


# OpenBLAS's process-wide thread count (`int get(void)`, `void set(int)`): the runtime keeps it
# at 1 while generated code runs a BLAS step (runtime/blas_serial.py).
_THREAD_SYMBOLS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_")


@functools.lru_cache(maxsize=None)
def thread_count_functions() -> tuple | None:
    """(get, set) addresses of OpenBLAS's thread count functions, or None without them."""
    lib = _library()
    try:
        return tuple(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in _THREAD_SYMBOLS)
    except AttributeError:  # no library (None has no such attribute), or an OpenBLAS without them
        return None


def thread_count() -> int | None:
    """OpenBLAS's thread count now (what NumPy's products use), or None without OpenBLAS.

    Example:
        >>> from gradtape.codegen import blas
        >>> blas.thread_count() >= 1
        True
    """
    found = thread_count_functions()
    return None if found is None else ctypes.CFUNCTYPE(ctypes.c_int)(found[0])()


@functools.lru_cache(maxsize=None)
def address(routine: str, dtype) -> tuple | None:
    """(symbol, address) of cblas `routine` ("gemm", "gemv", or "complex_gemm": zgemm / cgemm
    of complex numbers with parts of `dtype`) for `dtype` (float32/float64), or None."""
    name = _SYMBOLS.get((routine, np.dtype(dtype)))
    lib = _library()
    if name is None or lib is None:
        return None
    try:
        fn = getattr(lib, name)
    except AttributeError:
        return None
    return name, ctypes.cast(fn, ctypes.c_void_p).value


def symbol_address(symbol: str) -> int | None:
    """The address of the cblas routine named `symbol` (one of the names above), or None."""
    for (routine, dtype), name in _SYMBOLS.items():
        if name == symbol:
            found = address(routine, dtype)
            return found[1] if found else None
    return None


def gemm_address(dtype) -> tuple | None:
    """(symbol, address) of cblas ?gemm for `dtype` (float32/float64), or None."""
    return address("gemm", dtype)


def complex_gemm_address(dtype) -> tuple | None:
    """(symbol, address) of cblas zgemm (`dtype` float64) or cgemm (float32), or None."""
    return address("complex_gemm", dtype)


def gemv_address(dtype) -> tuple | None:
    """(symbol, address) of cblas ?gemv for `dtype` (float32/float64), or None."""
    return address("gemv", dtype)


def _float(dtype) -> ir.Type:
    return F64 if np.dtype(dtype) == np.float64 else F32


def declare_gemm(module: ir.Module, dtype) -> ir.Function:
    """`void ?gemm(order, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)` (int64 ints)."""
    name, _ = gemm_address(dtype)
    t = _float(dtype)
    p = t.as_pointer()
    return declare(module, name, ir.VoidType(),
                   [I32, I32, I32, I64, I64, I64, t, p, I64, p, I64, t, p, I64])


def declare_gemv(module: ir.Module, dtype) -> ir.Function:
    """`void ?gemv(order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy)` (int64 ints)."""
    name, _ = gemv_address(dtype)
    t = _float(dtype)
    p = t.as_pointer()
    return declare(module, name, ir.VoidType(), [I32, I32, I64, I64, t, p, I64, p, I64, t, p, I64])


def declare(module: ir.Module, name: str, ret: ir.Type, args) -> ir.Function:
    """The function `name` of `module`, declared on first use."""
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, ir.FunctionType(ret, list(args)), name)


def declare_complex_gemm(module: ir.Module, dtype) -> ir.Function:
    """`void ?gemm(order, transa, transb, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc)` of the
    complex type whose parts are `dtype` (zgemm for float64, cgemm for float32; int64 ints,
    pointers to interleaved real and imaginary parts)."""
    name, _ = complex_gemm_address(dtype)
    p = _float(dtype).as_pointer()
    return declare(module, name, ir.VoidType(), [I32, I32, I32, I64, I64, I64, p, p, I64, p, I64, p, p, I64])
