"""Failures generated code reports instead of ending the process: recorded by a callback for the
calling thread, raised by the runtime when the call returns (runtime/compiled.py).

Native code cannot raise a Python exception, and must not abort: a
process that set a memory limit, or a server computing many gradients,
must survive one call that cannot finish. So where a run-time condition
makes a result impossible, the generated code calls a ctypes callback
(an external symbol, resolved like BLAS's), leaves the loop it is in and
runs to its end on the values it has; the runtime then raises what the
callback recorded, so those values are never returned. The failures:

- LAPACK's `info` (a singular matrix, ...): codegen/lapack.py, raised as
  np.linalg.LinAlgError;
- a stack that cannot grow (reverse mode through while_loop,
  codegen/control_stack.py): `gradtape_out_of_memory`, raised as MemoryError.

Only the first failure of a call is kept: it caused the others.
"""
from __future__ import annotations

import ctypes
import functools
import threading

import llvmlite.ir as ir

from ..ir.ops.while_vjp import out_of_memory as _while_loop_out_of_memory
from .dtypes import I8, I64

OUT_OF_MEMORY_SYMBOL = "gradtape_out_of_memory"
LINALG_SYMBOL = "gradtape_linalg_failed"  # lapack.py's callback
# (the construct's name, iterations stored, bytes each, bytes asked for when the stack could not grow)
_OUT_OF_MEMORY_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)

_pending = threading.local()
# The MemoryError of each construct, given (iterations, bytes held, bytes asked): the native report's text
# names the construct, and travels in object code that another process may load.
_OUT_OF_MEMORY = {"while_loop": _while_loop_out_of_memory}


def reports_failures(symbols) -> bool:
    """Whether code calling these externals may record a failure (its caller must then raise_pending)."""
    return OUT_OF_MEMORY_SYMBOL in symbols or LINALG_SYMBOL in symbols


def record(make_exception):
    """Keep `make_exception` (() -> an exception) as this thread's failure, unless one is pending."""
    if getattr(_pending, "failure", None) is None:
        _pending.failure = make_exception


def clear():
    _pending.failure = None


def raise_pending():
    """Raise the failure generated code recorded on this thread during its last call, if any."""
    make_exception = getattr(_pending, "failure", None)
    if make_exception is None:
        return
    _pending.failure = None
    raise make_exception()


def _record_out_of_memory(what, steps, frame, asked):
    # Called from native code that has already freed its stack: the memory for this record is there.
    make = _OUT_OF_MEMORY[what.decode()]
    record(functools.partial(make, int(steps), int(steps) * int(frame), int(asked)))


_oom_callback = _OUT_OF_MEMORY_TYPE(_record_out_of_memory)


def symbol_address(symbol: str) -> int | None:
    """The address of a failure callback named `symbol`, or None."""
    if symbol == OUT_OF_MEMORY_SYMBOL:
        return ctypes.cast(_oom_callback, ctypes.c_void_p).value
    return None


def out_of_memory_external() -> tuple:
    """(symbol, address) of the out-of-memory callback, for ctx.use_external."""
    return OUT_OF_MEMORY_SYMBOL, symbol_address(OUT_OF_MEMORY_SYMBOL)


def emit_out_of_memory(k, what: str, steps, frame: int, asked):
    """Emit the report that a stack holding `steps` (an i64) frames of `frame` bytes could not grow to
    `asked` bytes (an i64).

    `what` names the construct, a key of _OUT_OF_MEMORY ("while_loop"). The lowering must have
    named the callback: `ctx.use_external(*out_of_memory_external())`.
    """
    fn = _declare(k.module, OUT_OF_MEMORY_SYMBOL, ir.VoidType(), [I8.as_pointer(), I64, I64, I64])
    text = global_string(k.module, "gradtape_failure_", what)
    k.b.call(fn, [k.b.bitcast(text, I8.as_pointer()), steps, k.i64(frame), asked])


def _declare(module, name, ret, args):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return fn


def global_string(module: ir.Module, prefix: str, text: str) -> ir.GlobalVariable:
    """A NUL-terminated constant string in `module`, defined once per text (LAPACK's messages use it too)."""
    data = bytearray(text.encode() + b"\0")
    name = prefix + "".join(c if c.isalnum() else "_" for c in text)
    try:
        return module.get_global(name)
    except KeyError:
        g = ir.GlobalVariable(module, ir.ArrayType(I8, len(data)), name)
        g.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        g.global_constant = True
        g.linkage = "internal"
        return g
