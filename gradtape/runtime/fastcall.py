"""The native entry points: METH_FASTCALL builtins, generated once in LLVM IR.

Two functions of the form

    PyObject* w(PyObject* self, PyObject* const* args, Py_ssize_t nargs)

serve every compiled kernel:

- `new(*inputs)` checks the inputs, allocates the outputs with NumPy's
  `PyArray_New`, runs the kernel and returns the list of outputs;
- `into(*inputs, *outputs)` checks inputs and outputs, and that no output
  overlaps an input or another output, runs the kernel and returns None.

What a kernel needs is data, not code: `self` is a "spec", an int64 array
made per kernel by `make_spec` (the kernel's address, the number of inputs
and outputs, its arena, and one row per array: type number, rank, required
flags, where its dimensions are, its size in bytes). `entry_points(spec)`
binds the shared machine code to a spec as two builtins. So compiling a
kernel costs nothing extra for its entry points, and the wrapper code,
compiled once per process with the full pipeline, is the same for all.

Each check runs in native code: the object is exactly a numpy.ndarray, of
the specialization's dtype (descriptor type number, not byte-swapped),
rank and shape, C-contiguous and aligned (outputs also writeable). On any
mismatch the function returns NotImplemented without touching anything, so
that Python converts the inputs (or raises the TypeError) and retries; the
only Python exception native code can return is NumPy's MemoryError.

The arena: a kernel that holds the GIL while it runs uses the arena in its
spec, owned by its CompiledFunction (one thread at a time can run it, so
one arena per function is enough). A kernel that releases the GIL (big
arrays) takes the calling thread's arena as one more trailing argument.

The NumPy field offsets come from numpy_abi (verified at import). The
addresses of Python objects and C API functions are named externals
registered with llvm.add_symbol, never constants baked into the IR.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import threading

import numpy as np
from llvmlite import ir

from . import cache_key, config, disk_cache, jit, numpy_abi
from .errors import CompileError

_i1 = ir.IntType(1)
_i8 = ir.IntType(8)
_i32 = ir.IntType(32)
_i64 = ir.IntType(64)
_ptr = _i8.as_pointer()
_pptr = _ptr.as_pointer()
_i64p = _i64.as_pointer()
_KERNEL = ir.FunctionType(ir.VoidType(), [_pptr]).as_pointer()

_NDARRAY = "gradtape_rt_ndarray_type"
_NONE = "gradtape_rt_none"
_NOT_IMPLEMENTED = "gradtape_rt_not_implemented"
_ARRAY_NEW = "gradtape_rt_PyArray_New"
NEW_SYMBOL, INTO_SYMBOL = "gradtape_rt_call_new", "gradtape_rt_call_into"

METH_FASTCALL = 0x0080
_INPUT_FLAGS = numpy_abi.C_CONTIGUOUS | numpy_abi.ALIGNED
_OUTPUT_FLAGS = numpy_abi.C_CONTIGUOUS | numpy_abi.ALIGNED | numpy_abi.WRITEABLE

# The spec: a header of int64 words, then one row per array, then the dimensions.
_KERNEL_ADDR, _N_IN, _N_OUT, _RELEASE_GIL, _ARENA, _HEADER = range(6)
_TYPE_NUM, _NDIM, _FLAGS, _DIMS_AT, _NBYTES, _COLUMNS = range(6)

_C_API = ("Py_IncRef", "Py_DecRef", "PyEval_SaveThread", "PyEval_RestoreThread", "PyList_New", "PyList_SetItem")


def make_spec(kernel_address: int, in_types, out_types, release_gil: bool, arena_address: int) -> np.ndarray:
    """The int64 array that tells the shared entry points about one kernel (see the module docstring)."""
    arrays = [(t, _INPUT_FLAGS) for t in in_types] + [(t, _OUTPUT_FLAGS) for t in out_types]
    dims_start = _HEADER + _COLUMNS * len(arrays)
    words = [kernel_address, len(in_types), len(out_types), int(release_gil), arena_address]
    rows, dims = [], []
    for t, flags in arrays:
        dt = np.dtype(t.dtype)
        rows += [dt.num, len(t.shape), flags, dims_start + len(dims), t.size * dt.itemsize]
        dims += list(t.shape)
    spec = np.array(words + rows + dims, dtype=np.int64)
    spec.flags.writeable = False
    return spec


def wrapper_externals() -> dict:
    """Symbol name -> address for everything the wrapper module declares (this process's values)."""
    symbols = {name: ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value for name in _C_API}
    symbols.update({
        _NDARRAY: id(np.ndarray),
        _NONE: id(None),
        _NOT_IMPLEMENTED: id(NotImplemented),
        _ARRAY_NEW: numpy_abi.ARRAY_NEW,
    })
    return symbols


def _c(ty, v):
    return ir.Constant(ty, v)


class _Builder:
    """An IRBuilder with the few control-flow shapes the wrappers need."""

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))

    def field(self, obj, offset: int, ty):
        """The `ty` at byte `offset` of the object at `obj`."""
        b = self.b
        return b.load(b.bitcast(b.gep(obj, [_c(_i64, offset)], inbounds=True), ty.as_pointer()))

    def at(self, base, index):
        return self.b.gep(base, [index], inbounds=True)

    def word(self, spec, index):
        """spec[index] (an i64), index a Python int or an i64 value."""
        return self.b.load(self.at(spec, _c(_i64, index) if isinstance(index, int) else index))

    def cell(self, spec, row, column: int):
        """Column `column` of array row `row` of the spec."""
        b = self.b
        return self.word(spec, b.add(b.mul(row, _c(_i64, _COLUMNS)), _c(_i64, _HEADER + column)))

    def require(self, cond, otherwise, label: str):
        """Continue in a new block when `cond`, else branch to `otherwise`."""
        ok = self.fn.append_basic_block(label)
        self.b.cbranch(cond, ok, otherwise)
        self.b.position_at_end(ok)

    def loop(self, start, stop, label: str):
        """Open `for i in range(start, stop)`; returns (i, close) where close() ends the body."""
        b = self.b
        head, body, done = (self.fn.append_basic_block(f"{label}.{s}") for s in ("head", "body", "done"))
        before = b.block
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(_i64, name=label)
        i.add_incoming(start, before)
        b.cbranch(b.icmp_signed("<", i, stop), body, done)
        b.position_at_end(body)

        def close():
            i.add_incoming(b.add(i, _c(_i64, 1)), b.block)
            b.branch(head)
            b.position_at_end(done)

        return i, close


