"""The backward function of one gradient question asked of a tape's recording.

The recorded equations are differentiated with the adjoint pass; only the
backward half is evaluated, with the forward values the tape computed
eagerly passed in as inputs.

`backward_for` picks one of two ways to evaluate it:

- when no tape is recording, a `BackwardPlan` bound to the recording: the
  plan is looked up by the recording's structure (backward_cache.py), built
  only the first time that structure is seen, and run compiled
  (backward_plan.py);
- when a tape is recording (nested tapes, or a persistent tape inside its
  context), or the recording cannot key a cache, a `Backward`: the function
  is built afresh and, if a tape is recording, replayed through gradtape ops
  so that it is itself recorded, which gives higher orders.

Both answer `run(seeds)` with one gradient per source and say which sources
are `connected`.

`cached_plan` is tape.gradient's shortcut to the first case for a training
loop's question (recorded targets, watched sources, seeds of ones): it
makes the key in a few C calls and returns the cached plan, or None for
backward_for to answer.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ir.batching import vmap
from ..ir.inline import substitute_inputs
from ..ir.copy_gather import gather_copies
from ..ir.reroll import reroll
from . import backward_cache, backward_plan, tape_stack
from .backward_plan import BackwardPlan, gather_gradients, seed_array, stacked_rows
from .deferred import PendingTensor
from .dispatch import bind
from .recording import Recording
from .stacked_leaves import LeafStack, stack_leaf_rows
from .tensor import Tensor


class Question:
    """Which recorded positions a gradient question is about.

    `targets`: each target's position, or None for a target never recorded
    (or not floating point), which contributes nothing. `sources`: per
    source, `(tapped, positions)`: the leaves of a watched tensor (one per
    read of a variable), or `(True, (position,))` for a tensor computed on
    the tape, or `(False, ())` for a source with no gradient. `key` is the
    question as a hashable value: with the recording's structure, it names
    the backward function. It is `(targets, per source: its leaves, or
    ("tapped", position), or ())`, a form `cached_plan` makes quickly.
    """

    __slots__ = ("targets", "sources", "key")

    def __init__(self, rec: Recording, targets, sources):
        var_of, info, watched = rec.var_of, rec.info, rec.sources
        self.targets = []
        for t in targets:
            p = var_of.get(id(t))
            if p is not None and (info[p][0].dtype.kind not in "fc" or not rec.is_tracked(t)):
                p = None
            self.targets.append(p)
        self.sources = []
        for s in sources:
            key = id(s)
            if s.dtype.kind not in "fc":
                self.sources.append((False, ()))
            elif key in watched:
                self.sources.append((False, tuple(watched[key])))
            elif rec.is_tracked(s):
                self.sources.append((True, (var_of[key],)))
            else:
                self.sources.append((False, ()))
        self.key = (tuple(self.targets),
                    tuple(("tapped", *positions) if tapped else positions for tapped, positions in self.sources))


class RecordedProgram:
    """A recording as a program for a (targets, sources) question: `leaves`, `eqns`, the
    Vars to differentiate (`wrt`, each once) and each source's Vars (`source_vars`).

    A source may be a watched tensor or Variable (a leaf of the recording, one
    leaf per read of a variable) or, as in TF, a tensor computed on the tape.
    For the latter the recorded equation defining it, `y = op(...)`, becomes
    `y0 = op(...) ; y = add y0 e` with a new zero input `e` (appended to the
    leaves): the derivative with respect to `e` is the one with respect to
    `y`, while the derivatives still flow through `op` to the other sources.
    `taps` maps each `e` to None and each `y0` to its recorded `y`: Vars that
    are not the recording's.
    """

    def __init__(self, rec: Recording, question: Question):
        vars_ = rec.vars
        leaves = [vars_[p] for p in rec.leaves]
        zero_of = {}  # Var of an intermediate source -> its zero input
        self.source_vars = []  # each source's Vars (a variable may have several reads)
        for tapped, positions in question.sources:
            vs = [vars_[p] for p in positions]
            if tapped:
                v = vs[0]
                if v not in zero_of:
                    zero_of[v] = ir.Var(v.type)
                self.source_vars.append([zero_of[v]])
            else:
                self.source_vars.append(list(vs))
        self.taps = {}
        eqns = rec.eqns
        if zero_of:
            eqns = []
            for e in rec.eqns:
                out = e.outvars[0]
                if out in zero_of:
                    pre = ir.Var(out.type)
                    eqns.append(ir.Eqn(e.op, e.inputs, e.params, (pre,)))
                    eqns.append(ir.Eqn(ir.all_ops["add"], (pre, zero_of[out]), {}, (out,)))
                    self.taps[pre] = out
                else:
                    eqns.append(e)
            for v in zero_of.values():
                leaves.append(v)
                self.taps[v] = None
        self.leaves, self.eqns = leaves, eqns
        self.wrt = []
        for vs in self.source_vars:
            for v in vs:
                if v not in self.wrt:
                    self.wrt.append(v)

    def plan(self, connected) -> list:
        """Per source, the positions in `wrt` of its Vars that are `connected` (a flag per
        `wrt` Var): the derivatives to add up for it, none when it is unconnected."""
        by_var = dict(zip(self.wrt, range(len(self.wrt))))
        return [[by_var[v] for v in vs if connected[by_var[v]]] for vs in self.source_vars]


class BackwardParts:
    """The backward function of a (targets, sources) question and how to call it.

    `fn` takes `leaves`, then one seed per live target, then `known` (forward
    values the tape computed; none with `recompute`, where `fn` recomputes
    the forward values it needs from the leaves). Its outputs are one gradient per distinct
    source Var; `plan[k]` lists the outputs to add up for source k (a variable
    read several times has one Var per read), empty when unconnected.

    Sources computed on the tape get `taps` (see RecordedProgram). `leaves` has a
    Var per input, or a LeafStack for an input that joins the rows a re-rolled loop read
    (stacked_leaves.py).
    """

    def __init__(self, rec: Recording, question: Question, batch: int | None = None, recompute: bool = False,
                 unit_seeds: bool = False):
        vars_ = rec.vars
        self.targets = [None if p is None else vars_[p] for p in question.targets]
        program = RecordedProgram(rec, question)
        leaves, eqns, self.taps, source_vars, wrt = (
            program.leaves, program.eqns, program.taps, program.source_vars, program.wrt)
        live_targets = [v for v in self.targets if v is not None]
        # Python loops recorded step by step become scans before the adjoint is taken (ir/reroll.py),
        # the rows of a constant they read one per step one input (stacked_leaves.py: what follows
        # then costs what the body does, not the trip count), and pieces copied into one tensor
        # one gather (ir/copy_gather.py). `leaves` then has a LeafStack for each such input.
        fn, leaves = stack_leaf_rows(reroll(ir.Function(leaves, eqns, live_targets), "tape backward"), wrt)
        fn = gather_copies(fn)
        at = {v: i for i, v in enumerate(leaves) if v.__class__ is not LeafStack}
        joint, connected = ir.vjp(fn, [at[v] for v in wrt])
        n_out = len(live_targets)
        # A plan that recomputes the forward also returns the targets' values, after the
        # gradients: a target read after `gradient` then takes its value from the plan's
        # run instead of recomputing it op by op (deferred.py).
        self.value_positions = ()
        if recompute and batch is None:
            self.value_positions = tuple(p for p in question.targets if p is not None)
        grads_fn = ir.select_outputs(joint, [*range(n_out, n_out + len(wrt)), *range(len(self.value_positions))])
        if recompute:  # the forward runs inside: its values need not exist (deferred.py)
            known = []
        else:
            known = list(vars_) + [v for v, out in self.taps.items() if out is not None]
        self.fn, self.known = ir.inputs_from_known(grads_fn, known)
        self.leaves = leaves
        self.target_types = [v.type for v in live_targets]
        self.unit_seeds = unit_seeds
        if unit_seeds:  # seeds of ones, baked in: the optimizer folds them away
            first = len(leaves)
            self.fn = substitute_inputs(self.fn, {
                first + k: ir.Literal(np.ones(t.shape, t.dtype)) for k, t in enumerate(self.target_types)})
        elif batch is not None:
            self._batch(batch, n_out)
        self.plan = program.plan(connected)
        self.connected = [bool(p) for p in self.plan]
        self.live = [i for i, v in enumerate(self.targets) if v is not None]


    def _batch(self, batch: int, n_seeds: int):
        """Take a batch of seeds at once (a leading axis of length `batch` on each
        seed and each gradient): the vectorized backward a Jacobian runs once."""
        n_leaves = len(self.leaves)
        in_axes = [None] * n_leaves + [0] * n_seeds + [None] * (len(self.fn.invars) - n_leaves - n_seeds)
        self.fn = vmap(self.fn, in_axes, batch, 0)
        self.target_types = [ir.TensorType((batch,) + t.shape, t.dtype) for t in self.target_types]


def backward_for(rec: Recording, targets, sources, batch: int | None = None, unit_seeds: bool = False):
    """The backward of (targets, sources) on `rec`: cached when it can be (see module doc).

    With `batch`, each seed and each gradient has a leading axis of that
    length: one run computes `batch` backward passes (a Jacobian's rows).
    With `unit_seeds` (no output_gradients, no batch), a cached plan bakes
    the seeds of ones into its function, and its `run` ignores the seeds.
    """
    question = Question(rec, targets, sources)
    if tape_stack.local.tapes:
        backward_cache.count("replayed")
        return Backward(rec, question, batch)
    # The key: the question and how the plan answers it (see cached_plan).
    how = ()
    if batch is not None:
        how += (("batch", batch),)
    recompute = _recomputes(rec, targets)
    if recompute:
        how += ("recompute",)
    unit_seeds = unit_seeds and batch is None
    if unit_seeds:
        how += ("unit seeds",)
    key = (*question.key, how)
    # A program whose value has been read by a plan (value_plans.py) has repeated: its gradient's
    # plan, which recomputes the forward, is compiled at its first run.
    repeated = recompute and backward_cache.met(backward_cache.stand_in(rec)) >= compile_after_runs()
    compile_after = 1 if repeated else None
    plan = backward_cache.lookup(rec, key, lambda: BackwardPlan(
        BackwardParts(rec, question, batch, recompute, unit_seeds), compile_after))
    if plan is None:
        return Backward(rec, question, batch)
    return plan.bind(rec)


def compile_after_runs() -> int:
    """The run in which a plan is compiled (backward_plan.compile_after_runs, read when used)."""
    return backward_plan.compile_after_runs


def cached_plan(rec: Recording, targets, sources) -> BackwardPlan | None:
    """The plan `backward_for(rec, targets, sources, unit_seeds=True)` would bind, when
    the cache holds it and the question is tape.gradient's common one: every target a
    recorded Tensor (not a Variable), every source watched. Else None, having counted
    nothing: then call backward_for.

    The caller makes sure that no tape is recording (a recording tape replays
    the backward instead). The plan's `gradients(rec)` runs it.
    """
    recompute = False
    for t in targets:
        cls = t.__class__
        if cls is PendingTensor:
            recompute = recompute or t._args is not None  # (_recomputes, inlined)
        elif cls is not Tensor:
            return None
    # Question's key, made in C. It leaves out Question's checks of dtypes and tracking,
    # which a hit makes true: the key names the recording's structure, so the type at
    # each target's position is the one the plan was built for, floating; a recorded
    # Tensor is tracked; and only floating tensors are watched. A target not recorded
    # is None in both.
    try:
        key = (
            tuple(map(rec.var_of.get, map(id, targets))),
            tuple(map(tuple, map(rec.sources.get, map(id, sources)))),
            _RECOMPUTE_UNIT_SEEDS if recompute and rec.deferred else _UNIT_SEEDS,
        )
    except TypeError:  # tuple(None): a source not watched, which Question must look at
        return None
    return backward_cache.find(rec, key)


_UNIT_SEEDS = ("unit seeds",)
_RECOMPUTE_UNIT_SEEDS = ("recompute", "unit seeds")


def _recomputes(rec: Recording, targets) -> bool:
    """Whether the plan computes the forward itself: deferred forward values (deferred.py)
    that were never computed. A target already read has had every value it depends on
    computed, so the plan reads them; not one whose value a plan gave (BackwardPlan.keep_values
    leaves its `_args` `()`, where deferred._force leaves None)."""
    if rec.deferred:
        for t in targets:
            if t.__class__ is PendingTensor and t._args is not None:
                return True
    return False


class Backward:
    """A backward function built afresh for one recording, run by the interpreter,
    or replayed through gradtape ops when a tape is recording."""

    def __init__(self, rec: Recording, question: Question, batch: int | None = None):
        self.rec = rec
        self.parts = BackwardParts(rec, question, batch)
        self.connected = self.parts.connected

    def _array(self, v):
        if v.__class__ is LeafStack:
            return np.stack([self._array(u) for u in v])
        if v in self.parts.taps:
            out = self.parts.taps[v]
            return np.zeros(v.type.shape, v.type.dtype) if out is None else self.rec.value(out.index)
        return self.rec.value(v.index)

    def _tensor(self, v):
        if v.__class__ is LeafStack:  # joined by ops, so that the tapes recording now see them
            return stacked_rows([self._tensor(u) for u in v])
        if v in self.parts.taps:
            out = self.parts.taps[v]
            if out is None:
                return Tensor(np.zeros(v.type.shape, v.type.dtype))
            v = out
        t = self.rec.tensor(v.index)
        snap = self.rec.snapshots.get(v.index)
        if snap is not None and snap is not t._value:
            # A variable read before an assign: replay with the value it saw.
            # Outer tapes then see a constant, so derivatives of this gradient
            # with respect to that variable miss this read's contribution.
            return Tensor(snap)
        return t

    def run(self, seeds) -> list:
        """Gradients per source (Tensor, or None when unconnected) for these seeds."""
        parts = self.parts
        nested = bool(tape_stack.active())
        seed_values = []
        for i, ty in zip(parts.live, parts.target_types):
            s = seeds[i]
            if s is None:
                s = np.ones(ty.shape, ty.dtype)
            if nested:  # keep a Tensor seed itself, so outer tapes see it used
                s = s if isinstance(s, Tensor) else Tensor(np.asarray(s, ty.dtype))
                if s.dtype != ty.dtype:
                    s = bind(ir.all_ops["cast"], s, dtype=ty.dtype)
            else:
                s = seed_array(s, ty)
            seed_values.append(s)
        if nested:  # replay on Tensors so that recording tapes see the backward ops
            args = [self._tensor(v) for v in parts.leaves]
            args += seed_values
            args += [self._tensor(v) for v in parts.known]
            outs = ir.eval_function(parts.fn, args, bind=bind)
            outs = [o if isinstance(o, Tensor) else Tensor(o) for o in outs]
        else:
            args = [self._array(v) for v in parts.leaves]
            args += seed_values
            args += [self._array(v) for v in parts.known]
            outs = ir.eval_function(parts.fn, args)
        return gather_gradients(outs, parts.plan)
