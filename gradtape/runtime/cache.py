"""The in-memory compile cache: one CompiledFunction per key, built once per process.

    cf = compile_function(fn)              # blocks until built
    fut = compile_function_async(fn)       # Future[CompiledFunction]

Keys are cache_key(fn): the canonical text, literal digests and the code
generator's version. Each key maps to a Future: the first thread to miss
builds it, every other thread that meets the same key while it is being
built waits on the same Future, so a key is compiled once. Different keys
are built concurrently up to the LLVM stage, where target.llvm_lock
serializes them (LLVM's global state is not thread-safe).

A build that fails (CompileError with config.compile_errors == "raise")
hands its exception to every waiter and leaves no entry, so the next call
tries again.

The cache is bounded (config.memory_cache_entries and
config.memory_cache_bytes, GRADTAPE_MEMORY_CACHE_ENTRIES/_BYTES): each
lookup makes its key the most recently used, and once a finished build
would put the cache over a bound, the least recently used finished entries
are dropped (`evictions`). A dropped CompiledFunction's machine code (its
MCJIT engine) and arena are freed when the last holder lets go of it: a
caller still holding one keeps a working function, and a later lookup of
that key builds it again (from the disk cache when it is there). Builds in
flight are never evicted.

A build first looks in the disk cache (disk_cache.py, keyed by
cache_key.disk_key): an entry there is loaded (a `disk_load`: no lowering,
no LLVM passes) instead of compiled, and a compiled Function's object code
is written there for the next process. The disk is skipped while IR dumps
are on (config.dump: they show what a compile does) and when
gradtape.codegen.lower is not the real code generator (tests put a
hand-made one in its place).
"""
from __future__ import annotations

import collections
import concurrent.futures
import os
import threading
import time
import warnings
import weakref

from .. import codegen
from . import complex_boundary, config, disk_cache, target
from .build import Fallback, build_native, load_native, native_meta
from .cache_key import cache_key, disk_key
from .compiled import CompiledFunction
from .errors import CompileError

_lock = threading.Lock()
_entries: collections.OrderedDict = collections.OrderedDict()  # key -> Future, least recently used first
_footprints: dict = {}  # key -> CompiledFunction.footprint, for the finished entries
_held_bytes = 0  # sum of _footprints
_in_flight: set = set()  # Futures of builds not finished (also those clear_cache forgot)
_generation = 0  # bumped by clear_cache, so builds started before it do not count after it
_COUNTERS = ("hits", "misses", "compiles", "disk_loads", "native", "fallbacks", "errors", "evictions")
_stats: dict = dict.fromkeys(_COUNTERS, 0)
_stats["compile_seconds"] = 0.0
_executor = None
_real_lower = codegen.lower  # the disk cache holds only what the real code generator made


def _lookup(fn):
    """(future, generation, key): generation is None when the entry exists (built or being built),
    else this thread must build it and pass the generation to _run."""
    key = cache_key(fn)
    with _lock:
        fut = _entries.get(key)
        if fut is not None:
            _stats["hits"] += 1
            _entries.move_to_end(key)
            return fut, None, key
        _stats["misses"] += 1
        fut = _entries[key] = concurrent.futures.Future()
        fut.set_running_or_notify_cancel()
        _in_flight.add(fut)
        return fut, _generation, key


def _build(fn, key=None) -> CompiledFunction:
    t0 = time.perf_counter()
    name = _disk_name(fn, key)
    try:
        kernel_fn = complex_boundary.real_kernel_function(fn)  # fn itself unless it holds complex values
        native = _load_from_disk(kernel_fn, name) if name else None
        loaded = native is not None
        if not loaded:
            native = build_native(kernel_fn)
            if name:
                disk_cache.write(name, dict(native_meta(native), kind="kernel", types=_types_text(kernel_fn)),
                                 native.code.object_bytes)
        cf = CompiledFunction(fn, native, kernel_fn=kernel_fn)
        cf.loaded_from_disk = loaded
    except Fallback as e:
        cf = CompiledFunction(fn, fallback_reason=str(e))
    except Exception as e:  # a bug in code generation or LLVM: never a crash, maybe a fallback
        if config.compile_errors == "raise":
            if isinstance(e, CompileError):
                raise
            raise CompileError(f"compiling {_short(fn)} failed: {type(e).__name__}: {e}") from e
        warnings.warn(
            f"gradtape: compiling {_short(fn)} failed ({type(e).__name__}: {e}); "
            "the reference interpreter will run it (set GRADTAPE_COMPILE_ERRORS=raise to stop here)",
            RuntimeWarning,
            stacklevel=4,
        )
        cf = CompiledFunction(fn, fallback_reason=f"compile error: {type(e).__name__}: {e}")
    cf.compile_seconds = time.perf_counter() - t0
    return cf


