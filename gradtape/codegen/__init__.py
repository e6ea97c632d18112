"""Code generation: lower an ir.Function to an LLVM module with llvmlite.ir.

The contract with the runtime (gradtape.runtime):

    lowered = lower(fn, name)        # -> Lowered

`lowered.module` (an llvmlite.ir.Module) defines one externally visible
function

    void <name>(i8** args)

where, for a Function with n inputs and m outputs,
  - args[0 .. n-1]   point at the inputs' data: C-contiguous, aligned, of
                     exactly the invars' dtypes and shapes;
  - args[n .. n+m-1] point at the outputs' data, allocated by the caller
                     (C-contiguous, never aliasing an input or each other);
  - args[n+m]        points at a scratch arena of `lowered.arena_bytes`
                     bytes, 64-byte aligned, owned by the calling thread.
The function writes every output and nothing outside the outputs and arena.
`lowered.externals` maps symbol names the module declares to addresses the
runtime registers (llvm.add_symbol) before finalizing; `lowered.libraries`
lists shared libraries to load first (e.g. libmvec.so.1). Ops that cannot be
compiled raise `Unsupported`, and the runtime falls back to the interpreter.

`lower(fn, name, blas=False)` lowers every contraction to loops instead of
calls into NumPy's bundled OpenBLAS, for code that must run without NumPy
(gradtape.export_c). `external_address(symbol)` finds, in this process, an
external that Lowered.externals named when the code was generated (for
machine code loaded from a cache or a file). Large loops call the runtime's
thread pool (parallel.py); `blas=False` also leaves them whole.
"""
from __future__ import annotations

from . import blas, failures, lapack, parallel
from .lowered import Lowered, LoweringError, Unsupported, _use_blas, blas_allowed  # noqa: F401
from .lowering import lower_function

CODEGEN_VERSION = 7  # bump when generated code changes: it keys every cache


def lower(fn, name: str = "gradtape_fn", *, blas: bool = True) -> Lowered:
    """Lower `fn` to LLVM IR (see the module docstring for the calling convention).

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
