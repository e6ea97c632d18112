"""Optimizer: the base class of SGD, Adam, AdamW and RMSprop.

One update rule per optimizer (`_update_leaf`, on one parameter) serves
three ways of training:

- `apply_gradients(zip(grads, variables))`, Keras style: the optimizer
  keeps one set of slots (momentum, velocity, ...) per Variable and an
  `iterations` counter; the rule runs on NumPy arrays, in its in-place form
  `_update_arrays` (the slots are the optimizer's own arrays, so they are
  updated in place; a Variable's array never is, as tapes may hold it), so
  the update costs about what the same NumPy code would.
- `init(params) -> state` and `update(grads, state, params) -> (params,
  state)`, functional, on nested lists/tuples/dicts of arrays: nothing is
  mutated, and on abstract tensors the rule traces, so an update can live
  inside `@differentiable` code and be compiled with the loss.
- `gradtape.train_step(loss_fn, optimizer)`, which compiles loss, gradient
  and this update into one native call and shares the Keras-style slots.

The learning rate is evaluated at `iterations` (the number of updates made
before this one) and the update is number `iterations + 1`, as in Keras.
"""
from __future__ import annotations

import functools
import numbers
import warnings
import weakref

import numpy as np

from ..tracer import tree
from ..tracer.tensor import Tensor
from . import checks, structure
from ._generic import increment, is_abstract, scalar_for, step_for


