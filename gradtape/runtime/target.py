"""The host's LLVM target: initialization, target machines, the pass pipeline.

Everything that touches LLVM's global state runs under `llvm_lock`: LLVM's
global context, the symbol table behind `llvm.add_symbol` and pass
pipelines are not safe to use from two threads at once, and llvmlite adds no
locking of its own. llvmlite's calls release the GIL, so Python threads keep
running while one of them holds this lock.

Two pitfalls of llvmlite shape this file: an MCJIT engine
takes ownership of the TargetMachine it is given and frees it with itself,
so every engine gets a fresh one from `new_target_machine()`, while
optimizing and emitting objects use one long-lived machine of their own; and
`llvm.initialize()` raises in llvmlite 0.50, so only the native target and
asm printer are initialized.
"""
from __future__ import annotations

import threading

import llvmlite
import llvmlite.binding as llvm

from ..codegen import cpu as target_cpu
from . import config

llvm_lock = threading.RLock()

_state: dict = {}


def _initialize():
    if "triple" in _state:
        return
    with llvm_lock:
        if "triple" in _state:
            return
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        # Kernels store a value in one step and load it in a later one; once loops are unrolled, the
        # only pass left to forward such a store is InstCombine, which looks back 6 instructions by
        # default. A constant it misses reaches the code generator, where a select of two FP
        # constants with a condition known only there trips an X86 DAG-combine assertion on AVX-512
        # (issue 14, tests/runtime/test_llvm_abort.py). 64 forwards it; the scan is bounded per load.
        llvm.set_option("gradtape", "-available-load-scan-limit=64")
        chosen = target_cpu.current()  # GRADTAPE_CPU: the host unless asked otherwise
        _state["cpu"] = chosen.name
        _state["features"] = chosen.features
        _state["target"] = llvm.Target.from_triple(llvm.get_process_triple())
        # Creating an MCJIT engine adds the process's own symbols (libc, libm, the Python C API) to
        # LLVM's search path; llvm.address_of_symbol cannot see them before that. One engine, kept
        # for the life of the process, makes symbol checks true from the first compile on.
        anchor_tm = _state["target"].create_target_machine(cpu=_state["cpu"], jit=True, codemodel="jitdefault")
        _state["anchor"] = llvm.create_mcjit_compiler(llvm.parse_assembly(""), anchor_tm)
        _state["triple"] = llvm.get_process_triple()


def initialize():
    """Initialize LLVM's native target once (idempotent, thread-safe)."""
    _initialize()


def new_target_machine() -> llvm.TargetMachine:
    """A TargetMachine for the chosen CPU (GRADTAPE_CPU; its name and features), for JIT-loaded code.

    Give each execution engine its own: the engine frees it.
    """
    _initialize()
    return _state["target"].create_target_machine(
        cpu=_state["cpu"],
        features=_state["features"],
        opt=3,
        reloc="default",
        codemodel="jitdefault",
        jit=True,
    )


def _machine(key: str, opt: int) -> llvm.TargetMachine:
    tm = _state.get(key)
    if tm is None:
        with llvm_lock:
            tm = _state.get(key)
            if tm is None:
                _initialize()
                tm = _state[key] = _state["target"].create_target_machine(
                    cpu=_state["cpu"], features=_state["features"], opt=opt,
                    reloc="default", codemodel="jitdefault", jit=True,
                )
    return tm


def host_machine() -> llvm.TargetMachine:
    """The process-wide TargetMachine used to optimize and emit objects (never given to an engine)."""
    return _machine("tm", 3)


def pic_machine() -> llvm.TargetMachine:
    """A TargetMachine for the chosen CPU emitting position-independent code for a shared library
    (relocation model PIC, the default small code model: what `cc -shared` links)."""
    tm = _state.get("pic")
    if tm is None:
        with llvm_lock:
            tm = _state.get("pic")
            if tm is None:
                _initialize()
                tm = _state["pic"] = _state["target"].create_target_machine(
                    cpu=_state["cpu"], features=_state["features"], opt=3,
                    reloc="pic", codemodel="default", jit=False,
                )
    return tm


def identity() -> dict:
    """What machine code generated here is specialized to: CPU name and features, triple,
    LLVM and llvmlite versions (keys the disk cache; checked when an AOT file is loaded)."""
    _initialize()
    return {
        "triple": _state["triple"],
        "cpu": _state["cpu"],
        "features": _state["features"],
        "llvm": ".".join(map(str, llvm.llvm_version_info)),
        "llvmlite": llvmlite.__version__,
    }


def describe() -> str:
    """The CPU name, triple and LLVM version compiled code is specialized to (for cache keys and reports)."""
    _initialize()
    return f"{_state['triple']} {_state['cpu']} llvm{'.'.join(map(str, llvm.llvm_version_info))}"


def prepare_module(module: llvm.ModuleRef):
    """Give a parsed module the host's triple and data layout (the vectorizers' cost model needs them)."""
    tm = host_machine()
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)


def optimize(module: llvm.ModuleRef, level: int | None = None, vectorize: bool = True):
    """Run the new pass manager's default pipeline at `level` (config.opt_level), in place.

    Loop and SLP vectorization are on unless `vectorize` is False: they are
    what makes fused elementwise loops use AVX2. Loop unrolling follows
    config.loop_unrolling (and is off with `vectorize` off: code that is not
    worth vectorizing is not worth unrolling). Level 0 runs nothing.
    """
    level = config.opt_level if level is None else level
    if level <= 0:
        return
    with llvm_lock:
        pto = llvm.create_pipeline_tuning_options(speed_level=min(level, 3))
        pto.loop_vectorization = vectorize
        pto.slp_vectorization = vectorize
        pto.loop_unrolling = vectorize and config.loop_unrolling
        pb = llvm.create_pass_builder(host_machine(), pto)
        pb.getModulePassManager().run(module, pb)


def emit_object(module: llvm.ModuleRef) -> bytes:
    """Machine code for `module` as an object file (for an MCJIT engine's add_object_file)."""
    with llvm_lock:
        return host_machine().emit_object(module)


def emit_assembly(module: llvm.ModuleRef) -> str:
    with llvm_lock:
        return host_machine().emit_assembly(module)
