"""A Function served by the reference interpreter while its native code compiles.

The one policy for code that runs the same Function many times: staged
functions (staging/program.py) and the tape's backward plans
(tracer/backward_plan.py, which gets this class as its compile hook from the
package root, since tracer/ imports neither runtime nor codegen).

    served = ServedFunction(fn)
    outs = served(x, y)                   # interpreted now; native once it is ready

or, for a caller that wants to know what ran (counters, caching the code):

    run, final, started = served.runner()
    try:
        outs = run(x, y)
    finally:
        if started and not final:
            served.submit()               # the background compile, after this call

The policy:

- The first `compile_after - 1` runs are interpreted and start nothing: a
  Function met only a few times never pays for a compile, which takes far
  longer than interpreting it a few times.
- The next run starts the compile; exactly one run does, however many
  threads call. With background compiles (config.async_compile,
  GRADTAPE_ASYNC_COMPILE, off by default) that run is interpreted, and its
  caller submits the compile once the run is done, so that the compile does
  not compete with that run for the GIL and the cores (W3's first call took
  99 ms instead of 36 when it did, bench/first_call.py --async). Every run
  until the code is ready is interpreted. Without them, or with a stand-in
  `compiler`, that run compiles in the caller (other threads wait) and runs
  native code.
- The first run after the compile is done takes the result for good
  (`served.compiled`).
- A background compile that raised is compiled again in the foreground: a
  lasting error then surfaces in a caller with its own traceback, a passing
  one is retried. What a compile does on an error is the runtime's
  (config.compile_errors): by default a RuntimeWarning and a
  CompiledFunction that runs the interpreter (`native` False).
"""
from __future__ import annotations

import concurrent.futures
import threading

from . import config


# The compiler (cache.py: codegen, llvmlite) is imported by the first run, not with this module:
# staged functions and the tape's hook hold ServedFunctions long before anything compiles.
def compile_function(fn):
    from .cache import compile_function

    return compile_function(fn)


def compile_function_async(fn):
    from .cache import compile_function_async

    return compile_function_async(fn)


def interpreted(fn):
    from .cache import interpreted

    return interpreted(fn)


def _one_blas_thread(run):
    from .parallel import one_blas_thread

    return one_blas_thread(run)


# Stands for the background compile between the run that started it and that run's
# end, when its caller submits it: never done, so runs meanwhile are interpreted.
_NOT_SUBMITTED = concurrent.futures.Future()


class ServedFunction:
    """One ir.Function, run by the interpreter until its native code is ready.

    Thread-safe: any number of threads may call it (or `runner()`) at once.

    Args:
      fn: the ir.Function (static shapes and dtypes).
      compile_after: the run that starts the compile (1: the first run).
      prepare: a function of `fn` giving the Function to compile (an IR-to-IR
        pass), applied once, when the compile starts; the interpreter runs
        `fn` itself. None: `fn` is compiled.
      compiler: None for the runtime's compile_function (in the background
        when config.async_compile is on), or a stand-in called in the caller
        (tests use runtime.interpreted, so as not to pay for LLVM).

    Attributes:
      fn: the Function.
      compiled: what the compile made (a CompiledFunction), or None until it
        is ready.

    Example:
        >>> from gradtape import runtime
        >>> fn = gradtape.make_ir(gradtape.sin, np.ones(3))   # { a:f64[3] . b = sin a -> b }
        >>> served = ServedFunction(fn)
        >>> served(np.zeros(3))                  # the interpreter; the compile starts
        [array([0., 0., 0.])]
        >>> runtime.wait_for_compiles()
        True
        >>> served(np.zeros(3))                  # native code from now on
        [array([0., 0., 0.])]
        >>> served.compiled.native
        True
    """

    __slots__ = ("fn", "compiled", "_compile_after", "_runs", "_prepare", "_compiler", "_target",
                 "_lock", "_future", "_interim")

    def __init__(self, fn, *, compile_after: int = 1, prepare=None, compiler=None):
        self.fn = fn
        self.compiled = None
        self._compile_after = compile_after
        self._runs = 0  # runs before the compile started (counted under the lock)
        self._prepare = prepare
        self._compiler = compiler
        self._target = None  # prepare(fn), once made
        self._lock = threading.Lock()
        self._future = None  # the background compile: _NOT_SUBMITTED, then submitted
        self._interim = None  # the interpreter, serving runs meanwhile
        if compiler is None:
            # A compile is coming (a tape's backward plan compiles at its compile_after-th run):
            # LLVM's worker process starts now, in the background, not when the compile needs it.
            # (llvm_worker.py loads subprocess: with the first ServedFunction, not with this module.)
            from . import fastcall, llvm_worker

            llvm_worker.prestart()
            fastcall.prepare_in_background()

    def __call__(self, *args) -> list:
        """Outputs of the Function on `args` (arrays), by whatever runs it now (see `runner`)."""
        run, final, started = self.runner()
        try:
            return run(*args)
        finally:
            if started and not final:
                self.submit()

    def runner(self):
        """What runs the Function now: `(run, final, started)`.

        Returns:
          `run`: the compiled function, or the interpreter (a CompiledFunction
          running the reference interpreter) while there is none; `final`:
          `run` is the compiled function (callers may keep it); `started`:
          this call started the compile (exactly one call does). A caller
          given `started` and not `final` must call `submit()` once it has
          run `run`.

        Raises:
          CompileError: a compile in the caller failed and
            config.compile_errors is "raise" (the next run tries again).
        """
        compiled = self.compiled
        if compiled is not None:
            return compiled, True, False
        with self._lock:
            if self.compiled is not None:
                return self.compiled, True, False
            future = self._future
            started = False
            if future is None:
                self._runs += 1
                started = self._runs >= self._compile_after
                if started:
                    if self._compiler is not None or not config.async_compile:
                        self.compiled = self._compile_here()
                        return self.compiled, True, True
                    self._future = future = _NOT_SUBMITTED
            if future is None or not future.done():
                if self._interim is None:
                    self._interim = interpreted(self.fn)
                return self._interim, False, started
            self._future = None
            try:
                self.compiled = future.result()
            except Exception:
                # Again in the foreground: a lasting error surfaces here with its own
                # traceback (and the next run starts over), a passing one is retried.
                self.compiled = self._compile_here()
            self._interim = None
            return self.compiled, True, False

    def submit(self, on_ready=None):
        """Start the background compile that `runner()` left to its caller (see there).

        on_ready: called with the compile's Future when it finishes (on the compiling thread),
        so that what reports a compile reports it then, not at the next run.
        """
        if self._future is not _NOT_SUBMITTED:
            return
        target = self._target_function()  # outside the lock: other runs go on meanwhile
        with self._lock:
            if self._future is not _NOT_SUBMITTED:
                return
            self._future = future = compile_function_async(target)
        if on_ready is not None:
            future.add_done_callback(on_ready)

    def _compile_here(self):
        compile_now = self._compiler if self._compiler is not None else compile_function
        return compile_now(self._target_function())

    def _target_function(self):
        target = self._target
        if target is None:
            target = self._target = self.fn if self._prepare is None else self._prepare(self.fn)
        return target

    def __repr__(self):
        state = "compiled" if self.compiled is not None else "compiling" if self._future else "interpreted"
        types = [", ".join(map(str, ts)) for ts in (self.fn.in_types, self.fn.out_types)]
        return f"<ServedFunction ({types[0]}) -> ({types[1]}), {state}>"


