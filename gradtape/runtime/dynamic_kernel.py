"""Native code compiled once for every size of a dimension, and bound to one size per call signature.

    kernel = DynamicKernel(fn)                 # fn: shapes with SymSize dims (codegen/dynamic.py)
    run = kernel.bind(n, in_types, out_types, extras)
    outputs = run(*inputs)                     # as a CompiledFunction of that size

Binding compiles nothing: it plans the arena for N = n, fills the sizes
vector, and makes the same fast entry points (fastcall.py) a specialized
kernel has, for the concrete types at n, around the one kernel.

Like a specialized kernel, its object code goes to the disk cache and a new
process loads it instead of compiling, and the runtime's cache_info()
counts it (a compile or a disk load). Its symbol is named by its disk key,
so that the lowered module, hence the object code, is the same in every
process.
"""
from __future__ import annotations

import time

import numpy as np

from .. import ir
from ..codegen.dynamic import lower_dynamic
from . import build, cache, cache_key, config, disk_cache, jit
from .compiled import CompiledFunction

_I64 = np.dtype(np.int64)


class DynamicKernel:
    """The machine code of one dynamic Function.

    Attributes:
      compile_seconds, compile_stages: what building it took.

    Raises (constructor):
      codegen.Unsupported (DynamicUnsupported among them): no dynamic code for
      this Function; CompileError: LLVM failed.
    """

    def __init__(self, fn, label: str = ""):
        timings: dict = {}
        t = time.perf_counter()
        key = _disk_key(fn)
        self.name = f"gt_dynamic_{key[:20]}" if key else build._next_name()
        lowered = lower_dynamic(fn, self.name)
        timings["lower"] = time.perf_counter() - t
        self.plan = lowered.arena_plan
        self.externals, self.libraries = dict(lowered.externals), tuple(lowered.libraries)
        self.code = self._load(key, timings, label) if key else None
        self.loaded_from_disk = self.code is not None
        if self.code is None:
            self.code = jit.jit_compile(str(lowered.module), self.externals, self.libraries, timings,
                                        label or self.name)
            if key:
                disk_cache.write(key, {"kind": "dynamic", "name": self.name}, self.code.object_bytes)
        self.address = self.code.address(self.name)
        self.compile_stages = timings
        self.compile_seconds = time.perf_counter() - t
        cache.count_build(self.loaded_from_disk, self.compile_seconds)

    def _load(self, key: str, timings: dict, label: str):
        """The object code stored under `key`, loaded, or None (a miss, or an entry unusable here)."""
        entry = disk_cache.read(key, "dynamic")
        if entry is None:
            return None
        meta, obj = entry
        if meta.get("name") != self.name:
            disk_cache.reject(key, f"it defines {meta.get('name')!r}, not {self.name!r}")
            return None
        try:
            return jit.load_object(obj, self.externals, self.libraries, timings, label or self.name)
        except Exception as e:  # CompileError (a symbol this process lacks), a corrupt object: compile
            disk_cache.reject(key, f"cannot be loaded: {type(e).__name__}: {e}")
            return None

    def bind(self, n: int, in_types, out_types, extras) -> "SizedCall":
        """The kernel as a callable for size n: inputs of `in_types`, outputs of `out_types`;
        `extras` (arrays) are passed after the inputs, then the sizes vector."""
        offsets, total = self.plan.layout(n)
        sizes = np.array([n, *offsets], dtype=_I64)
        sizes.flags.writeable = False
        extras = [*extras, sizes]
        kernel_in = [*in_types, *(ir.type_of(e) for e in extras)]
        native = build.NativeFunction(self.code, self.name, self.address, total, dict(self.compile_stages),
                                      sorted(self.externals), self.libraries)
        build._bind_entries(native, kernel_in, out_types)
        return SizedCall(CompiledFunction(None, native, types=(kernel_in, out_types)), extras, n)


def _disk_key(fn) -> str | None:
    """The disk cache key of dynamic Function `fn`, or None (no disk cache, dumps on, an opaque param)."""
    if config.dump or not disk_cache.enabled():
        return None
    version, text, extras = cache_key.cache_key(fn)
    if any(e[0] == "id" for e in extras):
        return None
    return cache_key.digest("dynamic", text, repr(extras), f"codegen={version}")


class SizedCall:
    """A dynamic kernel bound to one size: called like a CompiledFunction (a list of outputs).

    Attributes:
      n: the run-time size; native: True; dynamic: True.
    """

    native = True
    dynamic = True
    loaded_from_disk = False
    compile_seconds = 0.0
    fallback_reason = None

    def __init__(self, compiled: CompiledFunction, extras, n: int):
        self._compiled = compiled
        self._extras = tuple(extras)
        self.n = n
        self.in_types = compiled.in_types[:len(compiled.in_types) - len(self._extras)]
        self.out_types = compiled.out_types
        self.call_path = compiled.call_path
        self.fn = None
        new, extras = compiled.entry, self._extras

        def entry(*inputs):
            return new(*inputs, *extras)

        self.entry = entry

    def __call__(self, *inputs):
        result = self.entry(*inputs)
        if result is NotImplemented:
            result = self._compiled(*inputs, *self._extras)  # converts, or raises naming the argument
        return result

    def __repr__(self):
        return f"<SizedCall N={self.n} {self._compiled!r}>"
