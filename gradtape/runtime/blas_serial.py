"""OpenBLAS on one thread while compiled code calls it, emitted into the pool's module.

Generated code brackets every BLAS step (codegen/parallel_blas.py) with

    void gradtape_rt_blas_serial_enter()    void gradtape_rt_blas_serial_leave()

The first caller in saves OpenBLAS's thread count and sets it to 1; the last
one out sets it back. The parallelism of a BLAS step is then the pool's (its
units are batch indices or blocks of rows, each one single-threaded BLAS
call), within the pool's one budget of threads and with its back-off on a
crowded machine. OpenBLAS's own threads split each call statically and wait
for every part: a part whose core another process holds stalls the call for
a scheduler tick, which made a GMM gradient 7-28x slower on a loaded 2-core
machine than on one thread (bench/thread_budget.py).

The count is process-wide (OpenBLAS built with pthreads has no per-thread
count), so NumPy's own products on another Python thread run on one thread
while a compiled call is inside a BLAS step. A spin lock orders the save and
the restore, so no step ever runs BLAS with more than one thread, and so the
bits of every result are those of one-thread BLAS calls (OpenBLAS's threaded
gemm rounds differently from its one-thread gemm).

The addresses of OpenBLAS's get/set functions are globals that
runtime/parallel.py writes when it builds the pool (0: no OpenBLAS, nothing
to do).
"""
from __future__ import annotations

from llvmlite import ir

from ..codegen.parallel import BLAS_SERIAL_ENTER, BLAS_SERIAL_LEAVE

# i64 words parallel.py reads or writes: OpenBLAS's functions, the count saved at the first
# enter, the steps inside, the lock.
WORDS = ("blas_get", "blas_set", "blas_saved", "blas_depth", "blas_lock")

_i32 = ir.IntType(32)
_i64 = ir.IntType(64)
_GET = ir.FunctionType(_i32, [])
_SET = ir.FunctionType(ir.VoidType(), [_i32])


def _c(ty, v):
    return ir.Constant(ty, v)


def emit(module: ir.Module, global_name, pause: ir.Function) -> None:
    """Add WORDS (named by `global_name`) and the enter and leave functions to `module`."""
    words = {}
    for name in WORDS:
        g = ir.GlobalVariable(module, _i64, global_name(name))
        g.initializer = _c(_i64, 0)
        g.align = 64
        words[name] = g
    _emit(module, words, pause, BLAS_SERIAL_ENTER, first=True)
    _emit(module, words, pause, BLAS_SERIAL_LEAVE, first=False)


def _emit(module, words, pause, name: str, first: bool):
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), name)
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    lock, depth = words["blas_lock"], words["blas_depth"]
    spin, wait, locked = (fn.append_basic_block(s) for s in ("spin", "wait", "locked"))
    b.branch(spin)
    b.position_at_end(spin)
    took = b.extract_value(b.cmpxchg(lock, _c(_i64, 0), _c(_i64, 1), "acquire", "monotonic"), 1)
    b.cbranch(took, locked, wait)
    b.position_at_end(wait)
    b.call(pause, [])
    b.branch(spin)

    b.position_at_end(locked)
    d = b.load(depth)
    edge = b.icmp_unsigned("==", d, _c(_i64, 0 if first else 1))
    b.store(b.add(d, _c(_i64, 1)) if first else b.sub(d, _c(_i64, 1)), depth)
    get, set_ = b.load(words["blas_get"]), b.load(words["blas_set"])
    act = b.and_(edge, b.icmp_unsigned("!=", set_, _c(_i64, 0)))
    with b.if_then(act):
        setter = b.inttoptr(set_, _SET.as_pointer())
        if first:
            saved = b.call(b.inttoptr(get, _GET.as_pointer()), [])
            b.store(b.sext(saved, _i64), words["blas_saved"])
            with b.if_then(b.icmp_signed("!=", saved, _c(_i32, 1))):
                b.call(setter, [_c(_i32, 1)])
        else:
            saved = b.trunc(b.load(words["blas_saved"]), _i32)
            with b.if_then(b.icmp_signed("!=", saved, _c(_i32, 1))):
                b.call(setter, [saved])
    b.store_atomic(_c(_i64, 0), lock, "release", 8)
    b.ret_void()
