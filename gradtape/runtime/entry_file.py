"""The file format of stored machine code: disk cache entries and saved AOT functions.

    data = encode(meta, payload)           # bytes to write
    meta, payload = decode(data)           # or raises BadEntry saying what is wrong

Layout (little-endian):

    offset  size  field
    0       8     magic  b"GRADTAPE"
    8       4     format version (FORMAT_VERSION)
    12      4     length of `meta` in bytes
    16      8     length of `payload` in bytes
    24      32    BLAKE2b-256 of meta followed by payload
    56      ...   meta: UTF-8 JSON object (kind, key, the machine it was built for, ...)
    ...     ...   payload: the object file

A file whose lengths, digest or JSON do not check out is refused before
anything in it is used: machine code from a truncated or corrupted file is
never loaded. Whether a well-formed file suits this process (same CPU,
LLVM, code generator) is `mismatches(meta)`.
"""
from __future__ import annotations

import hashlib
import json
import struct

from .. import codegen
from . import target

MAGIC = b"GRADTAPE"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sIIQ32s")


class BadEntry(ValueError):
    """A stored file that cannot be used; the message says why."""


def _digest(meta: bytes, payload: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=32)
    h.update(meta)
    h.update(payload)
    return h.digest()


def encode(meta: dict, payload: bytes) -> bytes:
    """The bytes of a file holding `meta` (JSON-serializable) and `payload`."""
    meta_bytes = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, len(meta_bytes), len(payload), _digest(meta_bytes, payload))
    return header + meta_bytes + payload


def decode(data: bytes) -> tuple:
    """(meta, payload) of a file made by `encode`.

    Raises:
        BadEntry: not a gradtape file, another format version, truncated,
            or its digest does not match (corrupted).
    """
    if len(data) < _HEADER.size:
        raise BadEntry(f"truncated: {len(data)} bytes, shorter than the {_HEADER.size}-byte header")
    magic, version, meta_len, payload_len, digest = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise BadEntry(f"not a gradtape file (starts with {magic!r}, expected {MAGIC!r})")
    if version != FORMAT_VERSION:
        raise BadEntry(f"file format version {version}; this gradtape reads version {FORMAT_VERSION}")
    expected = _HEADER.size + meta_len + payload_len
    if len(data) != expected:
        raise BadEntry(f"truncated or padded: {len(data)} bytes, the header announces {expected}")
    meta_bytes = bytes(data[_HEADER.size : _HEADER.size + meta_len])
    payload = bytes(data[_HEADER.size + meta_len :])
    if _digest(meta_bytes, payload) != digest:
        raise BadEntry("corrupted: its checksum does not match its contents")
    try:
        meta = json.loads(meta_bytes)
    except ValueError as e:
        raise BadEntry(f"unreadable metadata: {e}") from None
    if not isinstance(meta, dict):
        raise BadEntry("unreadable metadata: not a JSON object")
    return meta, payload


def machine() -> dict:
    """What code built in this process is specialized to: target.identity() plus the code
    generator's version. Stored in every file's meta as `built_for`."""
    ident = dict(target.identity())
    ident["codegen"] = codegen.CODEGEN_VERSION
    return ident


def mismatches(meta: dict) -> list:
    """How the machine a file was built for differs from this process, as
    "cpu: znver3 in the file, skylake here" strings (empty: it suits)."""
    built_for = meta.get("built_for")
    if not isinstance(built_for, dict):
        return ["built_for: missing from the file"]
    here = machine()
    out = []
    for field in ("cpu", "features", "triple", "llvm", "llvmlite", "codegen"):
        theirs, ours = built_for.get(field), here[field]
        if theirs != ours:
            if field == "features":
                out.append(f"features: {_feature_diff(str(theirs), ours)}")
            else:
                out.append(f"{field}: {theirs} in the file, {ours} here")
    return out


def _feature_diff(theirs: str, ours: str) -> str:
    a, b = set(theirs.split(",")), set(ours.split(","))
    only_file, only_here = sorted(a - b)[:6], sorted(b - a)[:6]
    return f"the file has {','.join(only_file) or 'nothing more'}, this CPU has {','.join(only_here) or 'nothing more'}"
