"""CompiledFunction: the executable form of one Function, and how a call reaches native code.

A call is a signature check and a pointer hand-off. `cf(*inputs)` calls one
entry point, `new(*inputs)`, which checks every array against the
specialization, allocates the outputs, runs the kernel and returns the list
of outputs; `cf(*inputs, out=outs)` calls `into(*inputs, *outs)`, which
also checks the outputs and that none overlaps an input, and returns None.
An entry point that meets an argument that is not exactly what the kernel
was specialized to returns NotImplemented without touching anything. Only
then does Python look at the arguments: it converts what can be converted
(memory layout, byte order, non-arrays), raises ArgumentError (a TypeError)
for a wrong count, dtype or shape, and calls the entry point again.

The entry points are, in order of preference:
  - `fastcall`: METH_FASTCALL builtins generated in LLVM IR (fastcall.py),
    whose checks and allocation run in native code;
  - `ctypes`: Python functions doing the same checks and calling the kernel
    through ctypes (when NumPy's layout could not be verified at import, or
    config.fast_call is off);
  - `interpreter`: the reference interpreter (code generation unsupported).
"""
from __future__ import annotations

import ctypes

import numpy as np

from .. import _lazy, ir
from ..codegen import failures
from . import alloc, complex_boundary
from .arena import thread_arena
from .errors import ArgumentError, RuntimeLayerError