class _Module:
    """The wrapper module: declarations and the check functions both wrappers call."""

    def __init__(self):
        self.mod = m = ir.Module(name="gradtape_call_wrappers")
        void = ir.VoidType()
        self.incref = ir.Function(m, ir.FunctionType(void, [_ptr]), "Py_IncRef")
        self.decref = ir.Function(m, ir.FunctionType(void, [_ptr]), "Py_DecRef")
        self.save = ir.Function(m, ir.FunctionType(_ptr, []), "PyEval_SaveThread")
        self.restore = ir.Function(m, ir.FunctionType(void, [_ptr]), "PyEval_RestoreThread")
        self.list_new = ir.Function(m, ir.FunctionType(_ptr, [_i64]), "PyList_New")
        self.list_set = ir.Function(m, ir.FunctionType(_i32, [_ptr, _i64, _ptr]), "PyList_SetItem")
        self.array_new = ir.Function(
            m, ir.FunctionType(_ptr, [_ptr, _i32, _i64p, _i32, _i64p, _ptr, _i32, _i32, _ptr]), _ARRAY_NEW
        )
        # External globals: their addresses are the objects (registered with llvm.add_symbol).
        self.ndarray_type = ir.GlobalVariable(m, _i8, _NDARRAY)
        self.none = ir.GlobalVariable(m, _i8, _NONE)
        self.not_implemented = ir.GlobalVariable(m, _i8, _NOT_IMPLEMENTED)
        self.check_arrays = self._emit_check_arrays()
        self.disjoint = self._emit_disjoint()

    def _emit_check_arrays(self) -> ir.Function:
        """`i1 check(i64* spec, i8** objs, i64 n, i8** data)`: objs[k] matches row k for k < n;
        stores each one's data pointer in data[k]."""
        fn = ir.Function(self.mod, ir.FunctionType(_i1, [_i64p, _pptr, _i64, _pptr]), "check_arrays")
        fn.linkage = "internal"
        spec, objs, n, data = fn.args
        bld = _Builder(fn)
        b, L = bld.b, numpy_abi.LAYOUT
        reject = fn.append_basic_block("reject")
        k, close = bld.loop(_c(_i64, 0), n, "k")
        obj = b.load(bld.at(objs, k))
        # Only an ndarray's fields may be read, and its dimensions only once its rank is known.
        bld.require(b.icmp_unsigned("==", bld.field(obj, L.ob_type, _ptr), self.ndarray_type), reject, "is_array")
        descr = bld.field(obj, L.descr, _ptr)
        want_flags = b.trunc(bld.cell(spec, k, _FLAGS), _i32)
        ndim = b.zext(bld.field(obj, L.nd, _i32), _i64)
        type_num = b.zext(bld.field(descr, L.descr_type_num, _i32), _i64)
        swapped = _c(_i8, numpy_abi.SWAPPED_BYTEORDER)
        ok = b.icmp_unsigned("==", b.and_(bld.field(obj, L.flags, _i32), want_flags), want_flags)
        ok = b.and_(ok, b.icmp_unsigned("==", type_num, bld.cell(spec, k, _TYPE_NUM)))
        ok = b.and_(ok, b.icmp_unsigned("!=", bld.field(descr, L.descr_byteorder, _i8), swapped))
        ok = b.and_(ok, b.icmp_unsigned("==", ndim, bld.cell(spec, k, _NDIM)))
        bld.require(ok, reject, "layout_ok")
        shape = b.bitcast(bld.field(obj, L.dimensions, _ptr), _i64p)
        dims_at = bld.cell(spec, k, _DIMS_AT)
        d, close_dims = bld.loop(_c(_i64, 0), ndim, "d")
        want = bld.word(spec, b.add(dims_at, d))
        bld.require(b.icmp_unsigned("==", b.load(bld.at(shape, d)), want), reject, "dim_ok")
        close_dims()
        b.store(bld.field(obj, L.data, _ptr), bld.at(data, k))
        close()
        b.ret(_c(_i1, 1))
        b.position_at_end(reject)
        b.ret(_c(_i1, 0))
        return fn

    def _emit_disjoint(self) -> ir.Function:
        """`i1 disjoint(i64* spec, i8** data, i64 first, i64 n)`: rows first..n-1 overlap no row before them."""
        fn = ir.Function(self.mod, ir.FunctionType(_i1, [_i64p, _pptr, _i64, _i64]), "disjoint")
        fn.linkage = "internal"
        spec, data, first, n = fn.args
        bld = _Builder(fn)
        b = bld.b
        overlap = fn.append_basic_block("overlap")
        j, close_j = bld.loop(first, n, "j")
        k, close_k = bld.loop(_c(_i64, 0), j, "k")
        pj, pk = (b.ptrtoint(b.load(bld.at(data, r)), _i64) for r in (j, k))
        sj, sk = bld.cell(spec, j, _NBYTES), bld.cell(spec, k, _NBYTES)
        empty = b.or_(b.icmp_unsigned("==", sj, _c(_i64, 0)), b.icmp_unsigned("==", sk, _c(_i64, 0)))
        apart = b.or_(b.icmp_unsigned("<=", b.add(pj, sj), pk), b.icmp_unsigned("<=", b.add(pk, sk), pj))
        bld.require(b.or_(empty, apart), overlap, "apart")
        close_k()
        close_j()
        b.ret(_c(_i1, 1))
        b.position_at_end(overlap)
        b.ret(_c(_i1, 0))
        return fn


