"""`lower` and `external_address`: the code generator's entry points (the package's docstring
describes the contract), apart from its __init__ so that importing the package loads no LLVM."""
from __future__ import annotations

from . import blas, failures, lapack, parallel
from .lowered import Lowered, _use_blas
from .lowering import lower_function


def lower(fn, name: str = "gradtape_fn", *, blas: bool = True) -> Lowered:
    """Lower `fn` to LLVM IR (see gradtape.codegen's docstring for the calling convention).

    Args:
        fn: the ir.Function.
        name: the symbol of the entry function.
        blas: large contractions call NumPy's OpenBLAS and large loops the runtime's thread pool
            (True), or everything is loops on the calling thread (False).
    """
    if blas:
        return lower_function(fn, name)
    token = _use_blas.set(False)
    try:
        return lower_function(fn, name)
    finally:
        _use_blas.reset(token)


def external_address(symbol: str) -> int | None:
    """The address in this process of an external generated code may name in
    Lowered.externals (BLAS and LAPACK routines, the failure callbacks of failures.py), or None when it is not one of those
    (libraries' symbols, such as libmvec's, resolve by loading the library;
    the thread pool's is the runtime's)."""
    return (blas.symbol_address(symbol) or lapack.symbol_address(symbol) or failures.symbol_address(symbol)
            or parallel.external_address(symbol))
