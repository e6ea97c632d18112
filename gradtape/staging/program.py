"""Program: one cache entry of a staged function (one transform, one signature).

It holds the optimized Function, how to put its flat outputs back into the
result structure, the compiled form (made on the first concrete call: a
program used only inside enclosing traces is never compiled), and the
single-output sub-Functions a GradientTape records it as.

Compiling happens once per Program, however many threads call it: the
first caller starts it, the others wait for it or, while it is built in the
background, run the interpreter (`Program.runner`).
"""
from __future__ import annotations

import concurrent.futures
import threading

from .. import ir
from ..tracer import tree


def compile_with_runtime(fn):
    from .. import runtime

    return runtime.compile_function(fn)


# What turns a Program's Function into something callable. The api tests set
# it to runtime.interpreted, so that tests of staging logic do not pay for
# LLVM; the tests marked `native` keep the real compiler.
compiler = compile_with_runtime


def _compiles_in_background() -> bool:
    """Background compiles are on, and `compiler` is the runtime's (tests may replace it)."""
    if compiler is not compile_with_runtime:
        return False
    from .. import runtime

    return bool(runtime.config.async_compile)


# Stands for the background compile between the call that decided on it and
# that call's end, when it is submitted: never done, so calls meanwhile interpret.
_NOT_SUBMITTED = concurrent.futures.Future()


def make_assembler(skeleton):
    """A function from the flat list of outputs to the result structure.

    The common shapes (one leaf; a flat tuple) skip the generic tree walk,
    since this runs on every call.
    """
    if skeleton is None:
        return _first
    if type(skeleton) is tuple and all(s is None for s in skeleton):
        return tuple
    return lambda outs: tree.unflatten(skeleton, outs)


def _first(outs):
    return outs[0]


class Program:
    """The compiled-or-compilable form of one (transform, signature).

    Attributes:
      fn: the optimized Function (invars: the call's leaves, then `captured`).
      assemble: flat outputs -> result structure.
      captured: Vars of an enclosing trace that `fn` reads (such programs
        are inlined, never compiled or cached).
      compiled: the CompiledFunction, or None until it is ready.
      later: for transforms that return a function to call later (vjp's
        pullback, linearize's linear map), the Program that function runs
        on this program's residuals; else None.
    """

    __slots__ = ("fn", "assemble", "captured", "compiled", "later", "_call_fns", "_lock", "_future", "_interim")

    def __init__(self, fn, skeleton, captured=(), later=None):
        self.fn = fn
        self.later = later
        self.assemble = make_assembler(skeleton)
        self.captured = list(captured)
        self.compiled = None
        self._call_fns = None
        self._lock = threading.Lock()
        self._future = None  # the background compile in flight
        self._interim = None  # the interpreter, serving calls meanwhile

    def runner(self):
        """What runs this program now: `(run, final, started)`.

        `run` is the CompiledFunction, or while it is compiled in the
        background (runtime.config.async_compile) the reference interpreter;
        `final` says it is the CompiledFunction (callers may keep it);
        `started` says this call started the compile (exactly one call does).
        Without background compiles the first caller compiles here and the
        others wait for it. With them, the caller that started gets the
        interpreter and must call `submit()` once its call has run: the
        compile then does not compete with that first call for the GIL and
        the cores (W3's first call took 99 ms instead of 36 when it did,
        bench/first_call.py --async).
        """
        compiled = self.compiled
        if compiled is not None:
            return compiled, True, False
        with self._lock:
            if self.compiled is not None:
                return self.compiled, True, False
            started = self._future is None
            if started:
                if not _compiles_in_background():
                    self.compiled = compiler(self.fn)
                    return self.compiled, True, True
                self._future = _NOT_SUBMITTED
            if not self._future.done():
                if self._interim is None:
                    from .. import runtime

                    self._interim = runtime.interpreted(self.fn)
                return self._interim, False, started
            future, self._future = self._future, None
            try:
                self.compiled = future.result()
            except Exception:
                # Again in the foreground: a lasting error surfaces here with its own
                # traceback, a passing one is retried.
                self.compiled = compiler(self.fn)
            self._interim = None
            return self.compiled, True, started

    def submit(self):
        """Start the background compile that `runner()` left to its caller (see there)."""
        with self._lock:
            if self._future is _NOT_SUBMITTED:
                from .. import runtime

                self._future = runtime.compile_function_async(self.fn)

    def call_fns(self) -> list:
        """One single-output Function per output: the `call` equations a tape records."""
        if self._call_fns is None:
            self._call_fns = [ir.select_outputs(self.fn, [k]) for k in range(len(self.fn.outvars))]
        return self._call_fns