class _Wrapper(_Builder):
    """One METH_FASTCALL function reading its kernel's spec from `self`; `miss` returns NotImplemented."""

    def __init__(self, m: _Module, name: str, takes_outputs: bool):
        super().__init__(ir.Function(m.mod, ir.FunctionType(_ptr, [_ptr, _pptr, _i64]), name))
        self.m = m
        self_obj, self.args, nargs = self.fn.args
        b = self.b
        self.miss = self.fn.append_basic_block("miss")
        self.spec = b.bitcast(self.field(self_obj, numpy_abi.LAYOUT.data, _ptr), _i64p)
        self.n_in, self.n_out = self.word(self.spec, _N_IN), self.word(self.spec, _N_OUT)
        self.release_gil = b.icmp_unsigned("!=", self.word(self.spec, _RELEASE_GIL), _c(_i64, 0))
        self.n_arrays = b.add(self.n_in, self.n_out) if takes_outputs else self.n_in  # array arguments
        want = b.add(self.n_arrays, b.zext(self.release_gil, _i64))
        # The kernel's argument array: inputs, outputs, arena (in the entry block: a plain stack slot).
        self.argv = b.alloca(_ptr, size=b.add(b.add(self.n_in, self.n_out), _c(_i64, 1)), name="argv")
        self.require(b.icmp_unsigned("==", nargs, want), self.miss, "nargs_ok")

    def set_arena(self):
        """argv[n_in + n_out] = the arena: the thread's (trailing argument) or the spec's."""
        b, L = self.b, numpy_abi.LAYOUT
        slot = self.at(self.argv, b.add(self.n_in, self.n_out))
        from_arg, from_spec, done = (self.fn.append_basic_block(s) for s in ("arena.arg", "arena.spec", "arena.done"))
        b.cbranch(self.release_gil, from_arg, from_spec)
        b.position_at_end(from_spec)
        b.store(b.inttoptr(self.word(self.spec, _ARENA), _ptr), slot)
        b.branch(done)
        b.position_at_end(from_arg)
        obj = b.load(self.at(self.args, self.n_arrays))
        self.require(b.icmp_unsigned("==", self.field(obj, L.ob_type, _ptr), self.m.ndarray_type), self.miss, "arena_ok")
        b.store(self.field(obj, L.data, _ptr), slot)
        b.branch(done)
        b.position_at_end(done)

    def run_kernel(self):
        b, m = self.b, self.m
        kernel = b.inttoptr(self.word(self.spec, _KERNEL_ADDR), _KERNEL)
        release, keep, done = (self.fn.append_basic_block(s) for s in ("gil.release", "gil.keep", "gil.done"))
        b.cbranch(self.release_gil, release, keep)
        b.position_at_end(release)
        state = b.call(m.save, [])
        b.call(kernel, [self.argv])
        b.call(m.restore, [state])
        b.branch(done)
        b.position_at_end(keep)
        b.call(kernel, [self.argv])
        b.branch(done)
        b.position_at_end(done)

    def finish(self):
        self.b.position_at_end(self.miss)
        self.b.call(self.m.incref, [self.m.not_implemented])
        self.b.ret(self.m.not_implemented)


