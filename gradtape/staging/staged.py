"""StagedFunction: a Python function traced once per shape signature and compiled.

A call computes the signature of its arguments, looks it up, and on a hit
converts the leaves to arrays and calls the compiled function: that is the
whole per-call cost. Everything else happens on a miss:

    signature -> trace f (abstract tensors) -> transform (forward / vjp)
              -> optimize -> compile -> cache

Three other ways through a call, all decided on the slow path:
  - some argument is abstract (we are inside another trace): the Program is
    inlined into that trace instead of run (nesting.py);
  - some argument is a Tensor and a GradientTape is recording: the call is
    computed compiled and recorded as `call` equations (tape_calls.py);
  - the trace captured values of an enclosing trace: inlined, never cached.

With background compiles on (gradtape.runtime.config.async_compile,
GRADTAPE_ASYNC_COMPILE=1; off by default, for results that do not depend on
timing) the call that misses does
not wait for native code: the reference interpreter serves it, and then it
starts the compile on the runtime's worker thread; the interpreter serves
calls until the code is ready, and the first call after that switches to it
for good (Program.runner).

Memory: each function keeps the traces and programs of at most
runtime.config.memory_cache_entries signatures (GRADTAPE_MEMORY_CACHE_ENTRIES);
past that the oldest signature is forgotten (first in, first out: a hit
costs nothing extra, and a hot signature forgotten that way costs one
retrace per that many new signatures, each of which compiles anyway).
`clear_all_caches()` empties every live staged function (gradtape.clear_cache).

Thread safety: a signature is traced once (under the traces' lock) and
compiled once (under its Program's lock), however many threads meet it at
once; the counters are atomic, and the caches are dicts written whole.
"""
from __future__ import annotations

import collections
import functools
import itertools
import threading
import time
import weakref

import numpy as np

from .. import runtime
from ..runtime import config as runtime_config
from ..tracer import signature, tape_stack
from ..tracer.signature import PY_FLOAT, STATIC, as_array
from ..ir.copy_gather import gather_copies
from ..ir.reroll import reroll
from ..tracer.trace import trace_call
from . import compile_log, nesting, pickling, tape_calls
from .dynamic_versions import DynamicVersions, check_policy
from .transforms import Differentiate, Forward

CacheInfo = collections.namedtuple("CacheInfo", ["hits", "misses", "traces", "compiles"])

_ndarray = np.ndarray
_MISS = object()
_live = weakref.WeakSet()  # every StagedFunction, for clear_all_caches


codegen = None  # gradtape.codegen (its CODEGEN_VERSION keys the programs): loaded by the first StagedFunction


def _expect_compiles():
    """A staged function exists: it will most likely compile. Load the code generator's version and
    start LLVM's worker process now, in the background, so that its start-up overlaps tracing and
    lowering instead of adding to the first compile (runtime/llvm_worker.py), and the call
    wrappers every compiled function needs (runtime/fastcall.py)."""
    global codegen
    if codegen is None:
        from .. import codegen as loaded

        codegen = loaded
    runtime.llvm_worker.prestart()
    runtime.fastcall.prepare_in_background()


def clear_all_caches():
    """Forget the traces and programs of every live staged function (their counters are kept)."""
    for staged in list(_live):
        staged.clear_cache()


def _trim(table: dict):
    """Drop the oldest entries of `table` past runtime.config.memory_cache_entries (call under the traces' lock)."""
    bound = int(runtime_config.memory_cache_entries)
    while 0 < bound < len(table):
        del table[next(iter(table))]


def _count_of(counter) -> int:
    """How many times next() was called on an itertools.count() (its repr is `count(n)`)."""
    return int(repr(counter)[6:-1])


class _Traces:
    """Traces of one Python function, shared by its transforms (f, f.grad, ...),
    keyed by signature: f runs once per signature however many transforms use it."""

    __slots__ = ("table", "count", "lock", "history")

    def __init__(self):
        self.table = {}
        self.count = 0
        self.lock = threading.RLock()  # re-entrant: f may call itself (static recursion)
        self.history = compile_log.History()  # what each trace was for, and what changed (compile_log.py)


