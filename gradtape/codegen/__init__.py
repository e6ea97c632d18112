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

from .. import _lazy

CODEGEN_VERSION = 18  # bump when generated code changes: it keys every cache

# The code generator loads when first named (PEP 562): staging keys its caches by
# CODEGEN_VERSION long before anything is lowered (gradtape/_lazy.py).
__getattr__, __dir__ = _lazy.names(__name__, globals(), {
    "lower": ".api", "external_address": ".api", "lower_function": ".lowering",
    "Lowered": ".lowered", "LoweringError": ".lowered", "Unsupported": ".lowered", "_use_blas": ".lowered",
    "blas_allowed": ".lowered",
}, None)