class CompiledFunction:
    """Executable form of one ir.Function (one shape signature).

    Call it with one array per input (any memory layout; dtypes and shapes
    must match exactly) to get a list of output arrays, freshly allocated
    (from runtime.alloc's pool when large: memory no live array can reach), or
    written into `out` (a list of arrays, or one array when there is one
    output; C-contiguous, writeable, exact dtype and shape; an `out` array
    may overlap an input: the result is as if computed first). With `out` a
    list, that same list is returned.

    Attributes:
        fn, in_types, out_types: the Function and its signature.
        native: True when calls run generated machine code.
        call_path: "fastcall", "ctypes" or "interpreter".
        fallback_reason: why the interpreter serves this Function (or None).
        splits_complex: True when fn holds complex values and the machine code
            computes its real form (kernel_fn: complex arrays pass as views of
            their real and imaginary parts, complex_boundary.py).
        compile_seconds: wall time spent building it; compile_stages splits it.
        loaded_from_disk: True when the machine code came from the disk cache.
        arena_bytes: scratch memory a call uses.
        footprint: bytes this function holds while it lives: its machine
            code (the object file's size) and its own arena (a kernel that
            releases the GIL uses its thread's arena instead); 0 for the
            interpreter. What config.memory_cache_bytes bounds.
        entry: the raw entry point for hot loops: `cf.entry(*inputs)` returns
            the list of outputs, or NotImplemented when an argument is not
            exactly of the specialization's type and C-contiguous (then call
            `cf(*inputs)`, which converts or raises). It skips the Python
            frame of `cf(...)`: about a third of its cost (bench/call_overhead.py).
        entry_into: the same for `out=`: `cf.entry_into(*inputs, *outputs)`
            writes the outputs (exact type, C-contiguous, writeable, none
            overlapping an input or another output) and returns None, or
            returns NotImplemented having written nothing.

    Raises (on call):
        ArgumentError (a TypeError): wrong number of arrays, or an array of
            another dtype or shape; ValueError: an `out` array that is not
            C-contiguous, aligned and writeable.

    Example:
        >>> from gradtape.runtime import compile_function
        >>> fn = gradtape.make_ir(lambda a, b: a + b, np.ones(3), np.ones(3))   # { a:f64[3] b:f64[3] . c = add a b -> c }
        >>> cf = compile_function(fn)
        >>> cf(np.ones(3), np.arange(3.0))
        [array([1., 2., 3.])]
    """

    def __init__(self, fn: ir.Function | None, native=None, fallback_reason: str | None = None, types=None,
                 kernel_fn: ir.Function | None = None):
        self.fn = fn
        # Machine code loaded from a file comes without its Function: then `types` gives the signature.
        self.in_types, self.out_types = (fn.in_types, fn.out_types) if fn is not None else map(tuple, types)
        # The Function the machine code computes: fn, or fn's real form when fn holds complex values
        # (complex_boundary.py: the entry points then view complex arrays as pairs of reals).
        self.kernel_fn = kernel_fn if kernel_fn is not None and native is not None else fn
        self.splits_complex = splits_complex = self.kernel_fn is not fn
        kernel_types = (self.kernel_fn.in_types, self.kernel_fn.out_types) if splits_complex else (
            self.in_types, self.out_types)
        self.native = native is not None
        self.fallback_reason = fallback_reason
        self.compile_seconds = 0.0
        self.loaded_from_disk = False
        self.compile_stages = dict(native.timings) if native is not None else {}
        self.arena_bytes = native.arena_bytes if native is not None else 0
        self._native = native  # keeps the machine code alive
        self.footprint = _footprint(native)
        if native is not None and native.new_entry is not None:
            self.call_path = "fastcall"
            self._new, self._into = _fast_entries(native, kernel_types[1])
        elif native is not None:
            self.call_path = "ctypes"
            self._new, self._into = _ctypes_entries(*kernel_types, native)
        else:
            self.call_path = "interpreter"
            self._new, self._into = _interpreter_entries(self)
        if native is not None and failures.reports_failures(native.symbols):
            self._new, self._into = _raising_failures(self._new), _raising_failures(self._into)
        if splits_complex:
            self._new, self._into = complex_boundary.wrap_entries(self._new, self._into, self.in_types,
                                                                   self.out_types)
        self.entry, self.entry_into = self._new, self._into

    def __call__(self, *args, out=None):
        if out is None:
            result = self._new(*args)
            if result is not NotImplemented:
                return result
            return self._new_converted(args)
        # The fast case is a list of arrays (`.__class__`: cheaper than type() here); a tuple, a single
        # array or anything else goes through _into_checked, which validates and converts.
        if out.__class__ is list and self._into(*args, *out) is None:
            return out
        return self._into_checked(args, out)

    def __repr__(self):
        return f"<CompiledFunction {self.signature()} via {self.call_path}>"

    def signature(self) -> str:
        """`(f64[3], f64[3]) -> (f64[3])`: the types this specialization takes and returns."""
        return f"({', '.join(map(str, self.in_types))}) -> ({', '.join(map(str, self.out_types))})"

    # -- everything below runs only when an entry point declined the arguments --

    def _new_converted(self, args):
        result = self._new(*self._convert_inputs(args))
        if result is NotImplemented:
            self._internal_error(args)
        return result

    def _into_checked(self, args, out):
        given = [out] if isinstance(out, np.ndarray) else list(out)
        outs = self._check_out(given)
        if _overlaps(args, outs) or not all(o.dtype.isnative for o in outs):
            # As NumPy's ufuncs do: compute into fresh arrays, then copy, so no input is overwritten early
            # (and big-endian outputs get their bytes swapped).
            for o, r in zip(outs, self(*args)):
                o[...] = r
            return given
        if self._into(*self._convert_inputs(args), *outs) is not None:
            self._internal_error(args)
        return given

    def _convert_inputs(self, args) -> list:
        if len(args) != len(self.in_types):
            raise ArgumentError(
                f"compiled function {self.signature()} takes {len(self.in_types)} arrays, got {len(args)}"
            )
        return [self._convert_input(i, a) for i, a in enumerate(args)]

    def _convert_input(self, i: int, a) -> np.ndarray:
        t = self.in_types[i]
        value = a if type(a) is np.ndarray else np.asarray(a)
        if value.dtype.newbyteorder("=") != t.dtype or value.shape != t.shape:
            raise ArgumentError(
                f"compiled function {self.signature()}: argument {i} must be {t} "
                f"({np.dtype(t.dtype).name} array of shape {t.shape}), got {_describe(a)}; "
                f"convert it with np.asarray(x, dtype=np.{np.dtype(t.dtype).name}) or retrace for the new shape"
            )
        value = np.asarray(value, dtype=t.dtype, order="C")  # copies only what must change (keeps rank 0)
        if not value.flags.aligned:
            value = value.copy()
        if value.dtype.num != np.dtype(t.dtype).num:  # e.g. longlong for int64: same bytes, other type number
            value = value.view(t.dtype)
        return value

    def _check_out(self, given: list) -> list:
        """The arrays of `given` as the kernel takes them (validated; subclasses viewed as ndarray)."""
        outs = list(given)
        if len(outs) != len(self.out_types):
            raise ArgumentError(
                f"compiled function {self.signature()} has {len(self.out_types)} outputs, "
                f"got {len(outs)} arrays as out="
            )
        for j, (o, t) in enumerate(zip(outs, self.out_types)):
            if not isinstance(o, np.ndarray) or o.dtype.newbyteorder("=") != t.dtype or o.shape != t.shape:
                raise ArgumentError(
                    f"compiled function {self.signature()}: out[{j}] must be a {t} array "
                    f"({np.dtype(t.dtype).name}, shape {t.shape}), got {_describe(o)}"
                )
            if not (o.flags.c_contiguous and o.flags.aligned and o.flags.writeable):
                raise ValueError(
                    f"compiled function {self.signature()}: out[{j}] must be C-contiguous, aligned and "
                    f"writeable (got c_contiguous={o.flags.c_contiguous}, aligned={o.flags.aligned}, "
                    f"writeable={o.flags.writeable}); pass np.empty({t.shape}, np.{np.dtype(t.dtype).name})"
                )
            if not o.dtype.isnative:
                outs[j] = o.view(np.ndarray)  # written by a copy (_into_checked), which swaps the bytes
            elif type(o) is not np.ndarray or o.dtype.num != np.dtype(t.dtype).num:
                outs[j] = o.view(np.ndarray).view(t.dtype)  # same memory, exactly the kernel's type
        return outs

    def _internal_error(self, args):
        raise RuntimeLayerError(
            f"internal error: the {self.call_path} entry of {self.signature()} rejected converted "
            f"arguments {[_describe(a) for a in args]}; please report this"
        )


