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
from .. import _lazy
from . import config  # noqa: F401
from .errors import ArgumentError, CompileError, RuntimeLayerError  # noqa: F401

# The rest loads when first named (PEP 562): compiling needs llvmlite and the code generator,
# which a program that only traces or records never loads (gradtape/_lazy.py).
__getattr__, __dir__ = _lazy.names(__name__, globals(), {
    "CompiledFunction": ".compiled",
    "cache_info": ".cache", "clear_cache": ".cache", "compile_function": ".cache", "compile_function_async": ".cache",
    "compile_function_if_cached": ".cache", "interpreted": ".cache", "wait_for_compiles": ".cache",
    "ServedFunction": ".serving",
}, None)  # and every module: runtime.disk_cache, runtime.parallel, ...
