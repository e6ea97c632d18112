"""JIT a codegen `Lowered` with llvmlite and call it through ctypes (tests only).

The runtime owns the real JIT; this is the smallest independent path so the
code generator's tests do not depend on it:

    jitted = jit(lower_function(fn, "f"))
    outs = jitted(x, y)                 # list of NumPy arrays
    text = jitted.assembly              # the host's assembly of the module
"""
from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm
import numpy as np

from gradtape.codegen import cpu

_lock = threading.Lock()
_state: dict = {}


def _target_machine():
    if not _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _state["target"] = llvm.Target.from_triple(llvm.get_process_triple())
    # One per engine: MCJIT frees the machine it is given.
    return _state["target"].create_target_machine(
        cpu=cpu.current().name, features=cpu.current().features,  # GRADTAPE_CPU, as the runtime
        opt=3, reloc="default", codemodel="jitdefault", jit=True,
    )


class Jitted:
    """A compiled entry `void name(i8** args)` with its engine kept alive."""

    def __init__(self, lowered, engine, assembly):
        self.lowered = lowered
        self.engine = engine
        self.assembly = assembly
        address = engine.get_function_address(lowered.name)
        self._fn = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p))(address)
        self._arena = np.zeros(lowered.arena_bytes + 64, np.uint8)

    def __call__(self, *args):
        lw = self.lowered
        ins = [np.ascontiguousarray(a, t.dtype).reshape(t.shape) for a, t in zip(args, lw.in_types)]
        outs = [np.empty(t.shape, t.dtype) for t in lw.out_types]
        arena = self._arena.ctypes.data
        arena += (-arena) % 64
        ptrs = [a.ctypes.data for a in ins + outs] + [arena]
        self._fn((ctypes.c_void_p * len(ptrs))(*ptrs))
        return outs


def jit(lowered, *, assembly: bool = False) -> Jitted:
    """Optimize (O3, loop + SLP vectorization) and JIT `lowered`."""
    with _lock:
        for lib in lowered.libraries:
            llvm.load_library_permanently(lib)
        for name, address in lowered.externals.items():
            llvm.add_symbol(name, address)
        tm = _target_machine()
        mod = llvm.parse_assembly(str(lowered.module))
        mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        asm = tm.emit_assembly(mod) if assembly else None
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        return Jitted(lowered, engine, asm)
