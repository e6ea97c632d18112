"""A backward function stripped of the recording it was built from, so that
every recording with the same structure can run it.

A `BackwardPlan` names the values to pass in by their positions in the
recording's structure (`RecordedVar.index`), never by Var or tensor, so it
keeps no forward value alive. It runs its function through `serve`, the
compile hook the package root installs (gradtape.runtime.serving's
ServedFunction: the reference interpreter for the first runs, native code
compiled in the `compile_after_runs`-th run from then on; with
runtime.config.async_compile on, the compile runs in the background and the
interpreter serves until it is ready). The
tracer imports neither runtime nor codegen: with no hook installed, the
interpreter runs every plan.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import ir
from ..ir.inline_calls import inline_calls
from ..ir.optimize import optimize
from ..ir.ops.call import call_p
from . import deferred, dispatch, plan_log, tape_stack
from .deferred import PendingTensor
from .dispatch import bind
from .stacked_leaves import LeafStack, stack_leaves
from .tensor import Tensor

_reshape, _concatenate = ir.all_ops["reshape"], ir.all_ops["concatenate"]

# A plan is compiled when it runs for the compile_after_runs-th time (a row
# of a Jacobian is a run). A structure met only a few times (a test, an
# interactive session, a small Jacobian) never pays for a compile, which takes
# far longer than interpreting a few backward passes; a training loop
# compiles at its fifth step. Read when a plan is built.
compile_after_runs = 5

# The compile hook: `serve(fn, compile_after=n, prepare=f)` gives a callable
# that runs ir.Function `fn` on arrays (interpreted, then compiled `prepare(fn)`
# from its n-th run on) and whose `compiled` attribute is the compiled function
# once it is ready (None before): runtime.serving.ServedFunction, set by
# gradtape/__init__.py. None: plans are interpreted.
serve = None


class BackwardPlan:
    """The structural half of a backward: its Function and where its inputs come from.

    The Function's inputs are the recorded leaves it reads, then the rows of
    leaves it takes stacked (stacked_leaves.py), then the recorded forward
    values (`known`), then the constant arrays it needs (the zero inputs of
    intermediate sources), then the seeds when they are inputs (not baked
    in, see `unit_seeds`): each kind is gathered by position at once.

    Args:
      parts: a backward.BackwardParts built from one recording.
      compile_after: compiled in its compile_after-th run (`compile_after_runs` when None).
    """

    def __init__(self, parts, compile_after: int | None = None):
        taps = parts.taps
        invars = parts.fn.invars
        n_leaves, n_known = len(parts.leaves), len(parts.known)
        n_seeds = len(invars) - n_leaves - n_known
        recorded, stacked, constants = [], [], []
        for v, x in zip(parts.leaves, invars[:n_leaves]):
            if v.__class__ is LeafStack:  # rows the parts joined: their positions
                stacked.append(([u.index for u in v], x))
            else:
                r = _ref(v, taps)
                (recorded if r.__class__ is int else constants).append((r, x))
        known = [(_ref(v, taps), x) for v, x in zip(parts.known, invars[n_leaves + n_seeds:])]
        ordered = recorded + stacked + known + constants
        fn = ir.Function([x for _, x in ordered] + list(invars[n_leaves:n_leaves + n_seeds]),
                         parts.fn.eqns, parts.fn.outvars)
        # The leaves a re-rolled loop reads one per iteration: one input, stacked when the plan
        # runs. The parts joined them before the adjoint; this joins what it left (a Jacobian's).
        self.fn, kept, stacks = stack_leaves(fn, len(recorded))
        self._leaf_positions = [recorded[i][0] for i in kept]
        self._get_leaves = _items_getter(self._leaf_positions)
        stacks = [[recorded[i][0] for i in s] for s in stacks] + [positions for positions, _ in stacked]
        self._stacks = [(positions, _items_getter(positions)) for positions in stacks]
        self._get_known = _items_getter([r for r, _ in known])
        self._constants = [r for r, _ in constants]
        self._known_or_constants = bool(known or constants)
        self.live = parts.live
        self.target_types = parts.target_types
        self.unit_seeds = parts.unit_seeds
        self.plan = parts.plan
        self.connected = parts.connected
        # The targets' positions when the Function's last outputs are their values (a plan
        # that recomputes the forward); () otherwise.
        self.value_positions = parts.value_positions
        # Output k is the gradient of source k (each connected, read once): no sums to make.
        self._outputs_in_order = self.plan == [[k] for k in range(len(self.plan))]
        self._compiled = None
        self._calls = None  # one Function per output, that `record_calls` records, made on first use
        self._entry = None  # the compiled function's raw entry point (see CompiledFunction.entry)
        self.log_label = None  # set by backward_cache when the compile log is on (plan_log.py)
        self._served = None  # with no hook, or nothing to compute (no connected source): interpreted
        if serve is not None and self.fn.outvars:
            self._served = serve(self.fn, compile_after=compile_after or compile_after_runs, prepare=_prepared)

    def bind(self, rec) -> "BoundBackward":
        """This plan with the forward values of `rec` (a recording of its structure)."""
        return BoundBackward(self, rec)

    def arguments(self, rec) -> list:
        """The inputs of the plan's Function before the seeds: arrays from recording `rec`."""
        # Recording.value for each position, in C calls. A leaf: the array a variable
        # read saw, else the recorded array or Tensor (constant or watched). A forward
        # value: a recorded op's result, always a Tensor.
        values = rec.values
        args = list(map(np.asarray, map(rec.snapshots.get, self._leaf_positions, self._get_leaves(values))))
        for positions, get in self._stacks:  # a row per step of a re-rolled loop: thousands
            args.append(np.stack([_array_of(v) for v in map(rec.snapshots.get, positions, get(values))]))
        if self._known_or_constants:  # none when the plan recomputes the forward (deferred.py)
            args += map(_value_of, self._get_known(values))
            args += self._constants
        return args

    def gradients(self, rec) -> list:
        """Gradients per source (Tensor, or None when unconnected) on recording `rec`, for a
        plan with its seeds of ones baked in (`unit_seeds`): one run, nothing kept."""
        outs = self.execute(self.arguments(rec))
        if self.value_positions:
            outs = self.keep_values(rec, outs)
        if self._outputs_in_order:
            return list(map(Tensor, outs))
        return gather_gradients(outs, self.plan)

    def record_calls(self, rec, seeds) -> list:
        """Outputs per source (Tensor, or None), as `bind(rec).run(seeds)` gives them, as `call`
        ops of the plan's Function (one per output, as a staged function's call is recorded)
        on the recorded Tensors and the `seeds` (Tensors), so that the tapes recording now
        record them, deferred when one tape records: for a plan of leaves and seeds alone (a
        JVP's). A tape's plan that differentiates them inlines the calls and compiles them
        with the rest."""
        if self._known_or_constants:
            raise ValueError("BackwardPlan.record_calls: only a plan that takes the leaves and the seeds "
                             "records calls")
        if self._calls is None:
            n = len(self.fn.outvars) - len(self.value_positions)
            self._calls = [optimize(ir.select_outputs(self.fn, [k])) for k in range(n)]
        args = [_recorded_tensor(rec, p) for p in self._leaf_positions]
        for positions, _ in self._stacks:  # joined by recorded ops, so that tapes recording now see them
            args.append(stacked_rows([_recorded_tensor(rec, p) for p in positions]))
        args += list(seeds)
        return gather_gradients([_recorded_call(fn, args) for fn in self._calls], self.plan)

    def keep_values(self, rec, outs) -> list:
        """The gradient outputs of `outs`; the targets' values that follow them become the
        values of the targets of `rec` still pending (deferred.py), so that reading one
        costs nothing more."""
        n = len(outs) - len(self.value_positions)
        values = rec.values
        for p, value in zip(self.value_positions, outs[n:]):
            t = values[p]
            if t.__class__ is PendingTensor and t._forced is None:
                t._forced = np.asarray(value)
                # The operands are freed, as deferred._force frees them, but marked `()`, not
                # None: the values this one depends on were not computed (backward._recomputes)
                t._args = ()
        return outs[:n]

    def execute(self, args) -> list:
        """Outputs of the plan's Function on `args` (arrays), compiled when it is ready."""
        entry = self._entry
        if entry is not None:
            outs = entry(*args)  # NotImplemented unless every array is exactly as compiled for
            if outs is not NotImplemented:
                return outs
        compiled = self._compiled
        if compiled is None:
            served = self._served
            if served is None:
                return ir.eval_function(self.fn, args)
            compiled = served.compiled
            if compiled is None:
                return served(*args)  # the interpreter while it compiles (or its first native run)
            self._compiled = compiled
            plan_log.compiled(self.log_label, compiled)
            # A CompiledFunction's entry skips its Python frame; a stand-in without one is called.
            self._entry = getattr(compiled, "entry", None)
        return compiled(*args)  # converts what the entry point declined, or says what is wrong


