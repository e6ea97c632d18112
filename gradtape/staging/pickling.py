"""Pickling a staged function: its Python function by reference, its compiled signatures by value.

    data = pickle.dumps(gradtape.grad(loss))     # after some calls: their signatures travel compiled
    g = pickle.loads(data)                       # in a worker: g(w, x) neither traces nor compiles

What travels for each cached signature is what running it needs: its
optimized IR, the structure of its result and, when it was compiled to
native code, the machine code in the format saved AOT functions use
(runtime/portable.py). The receiver loads that code only when it was built
for a machine like its own (CPU name and features, LLVM, code generator);
otherwise it compiles the IR again at the first call, and never traces.

The Python function travels as pickle sends functions: by module and name.
One defined with `@gradtape.differentiable` at module level is found under
its name as the staged function, so the reference names the staged
function and the receiver takes the Python function out of it.
"""
from __future__ import annotations

import importlib
import logging
import pickle
import sys
import types

from .. import runtime  # runtime.portable (the compiler) loads when something is pickled
from .program import Program

_log = logging.getLogger("gradtape")


def function_reference(fun):
    """What to pickle for `fun`: itself, or a _Wrapped reference when the name it is defined
    under now holds a wrapper of it (a decorator such as gradtape.differentiable).

    Raises:
        pickle.PicklingError: `fun` is a lambda or a function defined inside another, which
            pickle cannot send by name (the message says what to do).
    """
    if not isinstance(fun, types.FunctionType):
        return fun
    qualname, module = fun.__qualname__, fun.__module__
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise pickle.PicklingError(
            f"cannot pickle a staged function of {qualname}: pickle sends Python functions by module and "
            "name, and a lambda or a function defined inside another has none. Define it at the top level "
            "of a module, or compile it ahead of time (gradtape.compile(f, *args) pickles without it)")
    found = _lookup(sys.modules.get(module), qualname)
    if found is fun or found is None:
        return fun
    if _unwrap(found, fun) is fun:
        return _Wrapped(module, qualname)
    return fun


class _Wrapped:
    """A module-level name whose object wraps the function to send (pickled by that name)."""

    def __init__(self, module: str, qualname: str):
        self.module, self.qualname = module, qualname

    def __reduce__(self):
        return (_resolve_wrapped, (self.module, self.qualname))


def _resolve_wrapped(module: str, qualname: str):
    found = _lookup(importlib.import_module(module), qualname)
    fun = _unwrap(found, None)
    if not isinstance(fun, types.FunctionType):
        raise pickle.UnpicklingError(f"unpickling a staged function: {module}.{qualname} is no longer a "
                                     "wrapped Python function")
    return fun


def _lookup(module, qualname: str):
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _unwrap(obj, target):
    """Follow `_fun` / `__wrapped__` from `obj` down to `target` (or to a plain function when
    target is None); None when the chain does not reach it."""
    for _ in range(16):  # wrappers of wrappers, never a cycle
        if obj is target or (target is None and isinstance(obj, types.FunctionType)):
            return obj
        obj = getattr(obj, "_fun", None) or getattr(obj, "__wrapped__", None)
        if obj is None:
            return None
    return None


def export_programs(staged) -> list:
    """(signature parts, result structure, IR, packed machine code or None) per cached signature
    of `staged` that a receiver can run (not one that returns a function to call later)."""
    out = []
    for key, program in staged.programs():
        if program.later is not None or program.captured:
            continue
        out.append((key,) + pack_program(program, staged._fname))
    return out


def pack_program(program, name: str) -> tuple:
    """(result structure, IR, packed machine code or None): what `unpack_program` rebuilds
    `program` from in another process."""
    compiled = program.compiled
    code = None
    # A dynamic version's sizes travel as IR: its code is bound to this process's kernel.
    # So does a complex one's (runtime/portable.py does not pack the code of its real form).
    if (compiled is not None and compiled.native and not getattr(compiled, "dynamic", False)
            and not getattr(compiled, "splits_complex", False)):
        code = runtime.portable.pack(compiled, {"kind": "staged", "name": name})
    skeleton = program.assemble([None] * len(program.fn.outvars))
    return skeleton, program.fn, code


def unpack_program(skeleton, fn, code, name: str) -> Program:
    """The Program `pack_program` sent: with its machine code when that suits this machine,
    else with its IR alone, compiled at the first call (never traced again)."""
    program = Program(fn, skeleton)
    if code is not None:
        meta, payload = runtime.portable.unpack(code)
        why = runtime.portable.foreign(meta)
        if why:
            _log.info("unpickled %s: compiling again from its IR, the machine code was built for "
                      "another machine (%s)", name, why)
        else:
            program.compiled = runtime.portable.restore(meta, payload, fn, label=f"{name} (unpickled)")
    return program


def rebuild(cls, fun, transform, static_argnums, programs, dynamic=None):
    """The staged function `cls(fun, transform, static_argnums, dynamic=dynamic)` holding the sent
    signatures: their machine code when it suits this machine, else their IR (compiled at the first call)."""
    staged = cls(fun, transform, static_argnums, dynamic=dynamic)
    adopt_programs(staged, programs)
    return staged


def adopt_programs(staged, programs):
    """Give `staged` the signatures `export_programs` sent."""
    for parts, skeleton, fn, code in programs:
        staged.adopt(parts, unpack_program(skeleton, fn, code, staged._fname))
