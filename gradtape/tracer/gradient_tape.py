"""GradientTape, with tf.GradientTape's semantics.

Ops that touch a watched tensor while the tape is active are recorded as IR
equations. `gradient` differentiates the recording with the adjoint pass
and evaluates only the backward half: the forward values the tape computed
eagerly are passed in. When another tape is recording (nested tapes, or a
persistent tape still in its context), the backward pass is replayed
through gradtape ops so that it is itself recorded, giving higher orders.
"""
from __future__ import annotations

import enum
import warnings

import numpy as np

from .. import ir
from ..ir.ops.complex_parts import conj_p
from . import tape_stack, tree
from .backward import backward_for, cached_plan
from .backward_jacobian import jacobian_for
from .c_view import crecord
from .dispatch import bind
from .recording import Recording, in_creation_order
from .recording import record as _record
from .tensor import Tensor
from .trace_context import check_live
from .variable import Variable


class UnconnectedGradients(enum.Enum):
    """What `gradient` returns for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


_NONE, _ZERO = UnconnectedGradients.NONE, UnconnectedGradients.ZERO
_MODES = {m: m for m in UnconnectedGradients} | {m.value: m for m in UnconnectedGradients}

_NON_PERSISTENT_USED = (
    "A non-persistent GradientTape can only be used to compute one set of "
    "gradients (or jacobians)"
)


class GradientTape:
    """Records operations for automatic differentiation, like tf.GradientTape.

    Args:
      persistent: allow `gradient`/`jacobian` to be called more than once.
      watch_accessed_variables: watch trainable Variables as soon as they are read.

    Example::

        >>> x = gradtape.constant(3.0)
        >>> with gradtape.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> tape.gradient(y, x).numpy()
        array(6.)
    """

    # Slots, so that the C bind reads `_tape` and `_watch_accessed_variables` by offset on every op
    # (_crecord.setup_tape, below); __dict__ keeps other attributes (and subclasses') possible.
    __slots__ = ("_persistent", "_watch_accessed_variables", "_recording", "_tape", "_watched_after_use",
                 "_paused", "_warned_inside", "_used", "__dict__", "__weakref__")

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._recording = False
        self._tape: Recording | None = None
        # A used non-persistent tape's watched variables: (its recording's variables and
        # watched_integers), kept without the recording itself, sorted only when asked for
        self._watched_after_use: tuple = ([], {})
        self._paused = False  # inside this tape's stop_recording()
        self._warned_inside = False
        self._used = False  # a non-persistent tape whose recording was consumed

    # --- the context and the stack -------------------------------------------
    def __enter__(self):
        self._push_tape()
        return self

    def __exit__(self, *exc):
        if self._recording:
            self._pop_tape()

    def _push_tape(self):
        if self._recording:
            raise ValueError(
                "Tape is still recording, This can happen if you try to re-enter an "
                "already-active tape."
            )
        if self._tape is None:
            self._tape = Recording()
            self._used = False
        tape_stack.push(self)
        self._recording = True

    def _pop_tape(self):
        if not self._recording:
            raise ValueError("Tape is not recording.")
        tape_stack.pop(self)
        self._recording = False

    @staticmethod
    def current() -> "GradientTape | None":
        """The innermost tape recording in this thread, or None (ForwardAccumulators, on the
        same stack, are not tapes)."""
        for tape in reversed(tape_stack.active()):
            if isinstance(tape, GradientTape):
                return tape
        return None

    @property
    def is_recording(self) -> bool:
        """True while the tape is in its context and not paused by stop_recording."""
        return self._recording

    @property
    def persistent(self) -> bool:
        return self._persistent

    # --- recording ------------------------------------------------------------
    def watch(self, tensor):
        """Ensure `tensor` (a Tensor, Variable, or nested structure of them) is traced.

        As in TensorFlow, a watch inside this tape's `stop_recording()` is ignored
        when no other tape records in this thread, and a Variable of any dtype is
        watched (listed by `watched_variables()`), while a gradient with respect to
        an integer or bool tensor is None.

        Raises:
          ValueError: if something other than a Tensor or Variable is passed.
          RuntimeError: on a non-persistent tape already used for gradients
            (and not re-entered since).
        """
        if self._paused and not tape_stack.active():
            return
        if self._used and self._tape is None:
            # Creating a fresh recording here would silently re-arm the tape:
            # the next gradient() would answer None instead of raising.
            raise RuntimeError(
                f"{_NON_PERSISTENT_USED}; it cannot watch tensors after that. "
                "Create the tape with persistent=True, or use a new tape."
            )
        for t in tree.flatten(tensor):
            if not isinstance(t, Tensor):
                raise ValueError(
                    f"Passed in object {t!r} of type {type(t).__name__!r}, not a "
                    "gradtape Tensor or Variable; wrap arrays with gradtape.constant first."
                )
            if t.is_abstract:
                raise ValueError(
                    "GradientTape.watch: cannot watch an abstract (traced) tensor; "
                    "inside @differentiable functions use gradtape.grad instead."
                )
            if self._tape is None:
                self._tape = Recording()
            if not ir.is_float(t.dtype):
                warnings.warn(
                    "The dtype of the watched tensor must be floating (e.g. float32 or "
                    f"float64), got {t.dtype}; its gradient will be None.",
                    stacklevel=2,
                )
                if isinstance(t, Variable):
                    self._tape.watch_integer_variable(t)
                continue
            self._tape.watch(t)

    def _record(self, op, args, params, result):
        """Record `result = op(*args, **params)` if one of the operands is watched (a
        trainable Variable read now becomes watched, unless watch_accessed_variables is off)."""
        _record(self._tape, op, args, params, result, self._watch_accessed_variables)

    def stop_recording(self):
        """A context in which ops are not recorded on this tape (and, when no other tape
        records, `watch` is ignored), as TensorFlow's.

        Returns:
          A context manager; the tape records again when it exits.

        Raises:
          RuntimeError: if the tape is not currently recording.

        Example::

            >>> x = gradtape.constant(4.0)
            >>> with gradtape.GradientTape() as tape:
            ...     tape.watch(x)
            ...     with tape.stop_recording():
            ...         y = x ** 2
            >>> print(tape.gradient(y, x))
            None
        """
        return _StopRecording(self)

    def reset(self):
        """Clear everything recorded (and watched), as if the context were exited and
        re-entered, without leaving it.

        Raises:
          ValueError: if the tape is not recording.

        Example::

            >>> v = gradtape.Variable(1.0)
            >>> with gradtape.GradientTape() as tape:
            ...     loss = v * v
            ...     tape.reset()
            ...     loss = loss + 3.0 * v       # only this is recorded now
            >>> float(tape.gradient(loss, v))
            3.0
        """
        self._pop_tape()
        self._tape = None
        self._push_tape()

    def watched_variables(self) -> tuple:
        """The Variables this tape watches, as TensorFlow lists them.

        Returns:
          A tuple of the Variables read on the tape (trainable ones, while
          `watch_accessed_variables`) or watched explicitly, of any dtype, in
          the order the variables were created. A used non-persistent tape
          still answers.

        Example::

            >>> a, b = gradtape.Variable(1.0), gradtape.Variable(2.0)
            >>> with gradtape.GradientTape() as tape:
            ...     y = b * a
            >>> tape.watched_variables() == (a, b)
            True
        """
        if self._tape is None:
            return in_creation_order(*self._watched_after_use)
        return in_creation_order(self._tape.variables, self._tape.watched_integers)

    def append(self, other: "GradientTape") -> "GradientTape":
        """Add what `other` recorded to this tape, so that one `gradient` call sees the ops of both.

        Two tapes recorded apart (in two threads, say, each on its own part of a
        loss) become one: differentiate the parts' sum by passing both targets,
        `tape.gradient([part1, part2], sources)`. A tensor or variable watched
        on both tapes is one source, its gradient the sum over both parts.
        Values of one tape used on the other are constants there: record each
        part from the sources up on its own tape.

        Args:
          other: a GradientTape that has stopped recording and has not been used
            (a non-persistent one); its recording moves here and it cannot be
            used afterwards.

        Returns:
          This tape.

        Raises:
          ValueError: `other` is this tape or still recording.
          RuntimeError: either tape was used already (non-persistent).
          TypeError: `other` is not a GradientTape.

        Example::

            >>> w = gradtape.Variable([1.0, 2.0])
            >>> with gradtape.GradientTape() as t1:
            ...     a = gradtape.sum(w * w)
            >>> with gradtape.GradientTape() as t2:
            ...     b = gradtape.sum(3.0 * w)
            >>> t1.append(t2).gradient([a, b], w).numpy()
            array([5., 7.])
        """
        if not isinstance(other, GradientTape):
            raise TypeError(f"GradientTape.append: expected a GradientTape, got {type(other).__name__}")
        if other is self:
            raise ValueError("GradientTape.append: a tape cannot be appended to itself")
        if other._recording:
            raise ValueError("GradientTape.append: the other tape is still recording; append it after its "
                             "`with` block has ended")
        if other._tape is None:
            raise RuntimeError(f"GradientTape.append: the other tape was used already. {_NON_PERSISTENT_USED}")
        if self._tape is None and not self._used:  # a tape never entered: it starts empty
            self._tape = Recording()
        self._check_usable()
        self._tape.append(other._tape)
        other._watched_after_use = (other._tape.variables, other._tape.watched_integers)
        other._tape, other._used = None, True
        return self

    # --- differentiation --------------------------------------------------------
    def _check_usable(self):
        # First, as in TF: a used tape says so whatever else is wrong with the call.
        if self._tape is None:
            raise RuntimeError(_NON_PERSISTENT_USED)

    def _begin_use(self, what: str):
        self._check_usable()
        if self._tape.held:  # NumPy arrays the ops read: unchanged since (held_arrays.py)
            self._tape.check_held(f"GradientTape.{what}")
        if self._recording:
            if not self._persistent:
                self._pop_tape()
            elif not self._warned_inside:
                self._warned_inside = True
                warnings.warn(
                    "Calling GradientTape.gradient on a persistent tape inside its "
                    "context records the gradient computation on the tape itself, "
                    "which costs time and memory. Do it only for higher-order "
                    "derivatives.",
                    stacklevel=3,
                )
        rec = self._tape
        if not self._persistent:
            self._watched_after_use = (rec.variables, rec.watched_integers)
            self._tape = None
            self._used = True
        return rec

    def gradient(
        self,
        target,
        sources,
        output_gradients=None,
        unconnected_gradients=UnconnectedGradients.NONE,
    ):
        """Gradient of `target` with respect to `sources`, from what was recorded.

        Args:
          target: a Tensor or a nested structure of Tensors; several targets
            are summed, and a non-scalar target counts as the sum of its elements.
          sources: a Tensor, Variable or nested structure of them.
          output_gradients: optional cotangents, one per target (same structure),
            weighting each target instead of ones.
          unconnected_gradients: "none" (default) or "zero": what an unconnected
            source gets.

        Returns:
          Gradients with the structure of `sources`; each has its source's
          shape and dtype, or is None for an unconnected source.

        Raises:
          RuntimeError: when called a second time on a non-persistent tape.
          ArrayModifiedError: a NumPy array passed to a recorded op was modified
            in place since (the tape reads it now).
          TypeError: if `target` is None or holds something other than Tensors,
            or `sources` holds something other than Tensors and Variables.
          ValueError: for an unknown `unconnected_gradients`, or
            `output_gradients` that do not match the targets.

        A Variable target stands for the variable itself, not a value read from
        it (as TensorFlow differentiates the variable's handle): its gradient
        is ones (or its output_gradient) for that same Variable among the
        sources, whether or not it was read, and unconnected for every other
        source.
        """
        # A training loop's case first: targets recorded Tensors (one, or a flat list or
        # tuple), sources watched (likewise), no output_gradients, no tape recording
        # once this one is used, and the backward plan cached (backward.cached_plan).
        # It skips what the general path below does to find the plan, and gives the same
        # gradients; anything else, and every error, takes the general path.
        rec = self._tape
        if rec is not None and output_gradients is None and (
            unconnected_gradients is _NONE or unconnected_gradients is _ZERO
        ):
            structure = sources.__class__
            if structure is list or structure is tuple:
                flat_sources = sources
            elif isinstance(sources, (dict, list, tuple)):  # nested: the general path
                flat_sources = ()
            else:
                flat_sources = (sources,)
            tapes = tape_stack.local.tapes
            # This tape itself is popped by _begin_use (a persistent one warns and replays).
            if flat_sources and (not tapes or (tapes == [self] and not self._persistent)):
                cls = target.__class__
                plan = cached_plan(rec, target if cls is list or cls is tuple else (target,), flat_sources)
                if plan is not None:
                    # _begin_use, for the case checked above
                    if rec.held:
                        rec.check_held("GradientTape.gradient")
                    if tapes:
                        self._pop_tape()
                    if not self._persistent:
                        self._watched_after_use = (rec.variables, rec.watched_integers)
                        self._tape = None
                        self._used = True
                    grads = plan.gradients(rec)
                    grads = _tensorflow_convention(grads)
                    if unconnected_gradients is _ZERO:
                        grads = [_zeros_if_none(g, s) for g, s in zip(grads, flat_sources)]
                    if structure is list:
                        return grads
                    return tuple(grads) if structure is tuple else grads[0]
        self._check_usable()
        unconnected = _unconnected_mode(unconnected_gradients)
        if target is None:
            raise TypeError(
                "Argument `target` should be a list or nested structure of Tensors or "
                "Variables to be differentiated, but received None."
            )
        flat_targets = tree.flatten(target)
        for i, t in enumerate(flat_targets):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"GradientTape.gradient: targets must be Tensors, got "
                    f"{type(t).__name__} at position {i}; a value computed outside "
                    "gradtape ops has no recorded history to differentiate."
                )
            if t._sym is not None:
                check_live(t)  # a tensor leaked out of a finished trace was never recorded
        flat_sources = _check_sources(sources)
        seeds = _tensorflow_convention(_seeds(flat_targets, output_gradients))
        rec = self._begin_use("gradient")
        recorded = [k for k, t in enumerate(flat_targets) if not isinstance(t, Variable)]
        if recorded:
            backward = backward_for(rec, [flat_targets[k] for k in recorded], flat_sources,
                                    unit_seeds=output_gradients is None)
            grads = backward.run([seeds[k] for k in recorded])
        else:
            grads = [None] * len(flat_sources)
        if len(recorded) < len(flat_targets):
            grads = _with_variable_targets(grads, flat_targets, seeds, flat_sources)
        grads = _tensorflow_convention(grads)
        if unconnected is UnconnectedGradients.ZERO:
            grads = [_zeros_if_none(g, s) for g, s in zip(grads, flat_sources)]
        return tree.unflatten(sources, grads)

    def jacobian(
        self,
        target,
        sources,
        unconnected_gradients=UnconnectedGradients.NONE,
        parallel_iterations=None,
        experimental_use_pfor=True,
    ):
        """Jacobian of a single tensor `target` with respect to each of `sources`.

        All rows come from one run of the backward function vectorized over the
        identity (the batching pass), compiled and cached like a gradient's
        backward; `experimental_use_pfor=False` runs one backward per row
        instead (and, as in TensorFlow, needs a persistent tape).

        Args:
          target: a Tensor (a Variable target is the variable itself: the
            identity with respect to that Variable).
          sources: a Tensor, Variable or nested structure of them.
          unconnected_gradients: "none" (default) or "zero", for sources the
            target does not depend on.
          parallel_iterations: accepted for TensorFlow's signature; unused.
          experimental_use_pfor: False for one backward run per row.

        Returns:
          The structure of `sources`, each entry of shape `target.shape +
          source.shape` (or None for an unconnected source). For complex
          targets or sources, entry i is TensorFlow's `gradient` of target
          element i with output gradient 1 (the conjugate of JAX's gradient
          of its real part), computed in reverse mode (docs/complex.md).

        Raises:
          RuntimeError: on a used non-persistent tape, or with
            `experimental_use_pfor=False` on a non-persistent tape (as TensorFlow).
          ArrayModifiedError: as `gradient`.
          TypeError: if `target` is not a Tensor, or a source is not a Tensor.

        Example::

            >>> x = gradtape.constant([1.0, 2.0])
            >>> with gradtape.GradientTape() as tape:
            ...     tape.watch(x)
            ...     y = x * x
            >>> tape.jacobian(y, x).numpy()
            array([[2., 0.],
                   [0., 4.]])
        """
        self._check_usable()
        unconnected = _unconnected_mode(unconnected_gradients)
        if not experimental_use_pfor and not self._persistent:
            raise RuntimeError(
                "GradientTape must be created with persistent=True to compute the "
                "jacobian with eager execution enabled and with experimental_use_pfor "
                "set to False."
            )
        if not isinstance(target, Tensor):
            raise TypeError(f"GradientTape.jacobian: target must be a Tensor, got {type(target).__name__}")
        flat_sources = _check_sources(sources)
        rec = self._begin_use("jacobian")
        if isinstance(target, Variable):  # the variable itself (see `gradient`)
            return tree.unflatten(sources, [_identity_jacobian(target, s, unconnected) for s in flat_sources])
        n = target.size
        backward = jacobian_for(rec, target, flat_sources) if experimental_use_pfor and n else None
        if backward is not None:  # one cached plan, as a staged Jacobian (backward_jacobian.py)
            stacked = backward.run(None)
        elif experimental_use_pfor and n:
            # One vectorized backward over the identity: every row in one run.
            backward = backward_for(rec, [target], flat_sources, batch=n)
            seeds = np.eye(n, dtype=target.dtype).reshape((n,) + target.shape)
            rows = backward.run([seeds]) if any(backward.connected) else [None] * len(flat_sources)
            stacked = [None if r is None else bind(ir.all_ops["reshape"], r, shape=target.shape + s.shape)
                       for r, s in zip(rows, flat_sources)]
        else:
            backward = backward_for(rec, [target], flat_sources)
            rows = []
            for i in range(n):
                seed = np.zeros(n, dtype=target.dtype)
                seed[i] = 1
                rows.append(backward.run([seed.reshape(target.shape)]))
            stacked = [_stack_rows([r[k] for r in rows], target.shape + s.shape) if n and backward.connected[k]
                       else None for k, s in enumerate(flat_sources)]
        out = []
        for k, s in enumerate(flat_sources):
            if backward.connected[k] and n:
                out.append(stacked[k])
            elif backward.connected[k]:
                out.append(Tensor(np.zeros(target.shape + s.shape, s.dtype)))
            elif unconnected is UnconnectedGradients.ZERO:
                out.append(Tensor(np.zeros(target.shape + s.shape, s.dtype)))
            else:
                out.append(None)
        return tree.unflatten(sources, _tensorflow_convention(out))

    def batch_jacobian(
        self,
        target,
        source,
        unconnected_gradients=UnconnectedGradients.NONE,
        parallel_iterations=None,
        experimental_use_pfor=True,
    ):
        """Per-example Jacobians: result[i] is the Jacobian of target[i] w.r.t. source[i].

        As in TensorFlow, a source the target does not depend on gets zeros,
        whatever `unconnected_gradients` says. Unlike TensorFlow, rank-1
        tensors are accepted (one scalar per example).

        Args:
          target: a Tensor of shape [b, y1, ...]; target[i] must depend only
            on source[i].
          source: a Tensor or Variable of shape [b, x1, ...].
          unconnected_gradients: checked ("none" or "zero"); see above.
          parallel_iterations: accepted for TensorFlow's signature; unused.
          experimental_use_pfor: False for one backward run per row of an example.

        Returns:
          A Tensor of shape [b, y1, ..., x1, ...].

        Raises:
          ValueError: if the first dimensions of target and source differ.
          RuntimeError: on a used non-persistent tape, or with
            `experimental_use_pfor=False` on a non-persistent tape.
          ArrayModifiedError: as `gradient`.

        Example::

            >>> x = gradtape.constant([[1.0, 2.0], [3.0, 4.0]])
            >>> with gradtape.GradientTape() as tape:
            ...     tape.watch(x)
            ...     y = x * x
            >>> tape.batch_jacobian(y, x).numpy()[1]
            array([[6., 0.],
                   [0., 8.]])
        """
        self._check_usable()
        _unconnected_mode(unconnected_gradients)  # still reject unknown values
        if not isinstance(target, Tensor) or not isinstance(source, Tensor):
            raise TypeError("GradientTape.batch_jacobian: target and source must be Tensors")
        if target.ndim < 1 or source.ndim < 1 or target.shape[0] != source.shape[0]:
            raise ValueError(
                f"Need first dimension of target shape ({target.shape}) and source "
                f"shape ({source.shape}) to match."
            )
        if not experimental_use_pfor and not self._persistent:
            raise RuntimeError(
                "GradientTape must be created with persistent=True to compute the "
                "batch_jacobian with eager execution enabled and with "
                "experimental_use_pfor set to False."
            )
        rec = self._begin_use("batch_jacobian")
        if isinstance(target, Variable):  # the variable itself (see `gradient`)
            if source is target and ir.is_float(target.dtype):
                row = int(np.prod(target.shape[1:], dtype=np.int64))
                eye = np.eye(row, dtype=target.dtype).reshape(target.shape[1:] * 2)
                return Tensor(np.broadcast_to(eye, target.shape + target.shape[1:]).copy())
            return Tensor(np.zeros(target.shape + source.shape[1:], source.dtype))
        b = target.shape[0]
        row = int(np.prod(target.shape[1:], dtype=np.int64))
        vectorized = experimental_use_pfor and row > 0
        backward = backward_for(rec, [target], [source], batch=row if vectorized else None)
        out_shape = target.shape + source.shape[1:]
        if not backward.connected[0]:
            # TF returns zeros here even for UnconnectedGradients.NONE (kept in TF
            # "to maintain compatibility with the previous behavior").
            return Tensor(np.zeros(out_shape, source.dtype))
        if not row:
            return Tensor(np.zeros(out_shape, source.dtype))
        if vectorized:
            # One vectorized backward: seed j is 1 at position j of every example.
            seeds = np.zeros((row, b, row), dtype=target.dtype)
            seeds[np.arange(row), :, np.arange(row)] = 1
            jac = backward.run([seeds.reshape((row,) + target.shape)])[0]  # [row, b, x...]
        else:
            cols = []
            for j in range(row):
                seed = np.zeros((b, row), dtype=target.dtype)
                seed[:, j] = 1
                cols.append(backward.run([seed.reshape(target.shape)])[0])
            jac = _stack_rows(cols, (row,) + source.shape)  # [row, b, x...]
        perm = (1, 0) + tuple(range(2, jac.ndim))
        jac = bind(ir.all_ops["transpose"], jac, perm=perm)
        return _tensorflow_convention([bind(ir.all_ops["reshape"], jac, shape=out_shape)])[0]


def _with_variable_targets(grads, flat_targets, seeds, flat_sources) -> list:
    """`grads` plus what Variable targets give: d(v)/d(v) is ones (or v's seed) for the
    same floating Variable among the sources; nothing for any other source."""
    grads = list(grads)
    for t, seed in zip(flat_targets, seeds):
        if not isinstance(t, Variable) or not ir.is_float(t.dtype):
            continue
        if seed is None:
            seed = Tensor(np.ones(t.shape, t.dtype))
        elif not isinstance(seed, Tensor):
            seed = Tensor(np.asarray(seed, t.dtype))
        elif seed.dtype != t.dtype:
            seed = bind(ir.all_ops["cast"], seed, dtype=t.dtype)
        for j, s in enumerate(flat_sources):
            if s is t:  # through gradtape ops: an outer tape may differentiate a seed
                grads[j] = seed if grads[j] is None else bind(ir.all_ops["add"], grads[j], seed)
    return grads


def _identity_jacobian(target, source, unconnected):
    """jacobian(target, source) for a Variable target: the identity for that same floating
    Variable, else unconnected (None, or zeros)."""
    shape = target.shape + source.shape
    if source is target and ir.is_float(target.dtype):
        return Tensor(np.eye(target.size, dtype=target.dtype).reshape(shape))
    return Tensor(np.zeros(shape, source.dtype)) if unconnected is UnconnectedGradients.ZERO else None


def _stack_rows(rows, shape) -> Tensor:
    """Stack per-row gradients into one Tensor of `shape`, through gradtape ops,
    so that a tape recording around this Jacobian can differentiate it."""
    flat = [bind(ir.all_ops["reshape"], r, shape=(1, r.size)) for r in rows]
    stacked = flat[0] if len(flat) == 1 else bind(ir.all_ops["concatenate"], *flat, axis=0)
    return bind(ir.all_ops["reshape"], stacked, shape=tuple(shape))


class _StopRecording:
    def __init__(self, tape):
        self.tape = tape

    def __enter__(self):
        if self.tape._tape is None:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        self.tape._pop_tape()
        self.tape._paused = True

    def __exit__(self, *exc):
        self.tape._paused = False
        self.tape._push_tape()


def _unconnected_mode(value) -> UnconnectedGradients:
    if value is UnconnectedGradients.NONE:  # the default
        return value
    mode = _MODES.get(value) if isinstance(value, (str, UnconnectedGradients)) else None
    if mode is not None:  # the common spellings, without an Enum lookup
        return mode
    try:
        return UnconnectedGradients(value.value if isinstance(value, UnconnectedGradients) else value)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {value!r}") from None


def _check_sources(sources) -> list:
    flat = tree.flatten(sources)
    for i, s in enumerate(flat):
        if not isinstance(s, Tensor):
            raise TypeError(
                f"GradientTape: sources must be Tensors or Variables, got "
                f"{type(s).__name__} at position {i}"
            )
    return flat


def _seeds(flat_targets, output_gradients) -> list:
    if output_gradients is None:
        return [None] * len(flat_targets)
    flat = tree.flatten(output_gradients)
    if len(flat) != len(flat_targets):
        raise ValueError(
            f"output_gradients has {len(flat)} entries but there are "
            f"{len(flat_targets)} targets; give one per target (or None)"
        )
    seeds = []
    for g, t in zip(flat, flat_targets):
        if g is None:
            seeds.append(None)
            continue
        if not isinstance(g, Tensor):
            g = np.asarray(g)
        # Not getattr(t, "shape", np.shape(t)): the default is evaluated
        # eagerly, and numpy.shape of a Tensor is refused by NumPy dispatch.
        shape = t.shape if isinstance(t, Tensor) else np.shape(t)
        if g.shape != tuple(shape):
            raise ValueError(
                f"output_gradients: an entry of shape {g.shape} was given for a "
                f"target of shape {tuple(shape)}; each must match its target's shape"
            )
        seeds.append(g)  # a Tensor stays one: outer tapes may differentiate through it
    return seeds


def _tensorflow_convention(values) -> list:
    """Complex gradients as TensorFlow gives them: the conjugates of JAX's, which the
    backward pass computes (docs/complex.md). Applied to the output gradients on the way
    in and to the gradients on the way out, so the gradient of a real loss is
    d loss/dx + i d loss/dy and a holomorphic f's is conj(f'(z)) times the output gradient."""
    return [bind(conj_p, v) if v is not None and v.dtype.kind == "c" else v for v in values]


def _zeros_if_none(grad, source):
    """UnconnectedGradients.ZERO: as TF, zeros_like(source) (any dtype) for an unconnected source."""
    return Tensor(np.zeros(source.shape, source.dtype)) if grad is None else grad


if crecord is not None:
    crecord.setup_tape(GradientTape)