def _emit_new(m: _Module):
    w = _Wrapper(m, NEW_SYMBOL, takes_outputs=False)
    b = w.b
    w.require(b.call(m.check_arrays, [w.spec, w.args, w.n_in, w.argv]), w.miss, "inputs_ok")
    w.set_arena()
    # Every check has passed: from here on, allocate, compute and return (or fail with NumPy's error).
    result = b.call(m.list_new, [w.n_out])
    failed = w.fn.append_basic_block("alloc_failed")
    null = ir.Constant(_ptr, None)
    w.require(b.icmp_unsigned("!=", result, null), failed, "list_ok")
    j, close = w.loop(_c(_i64, 0), w.n_out, "j")
    row = b.add(j, w.n_in)
    dims = w.at(w.spec, w.cell(w.spec, row, _DIMS_AT))
    arr = b.call(m.array_new, [
        m.ndarray_type, b.trunc(w.cell(w.spec, row, _NDIM), _i32), dims,
        b.trunc(w.cell(w.spec, row, _TYPE_NUM), _i32), ir.Constant(_i64p, None), null, _c(_i32, 0), _c(_i32, 0), null,
    ])
    w.require(b.icmp_unsigned("!=", arr, null), failed, "allocated")
    b.call(m.list_set, [result, j, arr])  # steals arr: freeing the list frees it
    b.store(w.field(arr, numpy_abi.LAYOUT.data, _ptr), w.at(w.argv, row))
    close()
    w.run_kernel()
    b.ret(result)

    b.position_at_end(failed)  # NumPy set MemoryError; drop what was made (Py_DecRef ignores NULL)
    b.call(m.decref, [result])
    b.ret(null)
    w.finish()


def _emit_into(m: _Module):
    w = _Wrapper(m, INTO_SYMBOL, takes_outputs=True)
    b = w.b
    n = w.n_arrays
    w.require(b.call(m.check_arrays, [w.spec, w.args, n, w.argv]), w.miss, "arrays_ok")
    # An output may not overlap an input or another output: the kernel would read what it already wrote.
    w.require(b.call(m.disjoint, [w.spec, w.argv, w.n_in, n]), w.miss, "no_overlap")
    w.set_arena()
    w.run_kernel()
    b.call(m.incref, [m.none])
    b.ret(m.none)
    w.finish()


def build_wrappers() -> ir.Module:
    """The module defining NEW_SYMBOL and INTO_SYMBOL, shared by every kernel.

    Raises:
        RuntimeError if numpy_abi could not verify NumPy's layout.
    """
    if numpy_abi.LAYOUT is None:
        raise RuntimeError("NumPy's array layout could not be verified; use the ctypes call path")
    m = _Module()
    _emit_new(m)
    _emit_into(m)
    return m.mod


class _PyMethodDef(ctypes.Structure):
    _fields_ = [
        ("ml_name", ctypes.c_char_p),
        ("ml_meth", ctypes.c_void_p),
        ("ml_flags", ctypes.c_int),
        ("ml_doc", ctypes.c_char_p),
    ]


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [ctypes.POINTER(_PyMethodDef), ctypes.py_object, ctypes.py_object]