def _raising_failures(entry):
    """`entry`, raising what the generated code reported during the call (codegen/failures.py): a
    singular matrix (LinAlgError) or a while_loop's stack that could not grow (MemoryError) must not
    return garbage."""
    def checked(*args):
        failures.clear()
        result = entry(*args)
        failures.raise_pending()
        return result

    return checked


def _footprint(native) -> int:
    if native is None:
        return 0
    own_arena = 0 if native.release_gil else native.arena_bytes
    return len(getattr(native.code, "object_bytes", b"")) + own_arena


def _describe(a) -> str:
    if isinstance(a, np.ndarray):
        order = "" if a.dtype.isnative else "big-endian " if a.dtype.byteorder == ">" else "little-endian "
        return f"{ir.TensorType(a.shape, a.dtype)} ({order}{a.dtype.name} array of shape {a.shape})"
    return f"{type(a).__name__} {a!r}"[:120]


def _overlaps(args, outs) -> bool:
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for j, o in enumerate(outs):
        if any(np.may_share_memory(o, a) for a in arrays) or any(
            np.may_share_memory(o, p) for p in outs[j + 1 :]
        ):
            return True
    return False


def _fast_entries(native, out_types):
    """The generated builtins; a kernel that releases the GIL also gets this thread's arena, and one
    with a large output takes its outputs from alloc's pool."""
    into = _with_arena(native, native.into_entry)
    if max((t.size * t.dtype.itemsize for t in out_types), default=0) >= alloc.POOL_FLOOR:
        return _pooled_new(native, out_types), into
    return _with_arena(native, native.new_entry), into


def _with_arena(native, entry):
    if not native.release_gil:
        return entry
    need = native.arena_bytes
    return lambda *a: entry(*a, thread_arena(need))


def _pooled_new(native, out_types):
    """`new` writing into outputs from alloc.empty (buffers of results already freed, when large):
    the generated `into` runs the kernel after the same input checks, plus the check that no
    output overlaps an input, which a pooled buffer never does (an input viewing one keeps it out
    of the pool)."""
    new, into = _with_arena(native, native.new_entry), _with_arena(native, native.into_entry)
    specs = [(t.shape, np.dtype(t.dtype)) for t in out_types]
    empty = alloc.empty

    def pooled(*inputs):
        outs = [empty(shape, dtype) for shape, dtype in specs]
        if into(*inputs, *outs) is None:
            return outs
        # Declined (an input to convert, or an output of another type number): `new` decides, as without the pool.
        return new(*inputs)

    return pooled


