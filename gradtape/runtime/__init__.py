"""The runtime: compile Functions to native code, cache them, call them fast.

    cf = compile_function(fn)          # CompiledFunction, cached by fn's text
    outs = cf(x, y)                    # list of NumPy arrays, one per output
    cf(x, y, out=[buf])                # write into preallocated outputs
    fut = compile_function_async(fn)   # build in the background; interpreted(fn) meanwhile
    wait_for_compiles()                # block until no build is in flight
    served = ServedFunction(fn)        # the interpreter until native code is ready (serving.py)
    disk_cache.cache_info()            # the compile cache on disk (gradtape.cache_info())

compile_function is thread-safe: two threads meeting the same Function
compile it once. When code generation cannot handle a Function
(codegen.Unsupported) the CompiledFunction runs the reference interpreter
and says so (`cf.native is False`, `cf.fallback_reason`). Settings
(background compiles, optimization level, IR dumps, ...) are in config.py.

Compiled object code is also kept on disk (disk_cache.py, on by default;
GRADTAPE_CACHE_DIR), so a new process loads what another one compiled.

Files, in the order a compile goes through them: serving.py (the policy
staged functions and tape backward plans share: the interpreter serves
calls while native code compiles in the background), cache_key.py (what keys
the cache), cache.py (the cache, compile_function, background compiles),
disk_cache.py and entry_file.py (the cache on disk and its file format),
trusted_path.py (opens the cache directory and its entries only when no
other user can have written them),
build.py (lower, JIT, bind the entry points), jit.py (parse, optimize,
emit an object, load it), elf.py (the symbols an object needs, checked
before loading), target.py (host target machine and pass pipeline),
fastcall.py (the METH_FASTCALL entry points, generated once in LLVM IR and
shared by every kernel), numpy_abi.py (NumPy's array struct offsets,
verified at import), compiled.py (CompiledFunction and its call path),
arena.py (scratch memory), alloc.py (large outputs' buffers, reused once
their arrays die), config.py (settings), errors.py.
"""
from . import alloc, config  # noqa: F401
from .compiled import CompiledFunction  # noqa: F401  (first: compiled.py re-exports cache.py's names)
from .cache import (  # noqa: F401
    cache_info,
    clear_cache,
    compile_function,
    compile_function_async,
    compile_function_if_cached,
    interpreted,
    wait_for_compiles,
)
from . import disk_cache  # noqa: F401
from . import parallel  # noqa: F401  (registers the thread pool with the code generator)
from .serving import ServedFunction  # noqa: F401
from .errors import ArgumentError, CompileError, RuntimeLayerError  # noqa: F401
