"""ForwardAccumulator: Jacobian-vector products on an eager tape, with TensorFlow's API.

`tf.autodiff.ForwardAccumulator(primals, tangents)` computes JVPs of the
ops run inside its context; `acc.jvp(t)` reads the JVP of `t`. Here the
accumulator records like a GradientTape (recording.py: on the same tape
stack, so `bind`, Variables and compiled calls record on it, deferred while
it is the only recorder) and computes a JVP when `jvp` asks for it: the
recorded program from the watched primals to the targets goes through the
tangent pass (ir.jvp) once per recorded structure, cached and compiled like
a gradient's backward plan (backward_cache.py, backward_plan.py). The
values are those of TensorFlow's accumulator, which computes the tangents
op by op.

Nesting works as TensorFlow's:
- forward over reverse: a GradientTape inside the accumulator; the tape's
  `gradient`, run while the accumulator records, is replayed through
  recorded ops (backward.py), so `acc.jvp(gradient)` is a Hessian-vector
  product;
- reverse over forward: the accumulator inside a GradientTape; `acc.jvp(y)`
  called while the tape records is recorded on it as `call`s of the JVP's
  Function (deferred, as a staged function's call), so the tape can
  differentiate the JVP, and its gradient compiles forward, JVP and
  backward as one function;
- an accumulator inside an accumulator: the inner one's `jvp` is recorded
  by the outer one (forward over forward).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import ir
from . import backward_cache, tape_stack, tree
from .backward import Question, RecordedProgram
from .backward_plan import BackwardPlan
from .dispatch import bind
from .gradient_tape import UnconnectedGradients, _unconnected_mode
from .recording import Recording
from .recording import record as _record
from .tensor import Tensor
from .trace_context import check_live


class ForwardAccumulator:
    """Computes Jacobian-vector products with forward-mode autodiff, like
    tf.autodiff.ForwardAccumulator.

    Ops run inside the accumulator's context on its primals (or on values
    computed from them) are recorded; `jvp` gives the product of their
    Jacobian with the tangents.

    Args:
      primals: a Tensor or Variable, or a nested structure of them, to take
        derivatives with respect to.
      tangents: the same structure of vectors (Tensors or arrays, each shaped
        like its primal), the "vector" of the Jacobian-vector product.

    Raises:
      ValueError: `tangents` does not have the structure of `primals`, a
        tangent's shape differs from its primal's, a primal is listed twice
        (as TensorFlow: sum its tangents instead), or a primal is an
        abstract (traced) tensor.
      TypeError: a primal is not a Tensor or Variable, or a tangent is not
        real (complex, say) where its primal is.

    A real tangent of another dtype is cast to its primal's (TensorFlow
    accepts that of arrays only, but gradtape's constants default to
    float64, so a float32 primal's tangent often is one).

    Example::

        >>> x = gradtape.constant([1.0, 2.0])
        >>> with gradtape.ForwardAccumulator(x, gradtape.constant([1.0, 0.0])) as acc:
        ...     y = x ** 3
        >>> acc.jvp(y).numpy()
        array([3., 0.])
    """

    def __init__(self, primals, tangents):
        flat_primals, flat_tangents = tree.flatten(primals), tree.flatten(tangents)
        if len(flat_primals) != len(flat_tangents):
            raise ValueError(
                f"ForwardAccumulator: got {len(flat_primals)} primals and {len(flat_tangents)} tangents; "
                "give one tangent per primal, in the same structure"
            )
        self._tape = Recording()  # the name every recorder on the tape stack has (dispatch.bind)
        self._watch_accessed_variables = False  # as TF: only the primals are watched
        self._recording = False
        self._primals = []  # the watched floating primals, in order
        self._tangents = []  # their tangents (Tensors, of the primal's dtype)
        first = {}
        for i, primal in enumerate(flat_primals):
            j = first.setdefault(id(primal), i)
            if j != i:  # its later tangent would silently replace the earlier one
                raise ValueError(
                    f"ForwardAccumulator: primals {j} and {i} are the same {_describe(primal)}; list each "
                    "primal once (TensorFlow raises too), with the sum of its tangents if both were meant"
                )
        for primal, tangent in zip(flat_primals, flat_tangents):
            self._watch(primal, tangent)

    def _watch(self, primal, tangent):
        if not isinstance(primal, Tensor):
            raise TypeError(
                f"ForwardAccumulator: primals must be Tensors or Variables, got {type(primal).__name__}; "
                "wrap arrays with gradtape.constant first"
            )
        if primal.is_abstract:
            raise ValueError("ForwardAccumulator: cannot watch an abstract (traced) tensor; inside "
                             "@differentiable functions use gradtape.jvp instead")
        if not ir.is_float(primal.dtype):
            warnings.warn(
                f"ForwardAccumulator: the dtype of a watched primal must be floating (e.g. float32 or "
                f"float64), got {primal.dtype}; its JVPs will be None.",
                stacklevel=3,
            )
            return
        given = tangent.dtype if isinstance(tangent, Tensor) else np.asarray(tangent).dtype
        allowed = "biufc" if primal.dtype.kind == "c" else "biuf"
        if given.kind not in allowed:  # a cast would drop the imaginary part, or fail on objects
            raise TypeError(
                f"ForwardAccumulator: a tangent of dtype {given} was given for a primal of dtype "
                f"{primal.dtype}; a tangent must be real like its primal (of the primal's dtype)"
            )
        if not isinstance(tangent, Tensor):
            tangent = Tensor(np.asarray(tangent, primal.dtype))
        if tuple(tangent.shape) != tuple(primal.shape):
            raise ValueError(
                f"ForwardAccumulator: a tangent of shape {tuple(tangent.shape)} was given for a primal of "
                f"shape {tuple(primal.shape)}; each tangent must have its primal's shape"
            )
        if tangent.dtype != primal.dtype:
            tangent = bind(ir.all_ops["cast"], tangent, dtype=primal.dtype)
        at = next((k for k, p in enumerate(self._primals) if p is primal), None)
        if at is not None:  # watched again: the tangents add up, as TensorFlow's Watch aggregates them
            self._tangents[at] = bind(ir.all_ops["add"], self._tangents[at], tangent)
            return
        self._tape.watch(primal)
        self._primals.append(primal)
        self._tangents.append(tangent)

    # --- the context: on the tape stack, as a GradientTape ---------------------------
    def __enter__(self):
        if self._recording:
            raise ValueError("ForwardAccumulator: the accumulator is already recording; it cannot be "
                             "entered again inside its own context")
        tape_stack.push(self)
        self._recording = True
        return self

    def __exit__(self, *exc):
        if self._recording:
            tape_stack.pop(self)
            self._recording = False

    def _record(self, op, args, params, result):
        """Record `result = op(*args, **params)` when an operand derives from a primal (what
        bind and the other recorders call on every recorder of the tape stack)."""
        _record(self._tape, op, args, params, result, False)

    # --- reading JVPs ----------------------------------------------------------------
    def jvp(self, primals, unconnected_gradients="none"):
        """The Jacobian-vector product of `primals` (tensors computed in the context).

        Args:
          primals: a Tensor or a nested structure of Tensors.
          unconnected_gradients: "none" (default) or "zero" (a
            gradtape.UnconnectedGradients works too): what a tensor that does
            not depend on the accumulator's primals gets (None, or zeros of
            its shape and dtype).

        Returns:
          The structure of `primals`, each entry the JVP (shaped like its
          tensor) or None.

        Raises:
          ValueError: for an unknown `unconnected_gradients`.
          TypeError: if `primals` holds something other than Tensors.

        Example::

            >>> v = gradtape.Variable([1.0, 2.0])
            >>> with gradtape.ForwardAccumulator(v, gradtape.constant([1.0, 0.0])) as acc:
            ...     with gradtape.GradientTape() as tape:
            ...         y = gradtape.sum(v ** 3)
            ...     backward = tape.gradient(y, v)
            >>> acc.jvp(backward).numpy()       # forward over backward: a Hessian-vector product
            array([6., 0.])
        """
        zero = _unconnected_mode(unconnected_gradients) is UnconnectedGradients.ZERO
        flat = tree.flatten(primals)
        for i, t in enumerate(flat):
            if not isinstance(t, Tensor):
                raise TypeError(f"ForwardAccumulator.jvp: expected Tensors, got {type(t).__name__} at "
                                f"position {i}")
            if t._sym is not None:
                check_live(t)
        out = self._jvps(flat)
        if zero:
            out = [Tensor(np.zeros(t.shape, t.dtype)) if j is None else j for j, t in zip(out, flat)]
        return tree.unflatten(primals, out)

    def _jvps(self, targets) -> list:
        rec = self._tape
        if rec.held:  # NumPy arrays the ops read: unchanged since (held_arrays.py)
            rec.check_held("ForwardAccumulator.jvp")
        question = Question(rec, targets, self._primals)
        if not self._primals or all(p is None for p in question.targets):
            return [None] * len(targets)
        plan = backward_cache.lookup(rec, (*question.key, ("jvp",)), lambda: _jvp_plan(rec, question))
        if plan is None:  # the recording cannot key a cache: the same plan, uncached
            plan = _jvp_plan(rec, question)
        tangents = [self._tangents[k] for k in plan.seed_sources]
        if tape_stack.local.tapes:  # recorders see the JVPs: as calls of the plan's Function
            with _paused(self):
                return plan.record_calls(rec, tangents)
        return plan.bind(rec).run(tangents)


def _describe(primal) -> str:
    return f"{type(primal).__name__} (shape {tuple(primal.shape)}, {primal.dtype})"


class JvpParts:
    """What BackwardPlan is built from (see backward.BackwardParts), for JVPs.

    `fn` takes the recording's leaves, then one tangent per leaf of a primal
    (a variable read several times has several leaves, each with the
    variable's tangent: `seed_sources` says whose), and returns the JVP of
    each recorded target, then the targets' values (which pending targets
    take, deferred.py).
    """

    unit_seeds = False
    known = ()
    taps = {}

    def __init__(self, rec: Recording, question: Question):
        program = RecordedProgram(rec, question)
        vars_ = rec.vars
        positions = [p for p in question.targets if p is not None]
        fn = ir.Function(program.leaves, program.eqns, [vars_[p] for p in positions])
        wrt = [program.leaves.index(v) for v in program.wrt]
        joint, connected = ir.jvp(fn, wrt)
        n = len(positions)
        self.value_positions = tuple(positions)
        self.fn = ir.select_outputs(joint, [*range(n, 2 * n), *range(n)])
        self.leaves = program.leaves
        owner = {v: k for k, vs in enumerate(program.source_vars) for v in vs}
        self.seed_sources = [owner[v] for v in program.wrt]
        self.live = list(range(len(wrt)))
        self.target_types = [v.type for v in program.wrt]
        self.plan, k = [], 0
        for p in question.targets:
            self.plan.append([k] if p is not None and connected[k] else [])
            k += p is not None
        self.connected = [bool(p) for p in self.plan]


def _jvp_plan(rec: Recording, question: Question) -> BackwardPlan:
    parts = JvpParts(rec, question)
    plan = BackwardPlan(parts)
    plan.seed_sources = parts.seed_sources  # which tangent each seed is
    return plan


class _paused:
    """The accumulator off the tape stack while its own JVP is recorded by the others (its
    JVP is not an op it watches), back at its place afterwards."""

    def __init__(self, acc):
        self.acc = acc

    def __enter__(self):
        tapes = tape_stack.local.tapes
        self.at = next((i for i, t in enumerate(tapes) if t is self.acc), None)
        if self.at is not None:
            del tapes[self.at]

    def __exit__(self, *exc):
        if self.at is not None:
            tape_stack.local.tapes.insert(self.at, self.acc)