_compiled: dict = {}
_compile_lock = threading.Lock()


def _wrapper_addresses() -> dict:
    """{symbol: address} of the shared wrappers, compiled on first use (and kept for the process).

    They are compiled at O2 without the vectorizers and the unroller: their
    loops run over a few arrays, and the full pipeline took 40% longer
    (optimize + emit_object 86 against 61 ms, once per process) for no
    measurable gain per call (bench/call_overhead.py). Fast instruction
    selection would cut the time to a third but costs about 30 ns a call.
    With the disk cache on, a process loads the wrappers another one compiled
    (about 1 ms instead of 70).
    """
    if not _compiled:
        with _compile_lock:
            if not _compiled:
                timings: dict = {}
                code = _load_cached(timings)
                if code is None:
                    text = str(build_wrappers())
                    obj = jit.compile_object(text, wrapper_externals(), (), timings, "call wrappers", level=2,
                                             vectorize=False)
                    code = jit.load_object(obj, wrapper_externals(), (), timings, "call wrappers")
                    _store_cached(obj)
                _compiled.update({s: code.address(s) for s in (NEW_SYMBOL, INTO_SYMBOL)})
                _compiled["code"], _compiled["timings"] = code, timings
    return _compiled


_preparing = None  # the thread prepare_in_background started, if any


def prepare_in_background():
    """Compile (or load from the disk cache) the shared call wrappers in a thread, now.

    The first compile of a process needs them after its kernel (about 70 ms of
    LLVM on an empty cache, a fifth of W3's first call). Called when a compile
    is likely (the first staged function, a tape's plan that will compile), so
    that they build while the caller traces and lowers; the compile that needs
    them waits only for what is left (the `entry` stage). Returns at once.
    """
    global _preparing
    if _compiled or _preparing is not None or not config.fast_call or numpy_abi.LAYOUT is None:
        return
    _preparing = threading.Thread(target=_prepare, name="gradtape-call-wrappers", daemon=True)
    _preparing.start()


def _prepare():
    try:
        _wrapper_addresses()
    except Exception:  # noqa: BLE001  (the call that needs them compiles them again and raises)
        pass


def _join_at_exit():
    """Let a background compile finish before the interpreter (and LLVM's statics) go away."""
    if _preparing is not None:
        _preparing.join(timeout=10)


def _after_fork_in_child():
    """A fork made while the thread compiled: the child compiles its own (the lock may be held)."""
    global _compile_lock, _preparing
    _compile_lock = threading.Lock()
    _preparing = None


atexit.register(_join_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _disk_name() -> str | None:
    """The wrappers' disk cache key: a hash of this file's source and NumPy's layout offsets
    (what the generated IR is made of; cheaper than building the IR to hash it, 8 ms)."""
    if config.dump or not disk_cache.enabled():
        return None
    try:
        with open(__file__, "rb") as f:
            source = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    L = numpy_abi.LAYOUT
    if L is None:
        return None
    layout = sorted((k, getattr(L, k)) for k in dir(L) if not k.startswith("_"))
    return cache_key.digest("wrappers", source, repr(layout), repr((_INPUT_FLAGS, _OUTPUT_FLAGS, _C_API)))


def _load_cached(timings):
    name = _disk_name()
    entry = disk_cache.read(name, "wrappers") if name else None
    if entry is None:
        return None
    try:
        return jit.load_object(entry[1], wrapper_externals(), (), timings, "call wrappers")
    except CompileError as e:
        disk_cache.reject(name, f"cannot be loaded: {e}")
        return None


def _store_cached(obj: bytes):
    name = _disk_name()
    if name:
        disk_cache.write(name, {"kind": "wrappers"}, obj)


def entry_points(spec: np.ndarray, keepalive) -> tuple:
    """The builtins `(new, into)` for the kernel `spec` describes.

    Args:
        spec: from make_spec; becomes the builtins' `self`.
        keepalive: what the kernel needs alive (its engine, its arena); the
            builtins hold it, with their method tables, as `__module__`.
    """
    addresses = _wrapper_addresses()
    builtins = []
    for symbol in (NEW_SYMBOL, INTO_SYMBOL):
        name = symbol.encode()
        mdef = _PyMethodDef(name, addresses[symbol], METH_FASTCALL, None)
        builtins.append(_new_builtin(ctypes.byref(mdef), spec, (keepalive, mdef, name)))
    return tuple(builtins)