class ServedAfterBuild:
    """A Function whose native code another build makes (a dynamic version, staging/dynamic_versions.py):
    its first `interpreted_runs` runs are interpreted (the first starts that build in the
    background); the next run waits for it.

    The same protocol as ServedFunction (`runner()`, then `submit()` when
    `started` and not `final`). Which code runs each call never depends on
    how long the build takes: runs 1 to `interpreted_runs` are the reference
    interpreter, every later run the build's result, waited for when it is not done (whatever
    config.async_compile says; the build runs on the compile thread either
    way, cache.BackgroundBuild). The interpreter runs its products with
    OpenBLAS on one thread (parallel.one_blas_thread), as compiled code does.

    Args:
      fn: the ir.Function (what the interpreter runs).
      build: the cache.BackgroundBuild.
      resolve: called once the build is done: the callable for `fn` (a
        dynamic_kernel.SizedCall), or None: then `fn` is served by a
        ServedFunction of its own (compiled for itself, by the usual policy).
    """

    __slots__ = ("fn", "compiled", "_build", "_resolve", "_lock", "_runs", "_interpreted_runs", "_own", "_interim")

    def __init__(self, fn, build, resolve, interpreted_runs: int = 1):
        self.fn = fn
        self.compiled = None
        self._build, self._resolve = build, resolve
        self._lock = threading.Lock()
        self._runs = 0  # interpreted runs handed out
        self._interpreted_runs = max(1, int(interpreted_runs))
        self._own = None  # the ServedFunction, when the build made nothing for fn
        self._interim = None

    def runner(self):
        """`(run, final, started)` as ServedFunction.runner: the first `interpreted_runs` calls get the
        interpreter (the first also `started`: its caller submits the build), later ones wait for the build."""
        compiled = self.compiled
        if compiled is not None:
            return compiled, True, False
        with self._lock:
            if self._runs < self._interpreted_runs:
                self._runs += 1
                if self._interim is None:
                    self._interim = _one_blas_thread(interpreted(self.fn))
                return self._interim, False, self._runs == 1  # the first run's caller submits the build
        self._build.result()  # waits for it (outside the lock), or runs it here if nothing began it
        with self._lock:
            if self.compiled is None and self._own is None:
                run = self._resolve()
                if run is None:
                    self._own = ServedFunction(self.fn)
                else:
                    self.compiled = run
                self._interim = None
            if self.compiled is not None:
                return self.compiled, True, False
            own = self._own
        run, final, started = own.runner()
        if final:
            self.compiled = run
        return run, final, started

    def submit(self, on_ready=None):
        """Start the build that the first run's `runner()` left to its caller (or, once the build made
        nothing for fn, the background compile of fn's own version)."""
        own = self._own
        if own is not None:
            own.submit(on_ready)
        else:
            self._build.submit()

    def __repr__(self):
        state = "compiled" if self.compiled is not None else "building" if self._runs else "new"
        return f"<ServedAfterBuild {state}>"
