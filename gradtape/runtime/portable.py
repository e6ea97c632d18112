"""Compiled code as bytes, to run in another process: saved AOT functions and pickled staged functions.

    data = pack(compiled, {"kind": "aot", "name": "loss", ...})   # entry_file bytes
    meta, payload = unpack(data)                                 # or raises entry_file.BadEntry
    why = foreign(meta)                # "" when this process may run the code, else what differs
    compiled = restore(meta, payload, fn)                        # a CompiledFunction, no compile

One format for both (runtime/entry_file.py: checksummed header, JSON meta,
object code): the meta records the machine the code was built for
(`built_for`: CPU name and features, triple, LLVM, llvmlite, code
generator), the kernel's symbol, arena size and externals, and the flat
input and output types. Code built for another machine is never loaded:
`foreign(meta)` says what differs, and the caller compiles the Function
again (a pickle carries its IR) or refuses (a saved file holds no IR).
"""
from __future__ import annotations

import numpy as np

from ..ir import TensorType
from . import entry_file
from .build import load_native, native_meta
from .compiled import CompiledFunction


def _types(types) -> list:
    return [[list(t.shape), np.dtype(t.dtype).str] for t in types]


def _untypes(data) -> tuple:
    return tuple(TensorType(tuple(shape), np.dtype(dtype)) for shape, dtype in data)


COMPLEX_REFUSAL = ("it holds complex values, and its machine code computes their real and imaginary parts "
                   "(runtime/complex_boundary.py): packing such code is not supported yet")


def pack(compiled: CompiledFunction, meta: dict) -> bytes:
    """The bytes of `compiled`'s machine code with `meta` (JSON) and what loading it needs.

    Raises:
        ValueError: `compiled` runs in the interpreter (there is no machine code), or it holds
            complex values (COMPLEX_REFUSAL).
    """
    native = compiled._native
    if native is None:
        raise ValueError(f"it runs in the reference interpreter ({compiled.fallback_reason}), so there is "
                         "no machine code to pack")
    if compiled.splits_complex:
        raise ValueError(COMPLEX_REFUSAL)
    meta = dict(meta)
    meta.update({
        "built_for": entry_file.machine(),
        "kernel": native_meta(native),
        "in_types": _types(compiled.in_types),
        "out_types": _types(compiled.out_types),
    })
    return entry_file.encode(meta, native.code.object_bytes)


def unpack(data: bytes) -> tuple:
    """(meta, payload) of `pack`'s bytes. Raises entry_file.BadEntry (corrupted, truncated, not ours)."""
    return entry_file.decode(data)


def foreign(meta: dict) -> str:
    """Why code of `meta` must not run in this process ("cpu: znver3 in the file, skylake here; ..."),
    or "" when it may."""
    return "; ".join(entry_file.mismatches(meta))


def restore(meta: dict, payload: bytes, fn=None, label: str = "") -> CompiledFunction:
    """The CompiledFunction of packed code, loaded without compiling (check `foreign(meta)` first).

    Args:
        meta, payload: from `unpack`.
        fn: the ir.Function it was compiled from, when the sender had it (kept as `compiled.fn`).
        label: names the code in error messages.

    Raises:
        CompileError: a symbol it calls cannot be resolved here, or the object lacks its kernel.
    """
    in_types, out_types = _untypes(meta["in_types"]), _untypes(meta["out_types"])
    native = load_native(in_types, out_types, meta["kernel"], payload, label=label)
    if fn is not None and (tuple(fn.in_types), tuple(fn.out_types)) == (in_types, out_types):
        return CompiledFunction(fn, native)
    return CompiledFunction(None, native, types=(in_types, out_types))