def invoke(program, sig, fname: str, on_run=None):
    """Run `program` on the leaves of `sig`: the result in the transform's structure.

    Inside an enclosing trace (or when the program reads captured values) it is
    inlined there instead; with Tensors on a recording GradientTape the
    results are recorded as `call` equations. `on_run(sig, program, started,
    final)` hears whether this call started a compile and ran native code.
    """
    if sig.abstract or program.captured:
        return nesting.stage(program, sig.leaves, fname)
    if sig.tensors:  # on one recording tape: recorded, computed with tape.gradient
        pending = tape_calls.defer_call(program, sig.leaves)
        if pending is not None:
            return program.assemble(pending)
    run, final, started = program.runner()
    if on_run is not None:
        on_run(sig, program, started, final)
    try:
        outs = run(*[as_array(x) for x in sig.leaves])
    finally:
        if started and not final:
            program.submit()  # the background compile, now that this call is done
    if sig.tensors:
        if tape_stack.active():
            outs = tape_calls.record_call(program, sig.leaves, outs)
    return program.assemble(outs)


class StagedFunction:
    """A function staged by `differentiable`, `grad` or `value_and_grad`.

    Call it like the function it wraps. Results are NumPy arrays in the
    structure the transform defines; inside another trace they are
    abstract Tensors, and on a recording GradientTape (some argument is a
    Tensor) they are Tensors the tape can differentiate through.

    Attributes:
      grad, value_and_grad: the transforms of this function w.r.t. argument 0.
    """

    def __init__(self, fun, transform, static_argnums=(), traces=None, dynamic=None):
        _expect_compiles()
        self._fun = fun
        self._transform = transform
        self._static = frozenset(static_argnums)
        self.static_argnums = tuple(sorted(self._static))
        self._traces = traces if traces is not None else _Traces()
        self._programs = {}  # (transform, codegen version, signature) -> Program
        self._fast = {}  # signature -> (compiled, assemble), for plain arrays and floats
        self._fast_version = codegen.CODEGEN_VERSION
        self._key_prefix = transform.key
        self._fname = getattr(fun, "__name__", type(fun).__name__)
        # Atomic counters (next() of an itertools.count runs under the GIL): threads share them.
        self._hits, self._compiles = itertools.count(), itertools.count()
        self._misses = 0  # changed under the traces' lock only
        self._grad = self._value_and_grad = None
        self._dynamic = DynamicVersions(check_policy(dynamic, f"{transform.name}({self._fname})"))
        functools.update_wrapper(self, fun, updated=())
        _live.add(self)

    # --- the call -------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(
                f"{self._transform.name}({self._fname}): keyword arguments are not supported; "
                "pass arguments positionally (use functools.partial or static_argnums for "
                "configuration values)"
            )
        if self._static:
            result = self._call_fast_static(args)
            if result is not _MISS:
                return result
            return self._call_slow(args)
        # The fast path: positional arrays and floats only. Its index holds
        # compiled programs of this transform and the current code generator
        # version, so the key is just the signature, built inline.
        parts = []
        floats = False
        for a in args:
            t = type(a)
            if t is _ndarray:
                parts.append(a.shape)
                parts.append(a.dtype)
            elif t is float:
                parts.append(())
                parts.append(PY_FLOAT)
                floats = True
            else:
                break
        else:
            hit = self._fast.get(tuple(parts))
            if hit is not None and self._fast_version == codegen.CODEGEN_VERSION:
                next(self._hits)
                compiled, assemble = hit
                if floats:
                    args = [np.array(a) if type(a) is float else a for a in args]
                return assemble(compiled(*args))
        return self._call_slow(args)

    def _call_fast_static(self, args):
        """The fast path with static arguments among plain arrays and floats, or _MISS."""
        static = self._static
        parts, dynamic = [], []
        for i, a in enumerate(args):
            if i in static:
                parts.append((STATIC, type(a), a))
                continue
            t = type(a)
            if t is _ndarray:
                parts.append(a.shape)
                parts.append(a.dtype)
                dynamic.append(a)
            elif t is float:
                parts.append(())
                parts.append(PY_FLOAT)
                dynamic.append(np.array(a))
            else:
                return _MISS
        try:
            hit = self._fast.get(tuple(parts))
        except TypeError:  # an unhashable static argument: the slow path says so
            return _MISS
        if hit is None or self._fast_version != codegen.CODEGEN_VERSION:
            return _MISS
        next(self._hits)
        compiled, assemble = hit
        return assemble(compiled(*dynamic))

    def _call_slow(self, args):
        sig = signature.describe(args, self._static, self._fname)
        program = self._program(sig, args)
        return invoke(program, sig, self._fname, self._on_run)

    def _on_run(self, sig, program, started, final):
        if started:
            next(self._compiles)
        if final:
            program.log_compiled(program.compiled)
            self._index_fast(sig, program)

    def _index_fast(self, sig, program):
        """Make the fast path find `program` when its leaves are plain arrays and floats."""
        if sig.tensors:
            return  # Tensors: the fast path never sees these
        n_static = sum(r is None for r in sig.ranges) if self._static else 0
        if len(sig.parts) != 2 * len(sig.leaves) + n_static:
            return  # containers: neither
        if any(type(x) is not _ndarray and type(x) is not float for x in sig.leaves):
            return
        with self._traces.lock:
            if self._fast_version != codegen.CODEGEN_VERSION:
                self._fast.clear()
                self._fast_version = codegen.CODEGEN_VERSION
            self._fast[sig.parts] = (program.compiled, program.assemble)
            _trim(self._fast)

    def _program(self, sig, args):
        key = (self._key_prefix, codegen.CODEGEN_VERSION) + sig.parts
        program = self._programs.get(key)
        if program is not None:
            next(self._hits)
            return program
        traces = self._traces
        with traces.lock:
            program = self._programs.get(key)
            if program is not None:  # another thread built it while this one waited
                next(self._hits)
                return program
            self._misses += 1
            self._transform.check(sig, self._fname)
            traced = traces.table.get(sig.parts)
            described = compile_log.describe(self._fun, args, sig)
            title = f"{self._transform.name}({self._fname})"
            started = time.perf_counter()
            trace_seconds = None
            if traced is None:
                trace = getattr(self._transform, "trace", trace_call)
                traced = trace(self._fun, args, sig, self._fname)
                # Python loops as scans, and pieces copied into one tensor as one gather, before
                # any transform differentiates or compiles them.
                traced.fn = gather_copies(reroll(traced.fn, self._fname))
                traces.count += 1
                if not traced.captured:
                    traces.table[sig.parts] = traced
                    _trim(traces.table)
                trace_seconds = time.perf_counter() - started
            program = self._transform.build(traced, sig, args, self._fname)
            build_seconds = time.perf_counter() - started - (trace_seconds or 0.0)
            if trace_seconds is None:
                compile_log.built(title, described, build_seconds)
            else:
                # A size a dynamic version serves compiles nothing: no retrace warning for it.
                counted = not self._dynamic.covers(sig)
                compile_log.traced(traces.history, title, described, trace_seconds, build_seconds, counted)
            program.log_label = (title, described)
            if not program.captured:
                self._programs[key] = program
                _trim(self._programs)
                self._dynamic.attach(self, sig, args, program, title, described)
            return program

    def _program_for(self, args):
        """The Program for a call with `args` (traced and built on a miss; nothing runs)."""
        return self._program(signature.describe(args, self._static, self._fname), args)

    @property
    def dynamic(self):
        """The dynamic-shapes policy: None (automatic), True, False or a frozenset of (argnum, axis)."""
        return self._dynamic.policy

    def compiled_for(self, *args):
        """The native code a call with `args` runs, for callers with their own hot loop.

        A caller that makes the same call many times (gradtape.train_step) can
        call `compiled.entry` itself and skip this function's signature
        lookup; it must then check `codegen.CODEGEN_VERSION` itself, and fall
        back to calling this function when the entry returns NotImplemented.
        Nothing is traced or compiled here, and no counter changes.

        Args:
          args: plain NumPy arrays and floats, as a call would pass them.

        Returns:
          `(compiled, assemble)`: the CompiledFunction (or what the program's
          compiler made), whose `entry` takes the dynamic arguments as arrays
          (floats as 0-d float64 arrays, static arguments left out), and the
          function from its list of outputs to this function's result. None
          when a call with `args` would not take the fast path: other kinds
          of arguments, or a signature no call has compiled and run yet (or
          one forgotten since, past runtime.config.memory_cache_entries).

        Example::

            >>> def loss(w, x):
            ...     return gradtape.sum(gradtape.tanh(x @ w) ** 2)
            >>> w, x = np.ones(3), np.ones((2, 3))
            >>> f = gradtape.grad(loss); _ = f(w, x)   # traced, compiled and run once
            >>> compiled, assemble = f.compiled_for(w, x)
            >>> g = assemble(compiled.entry(w, x))  # the gradient, as f(w, x) gives it
            >>> np.array_equal(g, f(w, x))
            True
        """
        parts = []
        for i, a in enumerate(args):
            t = type(a)
            if i in self._static:
                parts.append((STATIC, t, a))
            elif t is _ndarray:
                parts += (a.shape, a.dtype)
            elif t is float:
                parts += ((), PY_FLOAT)
            else:
                return None
        if self._fast_version != codegen.CODEGEN_VERSION:
            return None
        try:
            return self._fast.get(tuple(parts))
        except TypeError:  # an unhashable static argument
            return None

    # --- pickling (pickling.py) ---------------------------------------------------------------
    def __reduce__(self):
        """Pickled as its Python function (by reference), its transform, and each cached
        signature's IR and machine code: a receiver runs those signatures without tracing."""
        fun = pickling.function_reference(self._fun)
        programs = pickling.export_programs(self)
        return (pickling.rebuild, (StagedFunction, fun, self._transform, self.static_argnums, programs, self.dynamic))

    def programs(self) -> list:
        """(signature parts, Program) of each cached signature, for this code generator version."""
        prefix = (self._key_prefix, codegen.CODEGEN_VERSION)
        with self._traces.lock:
            items = list(self._programs.items())
        return [(key[2:], program) for key, program in items if key[:2] == prefix]

    def adopt(self, parts, program):
        """Cache `program` (built elsewhere: an unpickled one) for the signature `parts`."""
        with self._traces.lock:
            self._programs[(self._key_prefix, codegen.CODEGEN_VERSION) + tuple(parts)] = program
            _trim(self._programs)

    # --- introspection and derived transforms ---------------------------------------------
    def cache_info(self) -> CacheInfo:
        """Counters of this function's cache.

        Returns:
          CacheInfo(hits, misses, traces, compiles): calls served by an existing
          entry; calls that built one; times the Python function was traced
          (shared with the other transforms of the same function, e.g. f and
          f.grad); compiles to native code started (a background compile
          counts when it starts; a dynamic version, compiled once for many
          sizes, counts once).
        """
        compiles = _count_of(self._compiles) + self._dynamic.compiles
        return CacheInfo(_count_of(self._hits), self._misses, self._traces.count, compiles)

    def clear_cache(self):
        """Forget every entry (counters are kept); the next call of each signature retraces."""
        with self._traces.lock:
            self._programs.clear()
            self._fast.clear()
            self._dynamic.families.clear()
            self._traces.table.clear()

    @property
    def grad(self) -> "StagedFunction":
        """`gradtape.grad(self)`: the gradient w.r.t. argument 0, sharing this function's traces."""
        if self._grad is None:
            self._grad = self._derivative(return_value=False)
        return self._grad

    @property
    def value_and_grad(self) -> "StagedFunction":
        """`gradtape.value_and_grad(self)`, sharing this function's traces."""
        if self._value_and_grad is None:
            self._value_and_grad = self._derivative(return_value=True)
        return self._value_and_grad

    def _derivative(self, return_value: bool) -> "StagedFunction":
        """grad(self) or value_and_grad(self) w.r.t. argument 0, as gradtape.grad builds it: a
        forward staging's Python function is traced directly, sharing its traces."""
        name = "value_and_grad" if return_value else "grad"
        if 0 in self._static:
            raise ValueError(f"{name}: argument 0 is both in argnums and static_argnums; "
                             "a static argument cannot be differentiated")
        transform = Differentiate(0, False, return_value)
        forward = self._forward_parts()
        if forward is not None:
            fun, static, traces = forward
            return StagedFunction(fun, transform, tuple(sorted(static)), traces, self._dynamic.policy)
        return StagedFunction(self, transform, self.static_argnums, dynamic=self._dynamic.policy)

    def _forward_parts(self):
        """(fun, static_argnums, traces) when this is a plain forward staging, else None:
        transforms of it can then trace `fun` directly and share the traces."""
        if isinstance(self._transform, Forward):
            return self._fun, self._static, self._traces
        return None

    def __repr__(self):
        return f"<{self._transform.name} {self._fname} (cache: {self.cache_info()})>"
