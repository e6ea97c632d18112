"""Program: one cache entry of a staged function (one transform, one signature).

It holds the optimized Function, how to put its flat outputs back into the
result structure, the compiled form (made on the first concrete call: a
program used only inside enclosing traces is never compiled), and the
single-output sub-Functions a GradientTape records it as.

Compiling happens once per Program, however many threads call it, by the
runtime's policy for serving a Function while it compiles
(runtime/serving.py): the first concrete call starts it; while it is built
in the background, calls run the interpreter (`Program.runner`).
"""
from __future__ import annotations

import threading

from .. import ir
from ..runtime.serving import ServedFunction
from . import compile_log
from ..tracer import tree

# What turns a Program's Function into something callable: None for the
# runtime's policy (runtime/serving.py: the interpreter serves calls while
# native code compiles in the background). The api tests set it to
# runtime.interpreted, so that tests of staging logic do not pay for LLVM;
# the tests marked `native` keep the real compiler. A stand-in compiles in
# the caller.
compiler = None


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
      source: the Function as traced, before optimization (the same invars
        and outputs). What a tape records and what an enclosing trace
        inlines, so that derivatives are always taken of the traced program:
        the optimizer's rewrites keep values, not derivatives at non-finite
        points (x ** 0 -> 1 drops the 0 * inf of x's derivative at inf).
      assemble: flat outputs -> result structure.
      captured: Vars of an enclosing trace that `fn` reads (such programs
        are inlined, never compiled or cached).
      compiled: the CompiledFunction, or None until it is ready.
      later: for transforms that return a function to call later (vjp's
        pullback, linearize's linear map), the Program that function runs
        on this program's residuals; else None.
    """

    __slots__ = ("fn", "source", "assemble", "captured", "compiled", "later", "log_label", "_call_fns", "_lock", "_served")

    def __init__(self, fn, skeleton, captured=(), later=None, source=None):
        self.fn = fn
        self.source = fn if source is None else source
        self.later = later
        self.assemble = make_assembler(skeleton)
        self.captured = list(captured)
        self.compiled = None
        self.log_label = None  # (title, described call) until its compile is logged (compile_log.py)
        self._call_fns = None
        self._lock = threading.Lock()
        self._served = None  # made at the first concrete call, with the `compiler` of that time

    def runner(self):
        """What runs this program now: `(run, final, started)`, as ServedFunction.runner.

        `run` is the CompiledFunction, or while it is compiled in the
        background (runtime.config.async_compile) the reference interpreter;
        `final` says it is the CompiledFunction (callers may keep it);
        `started` says this call started the compile (exactly one call does),
        and then, unless `final`, the caller must call `submit()` once its
        call has run.
        """
        compiled = self.compiled
        if compiled is not None:
            return compiled, True, False
        served = self._served
        if served is None:
            with self._lock:
                if self._served is None:
                    self._served = ServedFunction(self.fn, compiler=compiler)
                served = self._served
        run, final, started = served.runner()
        if final:
            self.compiled = run
        return run, final, started

    def serve_by(self, served):
        """Let `served` (runtime/serving.py's ServedAfterBuild: a dynamic version built in the
        background) run this program, instead of the ServedFunction of its first call."""
        self._served = served

    def submit(self):
        """Start the background compile that `runner()` left to its caller (see there)."""
        self._served.submit(on_ready=self._log_ready)

    def _log_ready(self, future):
        if not future.cancelled() and future.exception() is None:
            self.log_compiled(future.result())

    def log_compiled(self, compiled):
        """Log this program's compile (compile_log.py), once: when the background compile
        finishes, or at the first run of a compile made in the caller."""
        with self._lock:
            label, self.log_label = self.log_label, None
        if label is not None:
            compile_log.compiled(*label, compiled)

    def call_fns(self) -> list:
        """One single-output Function per output: the `call` equations a tape records."""
        if self._call_fns is None:
            self._call_fns = [ir.select_outputs(self.source, [k]) for k in range(len(self.source.outvars))]
        return self._call_fns
