"""From LLVM IR text to callable machine code, one stage at a time.

    code = jit_compile(ir_text, externals, libraries, timings, label)

The stages, each timed into `timings` (seconds by stage name):

- `parse`: llvm.parse_assembly and verify;
- `optimize`: the new pass manager pipeline (target.optimize);
- `emit_object`: machine code, emitted once as an object file;
- `load`: a fresh MCJIT engine loads that object and resolves its symbols.

Loading the object instead of JIT-compiling the module means code is
generated once, and the same bytes could be stored in a disk cache.

Unresolved symbols crash the process inside finalize (not a Python error),
so every symbol must resolve first: `externals` are registered with
llvm.add_symbol, `libraries` are loaded permanently, and anything else must
already be in the process (libm, libc). Both the optimized module's
declarations and the object's undefined symbols (elf.py) are checked.
"""
from __future__ import annotations

import sys
import time

import llvmlite.binding as llvm

from . import config, elf, llvm_worker, target
from .errors import CompileError

_loaded_libraries: set = set()


def register_symbols(externals: dict, libraries=()):
    """Load `libraries` and bind each external name to its address, checking both took effect."""
    with target.llvm_lock:
        for lib in libraries:
            if lib not in _loaded_libraries:
                try:
                    llvm.load_library_permanently(lib)
                except RuntimeError as e:
                    raise CompileError(f"cannot load library {lib!r} needed by generated code: {e}") from None
                _loaded_libraries.add(lib)
        for name, address in externals.items():
            llvm.add_symbol(name, address)
            if llvm.address_of_symbol(name) != address:
                raise CompileError(f"symbol {name!r} did not register at address {address:#x}")


# Where compiler-rt's helpers live on Linux (__powidf2, __extendhfsf2, __udivti3, ...): instruction
# selection calls them for some intrinsics and types, and the process may not have loaded them yet.
_HELPER_LIBRARIES = ("libgcc_s.so.1",)


def _unresolvable(names) -> list:
    """The names in `names` no loaded library or registered symbol provides (helper libraries tried)."""
    target.initialize()  # makes the process's own symbols visible
    missing = [n for n in names if not llvm.address_of_symbol(n)]
    for lib in _HELPER_LIBRARIES if missing else ():
        if lib not in _loaded_libraries:
            try:
                llvm.load_library_permanently(lib)
            except RuntimeError:
                continue
            _loaded_libraries.add(lib)
            missing = [n for n in missing if not llvm.address_of_symbol(n)]
    return missing


def declared_symbols(module: llvm.ModuleRef) -> list:
    """Names the module declares but does not define (LLVM's intrinsics left out)."""
    return [
        gv.name
        for gv in list(module.functions) + list(module.global_variables)
        if gv.is_declaration and not gv.name.startswith("llvm.")
    ]


class NativeCode:
    """Machine code loaded in its own engine; the engine frees the code with itself.

    `object_bytes` keeps the object file, e.g. for a disk cache.
    """

    def __init__(self, engine, object_bytes: bytes):
        self.engine = engine
        self.object_bytes = object_bytes

    def address(self, name: str) -> int:
        addr = self.engine.get_function_address(name)
        if not addr:
            raise CompileError(f"symbol {name!r} is not defined by the compiled code")
        return addr


def _dump(stage: str, text, label: str):
    """Print `text()` to stderr when `stage` is in config.dump (the text is made only then)."""
    if stage in config.dump:
        print(f"; ---- gradtape {stage}: {label} ----\n{text()}", file=sys.stderr)


def _timed(timings: dict, stage: str, t0: float) -> float:
    t1 = time.perf_counter()
    timings[stage] = timings.get(stage, 0.0) + (t1 - t0)
    return t1


def _parse(text: str, label: str) -> llvm.ModuleRef:
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as e:
        raise CompileError(f"LLVM rejected the IR of {label}: {e}") from None
    target.prepare_module(module)
    return module


def jit_compile(kernel_ir: str, externals: dict, libraries, timings: dict, label: str = "",
                level: int | None = None, vectorize: bool = True) -> NativeCode:
    """Parse, optimize, emit and load one module given as LLVM IR text.

    Args:
        kernel_ir: LLVM IR text of the module.
        externals: symbol name -> address to register before loading.
        libraries: shared libraries to load permanently before loading.
        timings: dict that receives seconds per stage.
        label: names the function in dumps and errors.
        level, vectorize: for target.optimize (default: config.opt_level, vectorized).
    Returns:
        NativeCode owning the engine.
    Raises:
        CompileError when LLVM rejects the IR or a symbol cannot be resolved.
    """
    with target.llvm_lock:
        obj = compile_object(kernel_ir, externals, libraries, timings, label, level, vectorize)
        return load_object(obj, externals, libraries, timings, label)


