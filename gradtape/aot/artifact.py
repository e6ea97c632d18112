"""Saving an AotFunction to a file, and reading it back (loading.py makes the AotFunction).

The file is a runtime.entry_file (checksummed header, JSON meta, object
code) of kind "aot". The meta holds what a call needs besides the machine
code, none of it Python code: the kernel's symbol, arena size, external
symbols and libraries; the flat input and output types; the argument and
result structures (trees.py); the function's name and its optimized IR
text (for people). The header's `built_for` names the machine (CPU name
and features, triple, LLVM, llvmlite, code generator); load refuses a file
built for another with a message naming what differs.
"""
from __future__ import annotations

import os

import numpy as np

from ..ir import TensorType
from ..runtime import CompiledFunction, entry_file
from ..runtime.build import load_native, native_meta
from ..runtime.errors import CompileError
from . import trees
from .._version import __version__
from .errors import AotError

KIND = "aot"


def _types(types) -> list:
    return [[list(t.shape), np.dtype(t.dtype).str] for t in types]


def _untypes(data) -> tuple:
    return tuple(TensorType(tuple(shape), np.dtype(dtype)) for shape, dtype in data)


def save(fn, path) -> None:
    """See AotFunction.save."""
    compiled = fn._compiled
    if not compiled.native:
        raise AotError(f"save({fn.name}): it runs in the reference interpreter ({compiled.fallback_reason}), "
                       "so there is no machine code to save")
    try:
        in_tree = trees.encode(fn.in_tree, "arguments")
        out_tree = trees.encode(fn.out_tree, "result")
    except trees.StructureError as e:
        raise AotError(f"save({fn.name}): {e}") from None
    native = compiled._native
    meta = {
        "kind": KIND,
        "built_for": entry_file.machine(),
        "gradtape": __version__,
        "name": fn.name,
        "transform": fn.transform,
        "kernel": native_meta(native),
        "in_types": _types(fn.in_types),
        "out_types": _types(fn.out_types),
        "in_tree": in_tree,
        "out_tree": out_tree,
        "arg_names": fn.arg_names,
        "ir": fn.ir,
    }
    data = entry_file.encode(meta, native.code.object_bytes)
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)  # a reader never sees half a file


def read(path) -> tuple:
    """The parts of a saved function (see loading.load, which makes an AotFunction of them):
    (CompiledFunction, argument structure, result structure, meta).

    Raises:
        AotError, OSError: as loading.load says.
    """
    with open(path, "rb") as f:
        data = f.read()
    where = f"gradtape.load({os.fspath(path)!r})"
    try:
        meta, payload = entry_file.decode(data)
    except entry_file.BadEntry as e:
        raise AotError(f"{where}: cannot use this file: {e}. Save it again with "
                       "gradtape.compile(f, *args).save(path)") from None
    if meta.get("kind") != KIND:
        raise AotError(f"{where}: this is a gradtape {meta.get('kind')!r} file (a compile cache entry?), "
                       "not a saved compiled function")
    diff = entry_file.mismatches(meta)
    if diff:
        raise AotError(
            f"{where}: the file was built for another machine or version, and its machine code may not "
            f"run here: {'; '.join(diff)}. Compile the function again on this machine: "
            "gradtape.compile(f, *args).save(path)"
        )
    in_types, out_types = _untypes(meta["in_types"]), _untypes(meta["out_types"])
    try:
        native = load_native(in_types, out_types, meta["kernel"], payload, label=f"{meta['name']} from {path}")
    except CompileError as e:
        raise AotError(f"{where}: the machine code cannot be loaded in this process: {e}") from None
    compiled = CompiledFunction(None, native, types=(in_types, out_types))
    in_tree = trees.decode(meta["in_tree"])  # a tuple: one structure per argument
    return compiled, in_tree, trees.decode(meta["out_tree"]), meta