def _disk_name(fn, key):
    """fn's disk cache key, or None when the disk cache is not to be used for it."""
    if config.dump or codegen.lower is not _real_lower or not disk_cache.enabled():
        return None
    return disk_key(fn, key)


def _types_text(fn) -> str:
    return f"({', '.join(map(str, fn.in_types))}) -> ({', '.join(map(str, fn.out_types))})"


def _load_from_disk(fn, name):
    """The NativeFunction stored under `name`, or None (a miss, or an entry that cannot be loaded here)."""
    t = time.perf_counter()
    entry = disk_cache.read(name, "kernel")
    if entry is None:
        return None
    meta, obj = entry
    if meta.get("types") != _types_text(fn):
        disk_cache.reject(name, f"it holds a kernel of types {meta.get('types')}, not {_types_text(fn)}")
        return None
    read_seconds = time.perf_counter() - t
    try:
        native = load_native(fn.in_types, fn.out_types, meta, obj, label=f"{meta.get('name')} = {_short(fn)}")
    except (CompileError, KeyError, TypeError, ValueError) as e:
        disk_cache.reject(name, f"cannot be loaded: {e}")
        return None
    native.timings["disk_read"] = read_seconds
    return native


def _run(fn, fut, generation, key):
    try:
        cf = _build(fn, key)
    except BaseException as e:
        with _lock:
            if generation == _generation:
                _stats["compiles"] += 1
                _stats["errors"] += 1
                if _entries.get(key) is fut:
                    del _entries[key]
        fut.set_exception(e)
    else:
        with _lock:
            if generation == _generation:
                _stats["disk_loads" if cf.loaded_from_disk else "compiles"] += 1
                _stats["native" if cf.native else "fallbacks"] += 1
                _stats["compile_seconds"] += cf.compile_seconds
                if _entries.get(key) is fut:
                    _hold(key, cf.footprint)
        fut.set_result(cf)
    with _lock:  # only once it is done: wait_for_compiles then sees a finished Future
        _in_flight.discard(fut)


def _hold(key, footprint: int):
    """Count a finished entry's bytes, then evict down to the bounds (call under _lock)."""
    global _held_bytes
    _footprints[key] = footprint
    _held_bytes += footprint
    _evict_over_bounds()


def _evict_over_bounds():
    """Drop least recently used finished entries until the cache is within its bounds (under _lock).

    Only finished entries count and go: a build in flight has waiters and no size yet.
    """
    global _held_bytes
    max_entries, max_bytes = int(config.memory_cache_entries), int(config.memory_cache_bytes)
    over = _over(max_entries, max_bytes)
    if not over:
        return
    for key in [k for k in _entries if k in _footprints]:  # least recently used first
        if not over:
            break
        del _entries[key]
        _held_bytes -= _footprints.pop(key)
        _stats["evictions"] += 1
        over = _over(max_entries, max_bytes)


def _over(max_entries: int, max_bytes: int) -> bool:
    return (0 < max_entries < len(_footprints)) or (0 < max_bytes < _held_bytes and len(_footprints) > 1)


def compile_function(fn) -> CompiledFunction:
    """The CompiledFunction for `fn`, compiled at most once per process.

    Args:
        fn: an ir.Function (static shapes and dtypes).
    Returns:
        A CompiledFunction: native code, or the interpreter when code
        generation does not support `fn` (`cf.native is False`, and
        `cf.fallback_reason` says why).
    Raises:
        CompileError: code generation or LLVM failed and
            config.compile_errors is "raise" (otherwise: a RuntimeWarning
            and the interpreter).

    Example:
        >>> fn = gradtape.make_ir(lambda x: gradtape.sum(x * x), np.ones(3))   # { a:f64[3] . ... -> c }
        >>> cf = compile_function(fn)
        >>> compile_function(fn) is cf          # a cache hit
        True
    """
    fut, generation, key = _lookup(fn)
    if generation is not None:
        _run(fn, fut, generation, key)
    return fut.result()


