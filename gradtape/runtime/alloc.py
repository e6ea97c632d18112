"""Large outputs of compiled calls: buffers that come back when their arrays die.

A fresh array of tens of megabytes costs more than the loop that fills it:
the operating system hands out zeroed pages, one fault each, so writing an
80 MB gradient the first time takes about as long again as the loop
(bench/parallel_elementwise.py). A loop that calls the same function again
and again frees each result before the next one is made, so the next call
can write into the memory the last result used. That is what this pool
does, and only that:

- `empty(shape, dtype)` returns an array of at least `min_bytes` whose base
  is a `_Lease`. The lease holds the buffer; every array viewing that
  memory (slices, reshapes, `np.asarray`, memoryviews) holds the lease, so
  the lease dies only when no array can reach the memory any more. Its
  finalizer then puts the buffer on the free list, and only then may
  `empty` hand the buffer out again. A buffer on the free list is
  referenced by the pool alone.
- At most `max_bytes` of free buffers are kept; past that the least
  recently freed size is released to the operating system. `release()`
  frees them all now.

Buffers are anonymous private mappings advised MADV_HUGEPAGE over their
2 MiB-aligned interior (measured 1.3x faster to stream through than 4 KiB
pages), sizes rounded up to 2 MiB so that nearby sizes share buffers.
Smaller arrays come from np.empty: malloc already reuses freed memory up to
32 MiB, and the pool's Python-level cost (a few microseconds) would show.

Settings (environment at import, or `configure`):
- `min_bytes` (GRADTAPE_POOL_MIN_BYTES, default 4 MiB): smaller arrays are
  plain np.empty.
- `max_bytes` (GRADTAPE_POOL_MAX_BYTES, default 256 MiB): free bytes kept;
  0 turns the pool off.

The arrays are ordinary C-contiguous, writeable ndarrays; only `.base` (a
lease) and `flags.owndata` (False) tell them apart, so `ndarray.resize`
refuses them as it refuses any view.
"""
from __future__ import annotations

import errno
import mmap
import os
import threading

import numpy as np

from . import config

HUGE_PAGE = 2 << 20
POOL_FLOOR = 1 << 20  # min_bytes is never lower: compiled entries check outputs against it once, when made


min_bytes = max(POOL_FLOOR, config.env_int("GRADTAPE_POOL_MIN_BYTES", 4 << 20))
max_bytes = max(0, config.env_int("GRADTAPE_POOL_MAX_BYTES", 256 << 20))

_lock = threading.Lock()
_free: dict = {}  # buffer size -> [(buffer, address)], sizes in the order they were last freed
_counts = {"reused": 0, "fresh": 0, "free_bytes": 0}


def _give_back(buffer: np.ndarray, address: int):
    # Finalizers run wherever the last reference drops, also inside this module's own locked code (a
    # garbage collection there): never wait for the lock. A buffer not kept is simply freed.
    if not _lock.acquire(blocking=False):
        return
    try:
        size = buffer.nbytes
        if size > max_bytes:
            return
        _make_room(max_bytes - size)
        _free.setdefault(size, []).append((buffer, address))
        _free[size] = _free.pop(size)  # the most recently freed size goes last
        _counts["free_bytes"] += size
    finally:
        _lock.release()


class _Lease:
    """The base of every array `empty` made from one buffer: its death frees the buffer for reuse.

    NumPy makes an array of it through `__array_interface__` and keeps it as
    the array's base (so do the array's views); it is never handed out itself.
    """

    __slots__ = ("buffer", "address", "__array_interface__")

    def __init__(self, buffer: np.ndarray, address: int, shape: tuple, dtype: np.dtype):
        self.buffer, self.address = buffer, address
        self.__array_interface__ = {"data": (address, False), "shape": shape, "typestr": dtype.str, "version": 3}

    def __del__(self, _give_back=_give_back):  # bound now: at exit, module globals may be gone
        try:
            _give_back(self.buffer, self.address)
        except (AttributeError, TypeError):  # interpreter shutdown cleared what it needs: the buffer is freed
            pass


def _make_room(limit: int):
    """Drop free buffers, least recently freed sizes first, until at most `limit` bytes are kept (lock held)."""
    while _counts["free_bytes"] > limit and _free:
        size = next(iter(_free))
        stack = _free[size]
        stack.pop(0)
        _counts["free_bytes"] -= size
        if not stack:
            del _free[size]


