"""The compile cache's key for a Function.

The canonical text (`str(fn)`) names every op, type and scalar literal, but
prints an array literal only as its type (`const<f64[3]>`) and a Python
callback param (custom_gradient's) only by its name. Two Functions that
differ only there must not share compiled code, so the key adds a digest of
every array literal's bytes and the identity of every opaque param, in
order of appearance (sub-Functions of `call` included). The code
generator's version is part of the key, so a new code generator never
reuses old code.

`disk_key(fn)` names the Function's entry in the disk cache: a hash of the
same key plus everything else that shapes the machine code (the CPU name
and features, LLVM and llvmlite versions, the optimization settings, the
disk format, and a fingerprint of the code generator's source files: their
sizes and modification times, so that editing the code generator, or
installing another copy of gradtape, never loads code the old one made
even when CODEGEN_VERSION was not bumped). Opaque params (Python callbacks)
have no meaning in another process, so a Function holding one has no disk
key.
"""
from __future__ import annotations

import functools
import hashlib
import os

import numpy as np

from .. import codegen
from ..ir import Function, Literal
from . import config, entry_file


def _extras(fn: Function, out: list):
    for eqn in fn.eqns:
        for a in eqn.inputs:
            if type(a) is Literal and a.value.ndim:
                out.append(_digest(a.value))
        for k in sorted(eqn.params):
            _param_extras(eqn.params[k], out)
    for a in fn.outvars:
        if type(a) is Literal and a.value.ndim:
            out.append(_digest(a.value))


def _param_extras(value, out: list):
    if isinstance(value, Function):
        _extras(value, out)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _param_extras(v, out)
    elif isinstance(value, np.ndarray):
        out.append(_digest(value))
    elif callable(value) and not isinstance(value, (type, np.dtype)):
        out.append(("id", id(value)))  # the cache entry keeps fn, hence value, alive


def _digest(value: np.ndarray):
    data = np.ascontiguousarray(value)
    return (data.dtype.str, data.shape, hashlib.blake2b(data.tobytes(), digest_size=16).digest())


def cache_key(fn: Function) -> tuple:
    """(codegen version, canonical text, literal digests and opaque param identities)."""
    extras: list = []
    _extras(fn, extras)
    return (codegen.CODEGEN_VERSION, str(fn), tuple(extras))


def disk_key(fn: Function, key: tuple | None = None) -> str | None:
    """The hex name of `fn`'s disk cache entry, or None when `fn` holds an opaque param.

    Args:
        fn: the Function.
        key: cache_key(fn), when the caller has it already.
    """
    key = cache_key(fn) if key is None else key
    version, text, extras = key
    if any(e[0] == "id" for e in extras):
        return None
    return digest("kernel", text, repr(extras), f"codegen={version}")


def digest(kind: str, *parts: str) -> str:
    """A hex key for `parts` built on this machine with the current settings (32 hex digits)."""
    h = hashlib.blake2b(digest_size=16)
    settings = (
        kind, entry_file.FORMAT_VERSION, sorted(entry_file.machine().items()),
        config.opt_level, bool(config.loop_unrolling), source_fingerprint(),
    )
    for part in (repr(settings),) + parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def source_fingerprint() -> str:
    """A hash of the name, size and modification time of every file that turns IR into machine
    code (gradtape/codegen/*.py, and this package's jit.py and target.py); read once per process."""
    here = os.path.dirname(os.path.abspath(__file__))
    files = [os.path.join(os.path.dirname(codegen.__file__), n) for n in os.listdir(os.path.dirname(codegen.__file__))]
    files += [os.path.join(here, n) for n in ("jit.py", "target.py")]
    h = hashlib.blake2b(digest_size=8)
    for path in sorted(f for f in files if f.endswith(".py")):
        try:
            st = os.stat(path)
        except OSError:
            continue
        h.update(f"{os.path.basename(path)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()
