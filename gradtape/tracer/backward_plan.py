"""A backward function stripped of the recording it was built from, so that
every recording with the same structure can run it.

A `BackwardPlan` names the values to pass in by their positions in the
recording's structure (`RecordedVar.index`), never by Var or tensor, so it
keeps no forward value alive. It runs its function through
`gradtape.runtime` once it has run `compile_after_runs` times: compiled in
the background when the runtime can (`compile_function_async`; off with
runtime.config.async_compile = False or GRADTAPE_ASYNC_COMPILE=0), the
reference interpreter serving calls until the compiled function is ready.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import ir, runtime
from ..ir.optimize import optimize
from .dispatch import bind
from .tensor import Tensor

# A plan is compiled when it runs for the compile_after_runs-th time (a row
# of a Jacobian is a run). A structure met only a few times (a test, an
# interactive session, a small Jacobian) never pays for a compile, which takes
# far longer than interpreting a few backward passes; a training loop
# compiles at its fifth step.
compile_after_runs = 5

_lock = threading.Lock()


class BackwardPlan:
    """The structural half of a backward: its Function and where its inputs come from.

    Args:
      parts: a backward.BackwardParts built from one recording.
    """

    def __init__(self, parts):
        self.fn = parts.fn
        taps = parts.taps
        self.leaf_refs = [_ref(v, taps) for v in parts.leaves]
        self.known_refs = [_ref(v, taps) for v in parts.known]
        self.live = parts.live
        self.target_types = parts.target_types
        self.unit_seeds = parts.unit_seeds
        self.plan = parts.plan
        self.connected = parts.connected
        self.runs = 0
        self._compiled = None
        self._future = None
        self._started = not self.fn.outvars  # no connected source: nothing to compile

    def bind(self, rec) -> "BoundBackward":
        """This plan with the forward values of `rec` (a recording of its structure)."""
        return BoundBackward(self, rec)

    def execute(self, args) -> list:
        """Outputs of the plan's Function on `args`, compiled when it is ready."""
        self.runs += 1
        compiled = self._compiled
        if compiled is None:
            compiled = self._poll()
            if compiled is None:
                return ir.eval_function(self.fn, args)
        return compiled(*args)

    def _poll(self):
        """The CompiledFunction if it is ready; starts compiling once the plan is warm."""
        with _lock:
            start = not self._started and self.runs >= compile_after_runs
            self._started = self._started or start
        if start:
            # Feature-detected: the runtime gained background compiles later.
            # It reads its own setting (config.async_compile) and, with it
            # off, returns a future that is already done.
            compile_async = getattr(runtime, "compile_function_async", None)
            # Optimized first, as staged functions are: the adjoint leaves
            # work for the simplifier (seeds of ones, broadcasts of scalars).
            fn = optimize(self.fn)
            if compile_async is None:
                self._compiled = runtime.compile_function(fn)
                return self._compiled
            self._future = compile_async(fn)
        with _lock:
            future = self._future
            if future is None or not future.done():
                return self._compiled
            self._future = None  # this thread collects it
        try:
            compiled = future.result()
        except Exception:
            # Compile again in the foreground: the error then surfaces with its
            # own traceback, or a transient failure is retried.
            compiled = runtime.compile_function(optimize(self.fn))
        self._compiled = compiled
        return compiled


def _ref(v, taps):
    """Where an input of the plan's Function comes from: a recorded value's
    position, or (for the zero input of an intermediate source) a zero array."""
    if v in taps:
        out = taps[v]
        if out is None:
            zeros = np.zeros(v.type.shape, v.type.dtype)
            zeros.flags.writeable = False
            return zeros
        v = out
    return v.index


class BoundBackward:
    """A plan and one recording's forward values: what `GradientTape` runs.

    The forward values are gathered once, so the rows of a Jacobian share them.
    """

    def __init__(self, plan: BackwardPlan, rec):
        self.plan = plan
        self.rec = rec
        self.connected = plan.connected
        self._values = None

    def _gather(self):
        value = self.rec.value
        plan = self.plan
        leaves = [value(r) if r.__class__ is int else r for r in plan.leaf_refs]
        known = [value(r) if r.__class__ is int else r for r in plan.known_refs] if plan.known_refs else []
        return leaves, known

    def run(self, seeds) -> list:
        """Gradients per source (Tensor, or None when unconnected) for these seeds."""
        plan = self.plan
        if self._values is None:
            self._values = self._gather()
        leaves, known = self._values
        if plan.unit_seeds:  # baked into the function
            args = leaves + known
        else:
            args = leaves + [seed_array(seeds[i], ty) for i, ty in zip(plan.live, plan.target_types)] + known
        return gather_gradients(plan.execute(args), plan.plan)


def seed_array(seed, ty) -> np.ndarray:
    """A seed (None for ones, an array or a Tensor) as an array of the target's type."""
    if seed is None:
        return np.ones(ty.shape, ty.dtype)
    return np.asarray(seed.numpy() if isinstance(seed, Tensor) else seed, ty.dtype)


def gather_gradients(outs, plan) -> list:
    """One gradient per source (a Tensor): the sum of its outputs (arrays or Tensors), or
    None when unconnected."""
    grads = []
    for idx in plan:
        if not idx:
            grads.append(None)
            continue
        g = outs[idx[0]]
        for k in idx[1:]:
            g = bind(ir.all_ops["add"], g, outs[k])
        grads.append(g if isinstance(g, Tensor) else Tensor(g))
    return grads