def _take(size: int):
    with _lock:
        stack = _free.get(size)
        if not stack:
            _counts["fresh"] += 1
            return None
        found = stack.pop()
        if not stack:
            del _free[size]
        _counts["free_bytes"] -= size
        _counts["reused"] += 1
        return found


def _fresh(size: int):
    """A new buffer of `size` bytes (a multiple of HUGE_PAGE) and its address, backed by huge pages where
    the kernel allows (transparent huge pages in `madvise` or `always` mode)."""
    if not hasattr(mmap, "MADV_HUGEPAGE"):
        raw = np.empty(size + HUGE_PAGE, np.uint8)
        start = (-raw.ctypes.data) % HUGE_PAGE
        buffer = raw[start : start + size]
        return buffer, buffer.ctypes.data
    # Private and anonymous: Python's default for fileno -1 is a shared mapping, which THP ignores.
    region = mmap.mmap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw = np.frombuffer(region, np.uint8)  # holds the mapping open while any array can reach it
    start = (-raw.ctypes.data) % HUGE_PAGE
    region.madvise(mmap.MADV_HUGEPAGE, start, size)
    buffer = raw[start : start + size]
    return buffer, buffer.ctypes.data


def empty(shape: tuple, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array, from the pool when it is large (see the module docstring).

    Args:
        shape: a tuple of ints.
        dtype: a NumPy dtype (or what np.dtype accepts) of a plain numeric type.

    Returns:
        A writeable C-contiguous ndarray; at `min_bytes` or more (and the pool
        on) its memory may be that of an array freed earlier.

    Example:
        >>> g = empty((10_000_000,), np.float64)
        >>> del g                                # its buffer goes back to the pool
        >>> h = empty((10_000_000,), np.float64) # and comes out again
    """
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    if nbytes < min_bytes or max_bytes == 0 or dtype.fields is not None or dtype.hasobject:
        return np.empty(shape, dtype)
    size = -(-nbytes // HUGE_PAGE) * HUGE_PAGE
    buffer, address = _take(size) or _mapped(size, nbytes, shape, dtype)
    return np.asarray(_Lease(buffer, address, tuple(shape), dtype))


def _mapped(size: int, nbytes: int, shape, dtype):
    """_fresh(size), or MemoryError as np.empty raises it (mmap says OSError ENOMEM, which callers of a
    compiled function would not catch as running out of memory)."""
    for attempt in range(2):
        try:
            return _fresh(size)
        except MemoryError:
            pass
        except OSError as e:
            if e.errno != errno.ENOMEM:
                raise
        if attempt == 0:
            release()  # the free buffers kept for reuse may be what stands in the way
    raise MemoryError(f"Unable to allocate {_size_text(nbytes)} for an array with shape {tuple(shape)} and "
                      f"data type {dtype}")


def _size_text(nbytes: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes} bytes" if unit == "bytes" else f"{nbytes:.3g} {unit}"
        nbytes /= 1024


def release():
    """Free every buffer the pool keeps (arrays still alive keep theirs and return them later)."""
    with _lock:
        _make_room(0)


def stats() -> dict:
    """`{"reused": int, "fresh": int, "free_bytes": int, "free_buffers": int}`: calls of `empty` served from
    the pool and from new memory (since import), and what the pool keeps now."""
    with _lock:
        return dict(_counts, free_buffers=sum(len(s) for s in _free.values()))


def configure(min_bytes: int | None = ..., max_bytes: int | None = ...):
    """Change the pool's settings for every later call.

    Args:
        min_bytes: arrays smaller than this come from np.empty (at least
            1 MiB); None for the default (4 MiB).
        max_bytes: free bytes the pool may keep; 0 turns it off (and frees
            what it keeps); None for the default (256 MiB).

    Raises:
        ValueError: a setting that is not a non-negative int.

    Example:
        >>> from gradtape.runtime import alloc
        >>> alloc.configure(max_bytes=0)      # every large output is fresh memory
        >>> alloc.configure(max_bytes=None)   # back to the default
    """
    g = globals()  # the parameters are named like the module's settings they set
    for name, value, default in (("min_bytes", min_bytes, 4 << 20), ("max_bytes", max_bytes, 256 << 20)):
        if value is ...:
            continue
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ValueError(f"alloc.configure: {name} must be a non-negative int (or None for the default), "
                             f"got {value!r}")
        g[name] = default if value is None else value
    g["min_bytes"] = max(POOL_FLOOR, g["min_bytes"])
    with _lock:
        _make_room(g["max_bytes"])


def _after_fork_in_child():
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