def compile_function_if_cached(fn) -> CompiledFunction | None:
    """compile_function(fn) when it costs no compile: built already in this
    process, or loadable from the disk cache (a few ms); else None.

    For callers that serve a new Function with the interpreter while it
    compiles in the background: with this they first take native code
    that is at hand, so a warm disk cache makes even the first call native.

    Example:
        >>> fn = gradtape.make_ir(lambda x: gradtape.sum(x * x), np.ones(3))   # { a:f64[3] . ... -> c }
        >>> cf = compile_function_if_cached(fn)
        >>> run = cf if cf is not None else interpreted(fn)   # and compile_function_async(fn)
    """
    key = cache_key(fn)
    with _lock:
        fut = _entries.get(key)
        if fut is not None:
            _entries.move_to_end(key)
    if fut is not None:
        return fut.result() if fut.done() and fut.exception() is None else None
    name = _disk_name(fn, key)
    if name is None or not disk_cache.has(name):
        return None
    return compile_function(fn)  # a disk load (or, if the entry turns out unusable, a compile)


def compile_function_async(fn) -> concurrent.futures.Future:
    """A Future of compile_function(fn), built on a background thread.

    Serve calls with the interpreter (`interpreted(fn)`) until `future.done()`.
    With config.async_compile off (GRADTAPE_ASYNC_COMPILE=0) it compiles in
    the caller and returns a finished Future. Either way the result is the
    same cache entry compile_function(fn) returns.

    Example:
        >>> fn = gradtape.make_ir(lambda x: gradtape.sum(x * x), np.ones(3))   # { a:f64[3] . ... -> c }
        >>> fut = compile_function_async(fn)
        >>> cf = fut.result() if fut.done() else interpreted(fn)
    """
    fut, generation, key = _lookup(fn)
    if generation is not None:
        try:
            if not config.async_compile:
                raise RuntimeError("background compiles are off")
            _background().submit(_run, fn, fut, generation, key)
        except RuntimeError:  # off, or the interpreter is shutting down: build here
            _run(fn, fut, generation, key)
    return fut


def wait_for_compiles(timeout: float | None = None) -> bool:
    """Block until every build in flight has finished (background ones included).

    Args:
        timeout: seconds to wait at most (None: no limit).
    Returns:
        True when nothing is left in flight, False on timeout.

    Example:
        >>> from gradtape import runtime
        >>> runtime.config.async_compile = True   # (GRADTAPE_ASYNC_COMPILE=1)
        >>> g = gradtape.grad(lambda x: gradtape.sum(gradtape.sin(x)))
        >>> _ = g(np.ones(7))           # a new signature: interpreted while it compiles
        >>> runtime.wait_for_compiles()  # from the next call on, native code
        True
        >>> runtime.config.async_compile = False
    """
    with _lock:
        pending = list(_in_flight)
    done, not_done = concurrent.futures.wait(pending, timeout=timeout)
    return not not_done


_builds = weakref.WeakSet()  # every BackgroundBuild (a forked child begins the unfinished ones again)


class BackgroundBuild:
    """A build run once: on the compile thread once submitted, or by the first caller that needs it.

        build = BackgroundBuild(make)   # make(): what the build makes (it handles its own errors)
        build.submit()                  # after the call that started it has run
        value = build.result()          # waits for it, or runs it here if no thread has begun it

    Whoever begins it first runs it (the compile thread or a caller of
    `result`), so a caller never waits for a submit that never comes, and
    what `result` gives does not depend on which ran it or when. Unlike
    compile_function_async, it goes to the compile thread whether or not
    config.async_compile is on: the callers (a dynamic version,
    runtime/dynamic_family.py) decide which code serves each call by a rule
    that does not depend on timing. wait_for_compiles waits for it once
    submitted.
    """

    __slots__ = ("_make", "_claimed", "_lock", "_future", "__weakref__")

    def __init__(self, make):
        self._make = make
        self._claimed = False
        self._lock = threading.Lock()
        self._future = concurrent.futures.Future()
        _builds.add(self)

    def _forget_after_fork(self):
        """In a forked child: the thread that ran it is gone, so it is begun again by whoever needs it."""
        if not self._future.done() and self._make is not None:
            self._claimed = False
            self._lock = threading.Lock()
            self._future = concurrent.futures.Future()

    def submit(self):
        """Run it on the compile thread (nothing when it is already begun or submitted)."""
        with self._lock:
            if self._claimed or self._future.running():
                return
            self._future.set_running_or_notify_cancel()  # marks it submitted
        with _lock:
            _in_flight.add(self._future)
        try:
            _background().submit(self._run_once)
        except RuntimeError:  # the interpreter is shutting down: the next result() runs it
            with _lock:
                _in_flight.discard(self._future)

    def result(self):
        """What the build made, once it is done (run here when nothing has begun it)."""
        self._run_once()
        return self._future.result()

    def done(self) -> bool:
        return self._future.done()

    def _run_once(self):
        with self._lock:
            if self._claimed:
                return
            self._claimed = True
            if not self._future.running():
                self._future.set_running_or_notify_cancel()
        try:
            value = self._make()
        except BaseException as e:
            self._future.set_exception(e)
        else:
            self._future.set_result(value)
        finally:
            self._make = None
            with _lock:
                _in_flight.discard(self._future)