def stacked_rows(tensors) -> Tensor:
    """The Tensors stacked, as recorded ops (a reshape of each to one row, then their
    concatenate: the equations a re-rolled loop's stacked input replaced)."""
    rows = [bind(_reshape, t, shape=(1,) + t.shape) for t in tensors]
    return bind(_concatenate, *rows, axis=0)


def _recorded_call(fn, args) -> Tensor:
    """`call[fn] args`, deferred on the single recording tape when it can be (deferred.py),
    else computed and recorded by every recording tape."""
    tapes = tape_stack.local.tapes
    if len(tapes) == 1 and deferred.enabled and not any(map(deferred.eager_only, (e.op for e in fn.eqns))):
        tape = tapes[0]
        pending = dispatch._record(tape._tape, call_p, args, {"fn": fn}, None, tape._watch_accessed_variables)
        if pending is not None:
            return pending
    return bind(call_p, *args, fn=fn)


def _recorded_tensor(rec, p) -> Tensor:
    """The Tensor at position `p` of recording `rec` as the op saw it: a variable read before
    an assign gives the value it read (a constant then, for the tapes recording a replay)."""
    snap = rec.snapshots.get(p)
    t = rec.tensor(p)
    return Tensor(snap) if snap is not None and snap is not t._value else t


def _items_getter(positions):
    """A C function of a list giving its items at `positions`, in a tuple or a list."""
    if len(positions) >= 2:
        return operator.itemgetter(*positions)
    # itemgetter of one position gives a bare item: a slice gives a list
    p = positions[0] if positions else 0
    return operator.itemgetter(slice(p, p + len(positions)))


