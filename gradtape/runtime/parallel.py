"""Both cores for large fused loops: the pool's threads and their settings.

Code generation splits every large elementwise loop and reduction into
units (codegen/parallel.py) and calls the pool (parallel_pool.py) with
them. This module builds the pool once per process, when the first kernel
that needs it is lowered or loaded, starts its worker threads and holds
the two settings:

- `threads` (GRADTAPE_THREADS, default: the CPUs this process may run on,
  len(os.sched_getaffinity(0))): threads that run one loop, the caller
  included; 1 runs every loop on the caller alone. It is the budget of
  contractions too: their units run on the pool with OpenBLAS on one
  thread (codegen/parallel_blas.py, blas_serial.py).
- `min_elements` (GRADTAPE_PARALLEL_MIN_ELEMENTS, default 65536): a loop
  over fewer elements runs on the caller alone (waking a worker costs a
  few microseconds; bench/parallel_elementwise.py measures where it pays).

Results never depend on either: an elementwise loop writes each element
once, whoever computes it, and a reduction over more than 2 *
codegen.parallel.UNIT_ELEMENTS elements always adds its fixed units'
partial results in unit order, with one thread or eight.

    >>> from gradtape.runtime import parallel
    >>> parallel.configure(threads=1)          # one thread from now on
    >>> parallel.configure(threads=None)       # back to the default (every available CPU)

The workers are native threads that never take the GIL; they spin for a
few tens of microseconds after a loop, then sleep in the kernel. They are
stopped at interpreter exit, and a child made by fork() starts its own.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import signal
import threading

from .. import codegen
from . import cache_key, config, disk_cache, jit
from .errors import CompileError
from ..codegen import blas
from ..codegen.parallel import POOL_SYMBOLS
from . import blas_serial, parallel_pool
from .parallel_pool import PARALLEL_FOR, SENTINEL, STATE, WORKER, WORKER_UNITS, build_pool_module, global_name

from .config import MAX_THREADS, available_cpus, check_threads as _check_threads

SPIN_CYCLES = 100_000  # about 40 µs at 2.5 GHz: one kernel's next loop usually starts sooner

# The environment's settings, read (and a bad one refused) by config.py at `import gradtape`.
threads = config.threads
min_elements = config.parallel_min_elements

_lock = threading.Lock()
_pool = None  # the _Pool, once built


class _Pool:
    """The compiled pool, its worker threads and its settings words."""

    def __init__(self):
        self.code = _pool_code()
        self.addresses = {symbol: self.code.address(symbol) for symbol in POOL_SYMBOLS}
        self.address = self.addresses[PARALLEL_FOR]
        self.worker = self.code.address(WORKER)
        self.words = {}
        for name in ("workers", "min_elements", "spin_cycles", WORKER_UNITS, *STATE, *blas_serial.WORDS):
            ctype = ctypes.c_int32 if name in ("busy", "sleepers", "seq", "stop") else ctypes.c_int64
            self.words[name] = ctype.from_address(self.code.engine.get_global_value_address(global_name(name)))
        self.words["spin_cycles"].value = SPIN_CYCLES
        # OpenBLAS's thread count functions, for the bracket around BLAS steps (blas_serial.py).
        self.words["blas_get"].value, self.words["blas_set"].value = blas.thread_count_functions() or (0, 0)
        self.tids: list = []
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.pthread_create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p, ctypes.c_void_p,
                                             ctypes.c_void_p]
        self.libc.pthread_join.argtypes = [ctypes.c_ulong, ctypes.c_void_p]
        jit.register_symbols(self.addresses)

    def apply(self, threads: int, min_elements: int):
        """Start workers up to threads - 1 and let that many take part."""
        want = threads - 1
        while len(self.tids) < want:
            self._spawn(len(self.tids))
        self.words["min_elements"].value = max(0, int(min_elements))
        self.words["workers"].value = want

    def _spawn(self, index: int):
        tid = ctypes.c_ulong()
        # Workers inherit this thread's signal mask: blocking everything leaves signals to Python's threads.
        old = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        try:
            err = self.libc.pthread_create(ctypes.byref(tid), None, self.worker, index)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if err:
            raise OSError(err, f"parallel: pthread_create failed for worker {index}: {os.strerror(err)}")
        self.tids.append(tid.value)

    def stop(self):
        """Stop and join every worker (at exit: their code must outlive them)."""
        w = self.words
        w["workers"].value = 0
        w["stop"].value = 1
        w["seq"].value += 1
        for _ in self.tids:  # wake sleepers: futex_wake on seq (202 = SYS_futex, 129 = FUTEX_WAKE_PRIVATE)
            self.libc.syscall(ctypes.c_long(202), ctypes.c_void_p(ctypes.addressof(w["seq"])), ctypes.c_long(129),
                              ctypes.c_long(0x7FFFFFFF), ctypes.c_void_p(0))
        for tid in self.tids:
            self.libc.pthread_join(tid, None)
        self.tids = []

    def after_fork_in_child(self):
        """The child has only the forking thread: forget the parent's workers and start our own."""
        w = self.words
        self.tids = []
        w["workers"].value = 0
        w["state"].value = SENTINEL
        for name in ("busy", "sleepers", "stop", "alone_until", "back_off"):
            w[name].value = 0
        # A thread of the parent may have been inside a BLAS step: its count stays ours to restore.
        if w["blas_depth"].value and w["blas_saved"].value not in (0, 1) and w["blas_set"].value:
            ctypes.CFUNCTYPE(None, ctypes.c_int)(w["blas_set"].value)(w["blas_saved"].value)
        w["blas_depth"].value = w["blas_lock"].value = 0
        self.apply(threads, min_elements)