def interpreted(fn) -> CompiledFunction:
    """A CompiledFunction that runs `fn` with the reference interpreter (not cached; same calling convention)."""
    return CompiledFunction(fn, fallback_reason="interpreter requested")


def prestart_background():
    """Start the compile thread now (an idle thread), so that the first BackgroundBuild submitted
    later does not pay for importing and starting it in the call that submits it."""
    _background().submit(_nothing)


def _nothing():
    pass


def _background():
    global _executor
    with _lock:
        if _executor is None:
            # One worker: LLVM work is serialized anyway, and the other core keeps running the program.
            _executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gradtape-compile")
        return _executor


def _after_fork_in_child():
    """A forked child has only the forking thread: builds in flight and the worker are gone."""
    global _lock, _executor
    _lock = threading.Lock()
    _executor = None
    for key in [k for k, f in _entries.items() if not f.done()]:
        del _entries[key]  # never finished: not in _footprints
    _in_flight.clear()
    for build in list(_builds):  # a build the compile thread was running would never finish
        build._forget_after_fork()
    target.llvm_lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def count_build(loaded_from_disk: bool, seconds: float):
    """Count a build made outside this cache (a dynamic version, dynamic_kernel.py) in cache_info()."""
    with _lock:
        _stats["disk_loads" if loaded_from_disk else "compiles"] += 1
        _stats["native"] += 1
        _stats["compile_seconds"] += seconds


def cache_info() -> dict:
    """Counters of the in-memory cache since the last clear_cache().

    Returns:
        dict with `hits` (lookups that found an entry, built or being
        built), `misses` (lookups that started a build), `compiles` (builds
        finished by code generation and LLVM), `disk_loads` (builds
        finished by loading object code from the disk cache), `native` and
        `fallbacks` (how builds ended), `errors` (builds that raised),
        `compile_seconds` (the builds' total wall time), `evictions`
        (finished entries dropped to stay within the bounds), `entries`
        (keys held, builds in flight included), `bytes` (the footprints of
        the finished ones), `max_entries` and `max_bytes` (the bounds, from
        config) and `in_flight` (builds not finished). The disk cache's own
        counters are gradtape.cache_info()'s.

    Example:
        >>> from gradtape import runtime
        >>> runtime.cache_info()["entries"] <= runtime.config.memory_cache_entries
        True
    """
    with _lock:
        info = dict(_stats)
        info["entries"] = len(_entries)
        info["bytes"] = _held_bytes
        info["max_entries"] = int(config.memory_cache_entries)
        info["max_bytes"] = int(config.memory_cache_bytes)
        info["in_flight"] = sum(not f.done() for f in _entries.values())
        return info


def clear_cache():
    """Forget every entry and zero the counters (builds in flight finish, uncounted).

    The machine code of the forgotten functions is freed as soon as nothing
    else holds them; gradtape.clear_cache() also empties the holders
    (staged functions, the tape's backward plans) and the disk cache.
    """
    global _generation, _held_bytes
    with _lock:
        _entries.clear()
        _footprints.clear()
        _held_bytes = 0
        _generation += 1
        for k in _COUNTERS:
            _stats[k] = 0
        _stats["compile_seconds"] = 0.0


def _short(fn, limit: int = 160) -> str:
    text = str(fn)
    return text if len(text) <= limit else text[: limit - 5] + " ... }"
