"""Build native code for one Function: lower, wrap, JIT, and make the entry points.

    native = build_native(fn)      # NativeFunction, or raises Fallback

The stages and their timings (seconds, in `native.timings`): `lower`
(gradtape.codegen builds llvmlite.ir), `ir_text` (str() of the module),
then jit.py's `parse`, `optimize`, `emit_object`, `load`, and `entry` (the
spec and the builtins binding fastcall.py's shared entry points to it).

    native = load_native(in_types, out_types, meta, object_bytes)   # from stored machine code

loads an object built earlier (the disk cache, a saved AOT function):
`native_meta(native)` is what it needs besides the bytes (the kernel's
name, arena size, the external symbols and libraries it calls), and the
symbols are resolved in this process before the object is loaded.
"""
from __future__ import annotations

import ctypes
import itertools
import threading
import time

import numpy as np

from .. import codegen
from ..gc_pause import gc_paused
from . import config, fastcall, jit, numpy_abi
from . import parallel  # noqa: F401  (registers the thread pool with the code generator before anything is lowered)
from .arena import EMPTY, aligned_empty
from .errors import CompileError

_serial = itertools.count()
_serial_lock = threading.Lock()


class Fallback(Exception):
    """Native code cannot be built for this Function; the interpreter serves it (message says why)."""


class NativeFunction:
    """A kernel loaded in memory and the ways to call it.

    `new_entry(*inputs)` and `into_entry(*inputs, *outputs)` are the
    METH_FASTCALL builtins (fastcall.py), None when they were not built;
    with `release_gil` they take this thread's arena as a last argument.
    `kernel` calls the kernel through ctypes with a `void**` array.
    """

    def __init__(self, code, name, kernel_address, arena_bytes, timings, symbols=(), libraries=()):
        self.code = code
        self.name = name
        self.kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(kernel_address)
        self.kernel_address = kernel_address
        self.arena_bytes = arena_bytes
        self.timings = timings
        self.symbols = tuple(symbols)  # names of the externals the kernel calls (BLAS, libmvec)
        self.libraries = tuple(libraries)
        self.new_entry = self.into_entry = None
        self.release_gil = True  # ctypes releases it; the fast entries say otherwise below


def _next_name():
    with _serial_lock:
        return f"gradtape_kernel_{next(_serial)}"


def _lower(fn, name):
    """codegen.lower(fn, name), turning "cannot be compiled" into Fallback."""
    lower = getattr(codegen, "lower", None)
    if lower is None:
        raise Fallback("gradtape.codegen has no lower()")
    try:
        return lower(fn, name)
    except codegen.Unsupported as e:
        raise Fallback(f"code generation does not support it: {e}") from None
    except ImportError as e:
        # Only the code generator's own module being absent means "no codegen yet";
        # an import failing inside it is a bug to report.
        if e.name == "gradtape.codegen.lowering":
            raise Fallback("gradtape.codegen.lowering is not available") from None
        raise


def _check_lowered(lowered, fn, name):
    if lowered.name != name:
        raise CompileError(f"codegen.lower returned a kernel named {lowered.name!r}, expected {name!r}")
    if tuple(lowered.in_types) != tuple(fn.in_types) or tuple(lowered.out_types) != tuple(fn.out_types):
        raise CompileError(
            f"codegen.lower returned types {lowered.in_types} -> {lowered.out_types}, "
            f"but the Function has {fn.in_types} -> {fn.out_types}"
        )
    if int(lowered.arena_bytes) < 0:
        raise CompileError(f"codegen.lower returned arena_bytes={lowered.arena_bytes}")


def _nbytes(types) -> int:
    return sum(t.size * np.dtype(t.dtype).itemsize for t in types)


def build_native(fn) -> NativeFunction:
    """Compile `fn` to native code.

    Raises:
        Fallback: code generation is unavailable or does not support `fn`.
        CompileError: code generation or LLVM failed.
    """
    timings: dict = {}
    t = time.perf_counter()
    name = _next_name()
    with gc_paused():
        lowered = _lower(fn, name)
        _check_lowered(lowered, fn, name)
        t1 = _lap(timings, "lower", t)
        kernel_ir = str(lowered.module)
        _lap(timings, "ir_text", t1)

    label = f"{name} = {_short(fn)}"
    externals, libraries = dict(lowered.externals), tuple(lowered.libraries)
    code = jit.jit_compile(kernel_ir, externals, libraries, timings, label)
    native = NativeFunction(code, name, code.address(name), int(lowered.arena_bytes), timings,
                            sorted(externals), libraries)
    _bind_entries(native, fn.in_types, fn.out_types)
    return native


def native_meta(native: NativeFunction) -> dict:
    """What load_native needs besides the object bytes (JSON-serializable)."""
    return {
        "name": native.name,
        "arena_bytes": native.arena_bytes,
        "symbols": list(native.symbols),
        "libraries": list(native.libraries),
    }


def load_native(in_types, out_types, meta: dict, obj: bytes, label: str = "") -> NativeFunction:
    """A NativeFunction from an object file built earlier, with entry points for this process.

    The external symbols `meta` names are looked up here (codegen.external_address)
    and its libraries loaded before the object is; jit.load_object then checks
    every symbol the object needs resolves.

    Raises:
        CompileError: a symbol cannot be resolved, or the object lacks its kernel.
    """
    timings: dict = {}
    name = meta["name"]
    symbols, libraries = tuple(meta.get("symbols", ())), tuple(meta.get("libraries", ()))
    externals = {}
    for s in symbols:
        address = codegen.external_address(s)
        if address:
            externals[s] = address
    code = jit.load_object(obj, externals, libraries, timings, label or name)
    native = NativeFunction(code, name, code.address(name), int(meta["arena_bytes"]), timings, symbols, libraries)
    _bind_entries(native, in_types, out_types)
    return native


def _bind_entries(native: NativeFunction, in_types, out_types):
    """Give `native` its METH_FASTCALL entry points (the `entry` stage), when NumPy's layout allows."""
    t = time.perf_counter()
    if config.fast_call and numpy_abi.LAYOUT is not None:
        # Work grows with the bytes touched, arena included; a big arena also belongs in the
        # per-thread arena (shared by every kernel a thread runs) rather than held by this function.
        touched = _nbytes(in_types) + _nbytes(out_types) + native.arena_bytes
        release_gil = touched >= config.release_gil_bytes
        # A kernel that keeps the GIL runs one thread at a time: its arena can be its own.
        arena = EMPTY if release_gil or not native.arena_bytes else aligned_empty(native.arena_bytes)
        spec = fastcall.make_spec(native.kernel_address, in_types, out_types, release_gil, arena.ctypes.data)
        native.new_entry, native.into_entry = fastcall.entry_points(spec, (native.code, arena))
        native.release_gil = release_gil
    native.timings["entry"] = time.perf_counter() - t


def _lap(timings: dict, stage: str, t0: float) -> float:
    t1 = time.perf_counter()
    timings[stage] = t1 - t0
    return t1


def _short(fn, limit: int = 200) -> str:
    # The text of a few equations is all that shows: printing all of a large Function costs
    # as much as lowering it.
    head = fn if len(fn.eqns) <= 16 else type(fn)(fn.invars, fn.eqns[:16], fn.eqns[15].outvars)
    text = str(head)
    return text if len(text) <= limit else text[: limit - 5] + " ... }"
