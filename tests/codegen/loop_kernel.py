"""A counted loop `out[i] = body(builder, [in_0[i], ...])` compiled for the
host with llvmlite: the scaffolding shared by tests/codegen/test_math.py and
bench/math_kernels.py to exercise emit_math in isolation.

    fn, opt_ir, asm = jit_loop(loop_module(ir.DoubleType(), 1, body), 1)
    fn(out_ptr, in_ptr, n)
"""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
from llvmlite import ir

from gradtape.codegen import cpu
from gradtape.codegen.math import MATH_LIBRARIES

llvm.initialize_native_target()
llvm.initialize_native_asmprinter()
for _lib in MATH_LIBRARIES:
    llvm.load_library_permanently(_lib)

_ENGINES = []  # compiled code lives as long as its engine


def target_machine():
    """A fresh target machine for GRADTAPE_CPU's CPU (MCJIT frees the one it is given)."""
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=cpu.current().name,
        features=cpu.current().features,
        opt=3,
        reloc="default",
        codemodel="jitdefault",
        jit=True,
    )


def loop_module(ty, n_inputs, body, name="loop_kernel"):
    """void kernel(out, in_0, ..., i64 n) { for i < n: out[i] = body(b, [in_k[i]]) }"""
    module = ir.Module(name=name)
    i64 = ir.IntType(64)
    fnty = ir.FunctionType(ir.VoidType(), [ty.as_pointer()] * (1 + n_inputs) + [i64])
    fn = ir.Function(module, fnty, "kernel")
    for arg in fn.args[:-1]:
        arg.add_attribute("noalias")
    entry, loop, done = (fn.append_basic_block(s) for s in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    n = fn.args[-1]
    b.cbranch(b.icmp_signed(">", n, i64(0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(i64(0), entry)
    xs = [b.load(b.gep(p, [i])) for p in fn.args[1:-1]]
    b.store(body(b, xs), b.gep(fn.args[0], [i]))
    i_next = b.add(i, i64(1))
    i.add_incoming(i_next, loop)
    b.cbranch(b.icmp_signed("<", i_next, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return module


def jit_loop(module, n_inputs):
    """Optimize (O3, loop + SLP vectorization) and JIT a loop_module.

    Returns (ctypes function (out, *ins, n), optimized IR text, assembly).
    """
    tm = target_machine()
    mod = llvm.parse_assembly(str(module))
    mod.verify()
    mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    opt_ir, asm = str(mod), tm.emit_assembly(mod)
    engine = llvm.create_mcjit_compiler(mod, target_machine())
    engine.finalize_object()
    _ENGINES.append(engine)
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (1 + n_inputs)), ctypes.c_int64)
    return proto(engine.get_function_address("kernel")), opt_ir, asm