def _accepts(arrays, types, writeable: bool) -> bool:
    for a, t in zip(arrays, types):
        if type(a) is not np.ndarray or a.dtype != t.dtype or a.shape != t.shape:
            return False
        if a.dtype.num != t.dtype.num:
            return False
        f = a.flags
        if not (f.c_contiguous and f.aligned) or (writeable and not f.writeable):
            return False
    return True


def _ctypes_entries(in_types, out_types, native):
    """Entry points through ctypes: the generated wrappers' checks, done in Python."""
    n_in, n_out = len(in_types), len(out_types)
    argv_type = ctypes.c_void_p * (n_in + n_out + 1)
    out_specs = [(t.shape, t.dtype) for t in out_types]
    sizes = [t.size * t.dtype.itemsize for t in (*in_types, *out_types)]
    kernel, need = native.kernel, native.arena_bytes

    def new(*inputs):
        if len(inputs) != n_in or not _accepts(inputs, in_types, False):
            return NotImplemented
        outs = [alloc.empty(s, d) for s, d in out_specs]
        pointers = [a.ctypes.data for a in (*inputs, *outs, thread_arena(need))]
        kernel(argv_type(*pointers))  # ctypes releases the GIL: hence the per-thread arena
        return outs

    def into(*arrays):
        if len(arrays) != n_in + n_out or not _accepts(arrays[:n_in], in_types, False):
            return NotImplemented
        if not _accepts(arrays[n_in:], out_types, True):
            return NotImplemented
        pointers = [a.ctypes.data for a in arrays]
        for j in range(n_in, n_in + n_out):
            for k in range(j):
                if sizes[j] and sizes[k] and pointers[j] < pointers[k] + sizes[k] and pointers[k] < pointers[j] + sizes[j]:
                    return NotImplemented
        kernel(argv_type(*pointers, thread_arena(need).ctypes.data))
        return None

    return new, into


def _interpreter_entries(cf: CompiledFunction):
    """Entry points through the reference interpreter (same protocol as the native ones)."""
    n_in, n_out = len(cf.in_types), len(cf.out_types)

    def new(*inputs):
        if len(inputs) != n_in or not _accepts(inputs, cf.in_types, False):
            return NotImplemented
        results = ir.eval_function(cf.fn, list(inputs))
        return _own_outputs(results, cf.out_types, inputs)

    def into(*arrays):
        if len(arrays) != n_in + n_out or not _accepts(arrays[:n_in], cf.in_types, False):
            return NotImplemented
        if not _accepts(arrays[n_in:], cf.out_types, True):
            return NotImplemented
        results = ir.eval_function(cf.fn, list(arrays[:n_in]))  # all computed before any output is written
        for o, r in zip(arrays[n_in:], results):
            o[...] = r
        return None

    return new, into


def _own_outputs(results, types, inputs) -> list:
    """Interpreter results as the native path returns them: fresh, writeable, C-contiguous, never shared."""
    outs, seen = [], {id(a) for a in inputs}
    for r, t in zip(results, types):
        r = np.asarray(r)
        if (
            id(r) in seen or r.base is not None or not r.flags.writeable or not r.flags.c_contiguous
            or r.dtype != t.dtype or r.shape != t.shape
        ):
            r = np.array(np.broadcast_to(r, t.shape), dtype=t.dtype, order="C")
        seen.add(id(r))
        outs.append(r)
    return outs


# The cache's functions lived here before the runtime was split into files; keep the old import
# path working, loaded when asked for (cache.py imports this module).
__getattr__, _ = _lazy.names(__package__, globals(), {
    "cache_info": ".cache", "clear_cache": ".cache", "compile_function": ".cache", "compile_function_async": ".cache",
    "interpreted": ".cache", "wait_for_compiles": ".cache",
})