class Optimizer:
    """Base class: the learning rate, the slots, and the three ways to apply the rule.

    Args:
      learning_rate: a float, or a callable `step -> float` (e.g. a schedule
        from `gradtape.optimizers.schedules`), called with `iterations`.
      weight_decay: if set, decoupled weight decay as Keras applies it: before
        each update, `p = p - p * weight_decay * learning_rate`.
      check_finite: raise NonFiniteGradientError (a FloatingPointError) when a
        gradient holds NaN or inf, before anything is updated.
      name: used in messages.

    Subclasses define `_slot_names()` and `_update_leaf(g, p, slots, lr, step)`,
    and for speed `_update_arrays`, the same rule in in-place NumPy.
    """

    def __init__(self, learning_rate, *, weight_decay=None, check_finite=False, name=None):
        self.name = name or type(self).__name__
        if not (callable(learning_rate) or _is_real(learning_rate)):
            raise TypeError(
                f"{self.name}: learning_rate must be a float or a callable step -> float "
                f"(e.g. gradtape.optimizers.schedules.ExponentialDecay), got "
                f"{type(learning_rate).__name__} {learning_rate!r}"[:300]
            )
        if weight_decay is not None and not _is_real(weight_decay):
            raise TypeError(f"{self.name}: weight_decay must be a float or None, got {weight_decay!r}")
        self.learning_rate = float(learning_rate) if _is_real(learning_rate) else learning_rate
        self.weight_decay = None if weight_decay is None else float(weight_decay)
        self.check_finite = bool(check_finite)
        self._iterations = 0
        # id(parameter) -> (weakref to it, {slot name: ndarray}, {slot name: weakref to the array made here})
        self._slots = {}

    # --- the rule (subclasses) ------------------------------------------------------
    def _slot_names(self) -> tuple:
        """Names of the per-parameter state arrays this configuration needs."""
        return ()

    def _update_leaf(self, g, p, slots: dict, lr, step):
        """One parameter's update: `(new_p, new_slots)`.

        `lr` and `step` (the 1-based update number) are scalars already in
        `p`'s dtype; `g`, `p` and the slots are NumPy arrays or Tensors.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement _update_leaf")

    def _update_arrays(self, g, p, slots: dict, lr: float, step: float) -> np.ndarray:
        """`_update_leaf` on NumPy arrays of rank >= 1, for apply_gradients: returns the new parameter.

        The slots are arrays only this optimizer holds, so the rule updates
        them in place; the result must be a fresh array (the Variable adopts
        it without a copy); `g` and `p` are never written. The built-in rules
        override this with the arithmetic of `_update_leaf` in the same order
        (equal results to the last bit) and fewer temporaries, as it runs on
        every eager step. This default runs `_update_leaf`.
        """
        new_p, new_slots = self._update_leaf(g, p, slots, lr, step)
        slots.update(new_slots)  # results, not updated in place: _private_slots copies them before a rule would
        return np.array(new_p, dtype=p.dtype)

    @property
    def slot_names(self) -> tuple:
        """The slots each parameter gets, e.g. `('momentum', 'velocity')` for Adam."""
        return self._slot_names()

    # --- learning rate and counters -------------------------------------------------
    @property
    def iterations(self) -> int:
        """How many updates `apply_gradients` and train steps have made."""
        return self._iterations

    @iterations.setter
    def iterations(self, value: int):
        self._iterations = int(value)

    def learning_rate_at(self, iterations):
        """The learning rate for the update made after `iterations` updates (a float,
        or a traced scalar when `iterations` is one)."""
        lr = self.learning_rate
        return lr(iterations) if callable(lr) else lr

    def _apply_leaf(self, g, p, slots, lr, iterations):
        """Weight decay (if any), then the rule, with lr and step in `p`'s dtype."""
        lr = scalar_for(lr, p)
        step = step_for(iterations, p)
        if self.weight_decay is not None:
            p = p - p * self.weight_decay * lr
        p, slots = self._update_leaf(g, p, slots, lr, step)
        if not isinstance(p, Tensor):  # NumPy turns 0-d results into scalars; keep arrays
            p = np.asarray(p)
            slots = {k: np.asarray(s) for k, s in slots.items()}
        return p, slots

    # --- Keras style ------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars) -> int:
        """Update Variables in place from their gradients, as Keras's `apply_gradients`.

        Pairs whose gradient is None are skipped with a warning naming their
        variables (as Keras does); the slots of each variable are created
        (zeros) on its first update. Everything is checked before any
        variable changes.

        Args:
          grads_and_vars: an iterable of `(gradient, Variable)` pairs, e.g.
            `zip(tape.gradient(loss, params), params)`. Gradients are Tensors or
            NumPy arrays of exactly their variable's shape and dtype.

        Returns:
          The new `iterations` count.

        Raises:
          TypeError: something other than a Variable among the variables; a
            non-float variable; a gradient of another dtype than its variable
            (the message names the variable and its index and shows both).
          ValueError: a gradient of another shape; no gradient at all.
          NonFiniteGradientError: with `check_finite`, a gradient holds NaN or inf.

        Example::

            >>> w = gradtape.Variable(np.ones(3), name="w")
            >>> opt = gradtape.optimizers.SGD(learning_rate=0.1)
            >>> with gradtape.GradientTape() as tape:
            ...     loss = gradtape.sum(w * w)
            >>> opt.apply_gradients(zip([tape.gradient(loss, w)], [w]))
            1
            >>> w.numpy()
            array([0.8, 0.8, 0.8])
        """
        updates, skipped = checks.gradient_arrays(self.name, grads_and_vars)
        if skipped:
            warnings.warn(
                f"{self.name}.apply_gradients: Gradients do not exist for variables "
                f"{[v.name for v in skipped]} when minimizing the loss; they are left unchanged.",
                stacklevel=2,
            )
        iterations = self._iterations
        if self.check_finite:
            bad = checks.first_non_finite([g for _, g, _ in updates])
            if bad is not None:
                i, g, v = updates[bad]
                where = f"{self.name}.apply_gradients"
                raise checks.non_finite_error(where, checks.describe_pair(v, i), g, iterations)
        lr = self.learning_rate_at(iterations)
        if type(lr) is not float:  # e.g. a schedule's Tensor or NumPy scalar
            lr = scalar_for(lr)
        step = iterations + 1.0
        has_slots = bool(self._slot_names())
        decay = self.weight_decay
        for _, g, v in updates:
            slots = self._private_slots(v) if has_slots else {}
            p = v._value
            if not p.ndim:  # NumPy makes scalars of 0-d results, which the in-place rules cannot write into
                p, new_slots = self._apply_leaf(g, p, slots, lr, iterations)
                v._set(p)
                slots.update(new_slots)
                continue
            if decay is not None:  # p - p * weight_decay * lr, in _apply_leaf's order
                decayed = p * decay
                decayed *= lr
                p = np.subtract(p, decayed, out=decayed)
            v._adopt(self._update_arrays(g, p, slots, lr, step))
        self._iterations = iterations + 1
        return self._iterations

    def _private_slots(self, variable) -> dict:
        """The slots of `variable`, each an array that only this optimizer holds, for a rule to update
        in place. An array put there from outside (train_step's results) is copied first: whoever
        made it may hold it too."""
        _, slots, made_here = self._slot_entry(variable)
        for name, ref in made_here.items():
            if slots[name] is not ref():
                own = slots[name] = np.array(slots[name])
                made_here[name] = weakref.ref(own)
        return slots

    def _slot_entry(self, param):
        """`(weakref to param, slots, weakrefs to the slot arrays made here)` for `param` (a Variable
        or a NumPy array), made on first use (see _private_slots).

        Held by weak reference, so the slots of a parameter go when it does.
        """
        key = id(param)
        entry = self._slots.get(key)
        if entry is None or entry[0]() is not param:
            ref = weakref.ref(param, functools.partial(_forget, self._slots, key))
            slots = {name: np.zeros(param.shape, param.dtype) for name in self._slot_names()}
            entry = (ref, slots, {name: weakref.ref(s) for name, s in slots.items()})
            self._slots[key] = entry
        return entry

    def get_slot(self, variable, name: str) -> np.ndarray:
        """A copy of the slot `name` (e.g. 'momentum') of `variable` (zeros before its first update).

        Raises:
          KeyError: `name` is not a slot of this optimizer's configuration.
        """
        if name not in self._slot_names():
            raise KeyError(f"{self.name} has no slot {name!r}; its slots are {self._slot_names()}")
        return self._slot_entry(variable)[1][name].copy()

    # --- pickling ---------------------------------------------------------------------
    def __getstate__(self):
        """Its settings, iterations and slots. Slots belong to parameter objects: pickle the optimizer
        together with its parameters (`pickle.dumps((params, opt))`) and the unpickled optimizer finds
        the slots of the unpickled parameters; a parameter it alone held is gone after unpickling."""
        state = {k: v for k, v in self.__dict__.items() if k != "_slots"}
        state["_slot_values"] = [(entry[0](), entry[1]) for entry in list(self._slots.values())
                                 if entry[0]() is not None]
        return state

    def __setstate__(self, state):
        slot_values = state.pop("_slot_values")
        self.__dict__.update(state)
        self._slots = {}
        for param, slots in slot_values:
            ref = weakref.ref(param, functools.partial(_forget, self._slots, id(param)))
            self._slots[id(param)] = (ref, slots, {name: weakref.ref(a) for name, a in slots.items()})

    # --- functional -------------------------------------------------------------------
    def init(self, params) -> dict:
        """The functional state for `params`: `{'iterations': 0, <slot>: zeros like params, ...}`.

        Args:
          params: an array or Tensor, or nested lists/tuples/dicts of them (float dtypes).

        Returns:
          A dict: 'iterations' (an int64 0-d array) and one tree of zeros shaped
          like `params` per slot name.

        Example::

            >>> opt = gradtape.optimizers.Adam(0.01)
            >>> sorted(opt.init([np.ones(2)]))
            ['iterations', 'momentum', 'velocity']
        """
        where = f"{self.name}.init"
        leaves = tree.flatten(params)
        for k, (p, path) in enumerate(zip(leaves, tree.leaf_paths(params))):
            if not hasattr(p, "shape"):
                leaves[k] = p = np.asarray(p, dtype=np.float64) if _is_real(p) else p
            if not hasattr(p, "shape"):
                raise TypeError(f"{where}: {checks.describe_path(path, k)} is a {type(p).__name__}, not an array")
            checks.check_float_parameter(where, checks.describe_path(path, k, p), p)
        state = {"iterations": np.zeros((), np.int64)}
        for name in self._slot_names():
            state[name] = tree.unflatten(params, [np.zeros(p.shape, p.dtype) for p in leaves])
        return state

    def update(self, grads, state, params):
        """One functional update: `(new_params, new_state)`; nothing is mutated.

        Written with gradtape operations, so it runs eagerly on NumPy arrays
        (NumPy results) or Tensors, and traces inside `@differentiable` code
        (a learning-rate callable is then called with a traced step: the
        schedules in `gradtape.optimizers.schedules` trace; see there).

        Args:
          grads: gradients with the structure of `params`; a None leaf leaves
            its parameter and slots unchanged.
          state: from `init` (or a previous `update`).
          params: the current parameters.

        Returns:
          `(new_params, new_state)`, with the structures of `params` and `state`.

        Raises:
          ValueError/TypeError: structures that differ, or a gradient whose
            shape/dtype differs from its parameter's (named by its path).
          NonFiniteGradientError: with `check_finite`, a concrete gradient
            holding NaN or inf (traced values cannot be checked while tracing:
            `gradtape.train_step(..., check_finite=True)` checks compiled steps).

        Example::

            >>> opt = gradtape.optimizers.SGD(0.1)
            >>> params = {"w": np.ones(2)}
            >>> state = opt.init(params)
            >>> params, state = opt.update({"w": np.array([1.0, -1.0])}, state, params)
            >>> params["w"], int(state["iterations"])
            (array([0.9, 1.1]), 1)
        """
        where = f"{self.name}.update"
        p_leaves, g_leaves, slot_leaves, iterations = self._unpack(where, grads, state, params)
        paths = tree.leaf_paths(params)
        for k, (g, p) in enumerate(zip(g_leaves, p_leaves)):
            if g is not None:
                checks.check_gradient_fits(where, checks.describe_path(paths[k], k, p), g, p)
        if self.check_finite and not is_abstract(iterations):
            concrete = [None if g is None or is_abstract(g) else g for g in g_leaves]
            bad = checks.first_non_finite(concrete)
            if bad is not None:
                who = checks.describe_path(paths[bad], bad, p_leaves[bad])
                raise checks.non_finite_error(where, who, concrete[bad], int(np.asarray(iterations)))
        lr = self.learning_rate_at(iterations)
        new_p, new_slots = self._update_flat(g_leaves, p_leaves, slot_leaves, lr, iterations)
        new_state = {"iterations": increment(iterations)}
        for name in self._slot_names():
            new_state[name] = tree.unflatten(params, [s[name] for s in new_slots])
        return tree.unflatten(params, new_p), new_state

    def _update_flat(self, g_leaves, p_leaves, slot_leaves, lr, iterations):
        """The rule over flat leaves: `(new params, new slot dicts)`; a None gradient keeps both."""
        new_p, new_slots = [], []
        for g, p, slots in zip(g_leaves, p_leaves, slot_leaves):
            if g is None:
                new_p.append(p)
                new_slots.append(slots)
                continue
            p2, s2 = self._apply_leaf(g, p, slots, lr, iterations)
            new_p.append(p2)
            new_slots.append(s2)
        return new_p, new_slots

    def _unpack(self, where, grads, state, params):
        """Flatten and match up params, grads and the state's slots (errors name what differs)."""
        if not isinstance(state, dict) or "iterations" not in state:
            raise TypeError(
                f"{where}: state must be the dict returned by {self.name}.init (or update), "
                f"got {type(state).__name__}"
            )
        names = self._slot_names()
        missing = [n for n in names if n not in state]
        if missing:
            raise KeyError(
                f"{where}: state has no {missing}; it was not made by this optimizer's init "
                f"(expected keys {['iterations', *names]}, got {sorted(state)})"
            )
        p_leaves = tree.flatten(params)
        g_leaves = tree.flatten(grads)
        structure.check_same(where, "grads", grads, params)
        slot_trees = [tree.flatten(state[n]) for n in names]
        for n, leaves in zip(names, slot_trees):
            if len(leaves) != len(p_leaves):
                raise ValueError(
                    f"{where}: state[{n!r}] has {len(leaves)} arrays but params has {len(p_leaves)}; "
                    "make the state with init(params) for these params"
                )
        slot_leaves = [{n: leaves[k] for n, leaves in zip(names, slot_trees)} for k in range(len(p_leaves))]
        return p_leaves, g_leaves, slot_leaves, state["iterations"]

    def __repr__(self):
        return f"<{self.name} learning_rate={self.learning_rate!r} iterations={self._iterations}>"


def _forget(slots: dict, key: int, ref) -> None:
    """Drop the slots of a parameter that was garbage-collected (a weakref callback)."""
    entry = slots.get(key)
    if entry is not None and entry[0] is ref:
        del slots[key]


def _is_real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)
