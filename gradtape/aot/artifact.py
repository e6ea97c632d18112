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

from ..runtime import entry_file, portable
from ..runtime.errors import CompileError
from . import trees
from .._version import __version__
from .errors import AotError

KIND = "aot"


def to_bytes(fn) -> bytes:
    """The file's bytes for AotFunction `fn` (see AotFunction.save; a pickle carries them too).

    Raises:
        AotError: as AotFunction.save says.
    """
    compiled = fn._compiled
    if not compiled.native:
        raise AotError(f"save({fn.name}): it runs in the reference interpreter ({compiled.fallback_reason}), "
                       "so there is no machine code to save")
    if compiled.splits_complex:
        raise AotError(f"save({fn.name}): {portable.COMPLEX_REFUSAL}")
    try:
        in_tree = trees.encode(fn.in_tree, "arguments")
        out_tree = trees.encode(fn.out_tree, "result")
    except trees.StructureError as e:
        raise AotError(f"save({fn.name}): {e}") from None
    meta = {
        "kind": KIND,
        "gradtape": __version__,
        "name": fn.name,
        "transform": fn.transform,
        "in_tree": in_tree,
        "out_tree": out_tree,
        "arg_names": fn.arg_names,
        "ir": fn.ir,
    }
    return portable.pack(compiled, meta)


def save(fn, path) -> None:
    """See AotFunction.save."""
    data = to_bytes(fn)
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
    meta, payload = decode(data, f"gradtape.load({os.fspath(path)!r})")
    diff = portable.foreign(meta)
    if diff:
        raise AotError(
            f"gradtape.load({os.fspath(path)!r}): the file was built for another machine or version, and its "
            f"machine code may not run here: {diff}. Compile the function again on this machine: "
            "gradtape.compile(f, *args).save(path)"
        )
    return restore(meta, payload, f"gradtape.load({os.fspath(path)!r})", f"{meta['name']} from {path}")


def decode(data: bytes, where: str) -> tuple:
    """(meta, payload) of an AOT file's bytes. Raises AotError naming `where` when they are not one."""
    try:
        meta, payload = portable.unpack(data)
    except entry_file.BadEntry as e:
        raise AotError(f"{where}: cannot use this file: {e}. Save it again with "
                       "gradtape.compile(f, *args).save(path)") from None
    if meta.get("kind") != KIND:
        raise AotError(f"{where}: this is a gradtape {meta.get('kind')!r} file (a compile cache entry?), "
                       "not a saved compiled function")
    return meta, payload


def restore(meta: dict, payload: bytes, where: str, label: str, fn=None) -> tuple:
    """(CompiledFunction, argument structure, result structure, meta) of code that suits this machine."""
    try:
        compiled = portable.restore(meta, payload, fn, label=label)
    except CompileError as e:
        raise AotError(f"{where}: the machine code cannot be loaded in this process: {e}") from None
    in_tree = trees.decode(meta["in_tree"])  # a tuple: one structure per argument
    return compiled, in_tree, trees.decode(meta["out_tree"]), meta