def _pool_code() -> jit.NativeCode:
    """The pool's machine code: from the disk cache when a process built it before (about 1 ms
    instead of a compile, 60 ms, that the first large kernel of a process would wait for)."""
    timings: dict = {}
    key = None
    if not config.dump and disk_cache.enabled():
        sources = []
        for module in (parallel_pool, blas_serial):  # the pool's IR comes from both
            with open(module.__file__, "rb") as f:
                sources.append(f.read().decode("utf-8", "replace"))
        key = cache_key.digest("thread pool", *sources)
        entry = disk_cache.read(key, "thread pool")
        if entry is not None:
            try:
                return jit.load_object(entry[1], {}, (), timings, "thread pool")
            except CompileError as e:
                disk_cache.reject(key, f"cannot be loaded: {e}")
    obj = jit.compile_object(str(build_pool_module()), {}, (), timings, "thread pool", level=2, vectorize=False)
    if key is not None:
        disk_cache.write(key, {"kind": "thread pool"}, obj)
    return jit.load_object(obj, {}, (), timings, "thread pool")


def pool_address(symbol: str = PARALLEL_FOR) -> int:
    """The address of `symbol` (one of codegen.parallel.POOL_SYMBOLS: PARALLEL_FOR by default) in
    this process (the pool is built and started on first use)."""
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                pool = _Pool()
                pool.apply(threads, min_elements)
                _pool = pool
    return _pool.addresses[symbol]


def one_blas_thread(run):
    """`run` with OpenBLAS on one thread while it runs: the bracket compiled code puts around its BLAS
    steps (blas_serial.py; the same save, count and restore, so it is safe beside compiled code on
    other threads). For the reference interpreter serving a call of a loop (serving.py): NumPy's
    threaded products stall on a crowded machine (W3's gradient at a batch of 40 took 6 to 80 ms
    interpreted, by the load) and round differently from one-thread ones."""
    from ..codegen.parallel import BLAS_SERIAL_ENTER, BLAS_SERIAL_LEAVE

    signature = ctypes.CFUNCTYPE(None)
    enter, leave = signature(pool_address(BLAS_SERIAL_ENTER)), signature(pool_address(BLAS_SERIAL_LEAVE))

    def serial(*args):
        enter()
        try:
            return run(*args)
        finally:
            leave()

    return serial


def worker_units() -> int:
    """How many units of split loops the pool's workers (not the callers) have run in this process."""
    return _pool.words[WORKER_UNITS].value if _pool is not None else 0


def configure(threads: int | None = ..., min_elements: int | None = ...):
    """Change the pool's settings for every later call (compiled code needs no recompiling).

    Args:
        threads: threads that run one large loop, the caller included (1 to
            64); 1 runs every loop on the caller alone; None for the default
            (every CPU in the process's affinity mask).
        min_elements: loops over fewer elements run on the caller alone; None
            for the default (65536).

    Raises:
        ValueError: threads outside 1..64, or not an int.

    Example:
        >>> from gradtape.runtime import parallel
        >>> parallel.configure(threads=2, min_elements=200_000)
        >>> parallel.threads, parallel.min_elements
        (2, 200000)
        >>> parallel.configure(threads=None, min_elements=None)   # back to the defaults
    """
    g = globals()  # the parameters are named like the module's settings they set
    if threads is not ...:
        g["threads"] = min(MAX_THREADS, available_cpus()) if threads is None else _check_threads(threads)
    if min_elements is not ...:
        g["min_elements"] = 65536 if min_elements is None else int(min_elements)
    with _lock:
        if _pool is not None:
            _pool.apply(g["threads"], g["min_elements"])


def _at_exit():
    with _lock:
        if _pool is not None:
            _pool.stop()


def _after_fork_in_child():
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    if _pool is not None:
        _pool.after_fork_in_child()


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
codegen.parallel.provide_pool(pool_address)