def compile_object(kernel_ir: str, externals: dict, libraries, timings: dict, label: str = "",
                   level: int | None = None, vectorize: bool = True, machine=None) -> bytes:
    """The object file of one module given as LLVM IR text (the `parse`, `optimize`, `emit_object` stages).

    After config.llvm_worker_after compiles in this process, host-machine
    compiles run in llvm_worker.py's child process (LLVM's pass pipeline
    leaks; the child takes the leak with it when it is replaced).

    Args: as jit_compile; `machine` is the TargetMachine to emit with
    (default: the host's JIT machine, target.host_machine()).
    Returns:
        The object file's bytes, every symbol it needs resolvable in this process.
    """
    global in_process_compiles
    level = config.opt_level if level is None else level
    compiled = _compile_in_worker(kernel_ir, timings, label, level, vectorize) if _worker_wanted(machine) else None
    if compiled is None:
        with target.llvm_lock:
            compiled = optimize_and_emit(kernel_ir, timings, label, level, vectorize, machine)
            in_process_compiles += 1
    obj, declared = compiled
    with target.llvm_lock:
        register_symbols(externals, libraries)
        missing = _unresolvable(declared)
    if missing:
        raise CompileError(
            f"generated code for {label} uses symbols this process cannot resolve: "
            f"{', '.join(missing)} (codegen must list them in Lowered.externals or .libraries)"
        )
    return obj


in_process_compiles = 0  # what config.llvm_worker_after counts


def _worker_wanted(machine) -> bool:
    after = int(config.llvm_worker_after)
    return machine is None and not config.dump and 0 <= after <= in_process_compiles


def _compile_in_worker(kernel_ir, timings, label, level, vectorize):
    """(object, declared names) from the worker process, or None when there is no usable worker."""
    t = time.perf_counter()
    with llvm_worker.lock():
        # Another thread's compile holds the worker (the call wrappers, fastcall.prepare_in_background):
        # waiting for it is waiting for LLVM's worker, as its start-up is.
        waited = time.perf_counter() - t
        if waited > 1e-4:
            timings["worker_wait"] = timings.get("worker_wait", 0.0) + waited
        worker = llvm_worker.shared(target.identity(), timings)
        if worker is None:
            return None
        try:
            return worker.compile(kernel_ir, level, vectorize, bool(config.loop_unrolling), timings, label)
        except CompileError:
            if worker.process.poll() is not None:
                llvm_worker.discard(worker)
            raise


def optimize_and_emit(kernel_ir: str, timings: dict, label: str, level: int, vectorize: bool, machine=None):
    """Parse, optimize and emit one module here: (object bytes, names it declares but does not define)."""
    with target.llvm_lock:
        t = time.perf_counter()
        module = _parse(kernel_ir, label)
        _dump("llvm", lambda: str(module), label)
        t = _timed(timings, "parse", t)

        target.optimize(module, level, vectorize)
        _dump("opt", lambda: str(module), label)
        t = _timed(timings, "optimize", t)

        declared = declared_symbols(module)
        machine = machine or target.host_machine()
        obj = machine.emit_object(module)
        _dump("asm", lambda: machine.emit_assembly(module), label)
        _timed(timings, "emit_object", t)
        return obj, declared


def load_object(obj: bytes, externals: dict, libraries, timings: dict, label: str = "") -> NativeCode:
    """Load an object file into a fresh MCJIT engine (the `load` stage).

    Every symbol the object leaves undefined is checked first (registering
    `externals`, loading `libraries`): an unresolved one would crash the
    process inside LLVM instead of raising.

    Raises:
        CompileError naming the symbols this process cannot resolve.
    """
    with target.llvm_lock:
        t = time.perf_counter()
        register_symbols(externals, libraries)
        missing = _unresolvable(elf.undefined_symbols(obj) or ())
        if missing:
            raise CompileError(
                f"machine code for {label} calls symbols this process cannot resolve: {', '.join(missing)} "
                "(added by instruction selection, or a cached object whose libraries are missing; "
                "codegen must register them in Lowered.externals)"
            )
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target.new_target_machine())
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        _timed(timings, "load", t)
        return NativeCode(engine, obj)
