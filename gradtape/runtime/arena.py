"""Scratch arenas for compiled kernels.

A kernel keeps its intermediates in an arena (gradtape.codegen's contract:
`args[n+m]`, 64-byte aligned, never shared by two running calls). Two kinds:

- A kernel that holds the GIL while it runs (the default below
  config.release_gil_bytes) owns one arena, made once by `aligned_empty`
  when it is compiled: the GIL lets one thread at a time run it.
- A kernel that releases the GIL, and every kernel called through ctypes
  (which releases it too), uses the calling thread's arena,
  `thread_arena(n)`: one per thread, grown to the largest any kernel has
  needed and reused by every call after, so threads calling the same
  kernel at once never share scratch memory.

Either way a call allocates nothing for intermediates.
"""
from __future__ import annotations

import threading

import numpy as np

ALIGNMENT = 64
_PAGE = 4096


def aligned_empty(nbytes: int, alignment: int = ALIGNMENT) -> np.ndarray:
    """A C-contiguous uint8 array of `nbytes` whose data starts at a multiple of `alignment`.

    Raises:
        MemoryError: naming the scratch arena and its size (NumPy's own would name a uint8 array).
    """
    try:
        raw = np.empty(nbytes + alignment, dtype=np.uint8)
    except MemoryError:
        raise MemoryError(f"compiled code: unable to allocate its scratch arena of {nbytes:,} bytes (the "
                          "intermediates of one call); call it on smaller arrays, or in smaller pieces") from None
    offset = (-raw.ctypes.data) % alignment
    return raw[offset : offset + nbytes]


# Kernels that need no scratch still receive an array (the wrapper reads a pointer from it).
EMPTY = aligned_empty(ALIGNMENT)


class _ThreadArena(threading.local):
    buffer = EMPTY  # class attribute: the default in every thread until it grows


_local = _ThreadArena()


def thread_arena(nbytes: int) -> np.ndarray:
    """This thread's arena, at least `nbytes` long (grown, never shrunk).

    The contents are garbage: kernels own it only for the duration of a call.
    """
    buf = _local.buffer
    # EMPTY is every thread's default and so shared: a kernel needing any scratch gets its own buffer.
    if buf.size < nbytes or (nbytes and buf is EMPTY):
        size = max(nbytes, 2 * buf.size)
        _local.buffer = buf = EMPTY  # the old buffer is freed before a new one is asked for
        try:
            buf = aligned_empty(_pages(size))
        except MemoryError:
            if size == nbytes:
                raise
            buf = aligned_empty(_pages(nbytes))  # doubling was too much: exactly what is needed may fit
        _local.buffer = buf
    return buf


def _pages(nbytes: int) -> int:
    return (nbytes + _PAGE - 1) // _PAGE * _PAGE