_value_of = operator.attrgetter("_value")  # a Tensor's array (computed, for a pending one)


def _array_of(value) -> np.ndarray:
    """np.asarray(value) of a recorded leaf: a concrete Tensor's array read directly (no tape
    records now, so there is nothing for np.asarray's checks to refuse)."""
    if value.__class__ is Tensor and value._sym is None:
        return value._value
    return np.asarray(value)


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

    def run(self, seeds) -> list:
        """Gradients per source (Tensor, or None when unconnected) for these seeds."""
        plan = self.plan
        if self._values is None:
            self._values = plan.arguments(self.rec)
        if plan.unit_seeds:  # baked into the function
            args = self._values
        else:
            args = self._values + [seed_array(seeds[i], ty) for i, ty in zip(plan.live, plan.target_types)]
        outs = plan.execute(args)
        if plan.value_positions:
            outs = plan.keep_values(self.rec, outs)
        return gather_gradients(outs, plan.plan)


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
        if len(idx) == 1:  # the common case: a source read once
            g = outs[idx[0]]
        elif not idx:
            grads.append(None)
            continue
        else:
            g = outs[idx[0]]
            for k in idx[1:]:
                g = bind(ir.all_ops["add"], g, outs[k])
        grads.append(g if isinstance(g, Tensor) else Tensor(g))
    return grads


def _prepared(fn):
    """fn as it is compiled: its calls inlined (a staged function's call, deferred on a
    tape, is then fused with its backward), then optimized, as staged functions are: the
    adjoint leaves work for the simplifier (seeds of ones, broadcasts of scalars)."""
    return optimize(inline_calls(fn))
