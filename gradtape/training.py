"""train_step: loss, gradient and optimizer update compiled into one native call per step.

    step = gradtape.train_step(loss_fn, gradtape.optimizers.Adam(1e-3))
    for x, y in batches:
        loss = step(params, x, y)        # params updated in place

The step is a staged function of the flat leaves

    (params..., slots..., batch..., learning_rate, iterations)
        -> (new params..., new slots..., loss[, finite flags...][, aux])

(`grad` instead of `value_and_grad`, and no loss, with return_loss=False)

whose trace calls `value_and_grad(loss_fn)` (inlined: staged functions
called inside another trace become its equations) and then the optimizer's
functional rule, so forward, backward and update are one optimized Function
and one native call. The learning rate and the iteration count are
arguments, so a schedule (any Python callable) is evaluated in Python at
each step and nothing is retraced; the optimizer's other hyperparameters
are constants of the trace.

Writing back. NumPy parameters are updated with `np.copyto` into their own
buffers; Variables by `assign` (a Variable's array is never mutated, since
tapes may hold it). The compiled function's `out=` does not help here:
its native entry refuses an output that overlaps an input (the kernel may
read an input after writing an output), and the fallback then computes into
fresh arrays and copies, which is what `np.copyto` after the call does
(gradtape/runtime/compiled.py, `_into_checked`). Slots are the optimizer's
Keras-style slots (shared with `apply_gradients`); the new arrays simply
replace the old.
"""
from __future__ import annotations

import numpy as np

from . import functions as gtf
from .optimizers import checks
from .optimizers.base import Optimizer
from .optimizers.structure import outline_key
from .staging import differentiable, grad, value_and_grad
from .tracer import tree
from .tracer.tensor import Tensor
from .tracer.variable import Variable


def train_step(loss_fn, optimizer, *, has_aux=False, check_finite=None, return_loss=True) -> "TrainStep":
    """Compile loss, gradient and optimizer update into one native call per step.

    Args:
      loss_fn: `loss_fn(params, *batch) -> scalar` (or `(scalar, aux)` with
        has_aux), written with gradtape functions; `params` is whatever is
        passed as the step's first argument, with Tensors for its leaves.
      optimizer: a `gradtape.optimizers.Optimizer`; its slots and `iterations`
        are the ones `apply_gradients` uses.
      has_aux: `loss_fn` returns `(loss, aux)`; the step then returns
        `(loss, aux)` with aux as NumPy arrays.
      check_finite: check the gradients for NaN and inf every step (default:
        the optimizer's `check_finite`). A non-finite gradient raises
        NonFiniteGradientError naming the parameter and the step, and leaves
        the parameters and the optimizer untouched.
      return_loss: compute and return the loss (True), or only what the
        gradient needs (False: the step returns None, or aux with has_aux).
        The loss can cost as much as the rest of the update (a softplus's
        log1p over the whole batch) when the loop does not read it.

    Returns:
      A TrainStep: `step(params, *batch)` updates `params` (a Variable or a
      float NumPy array, or nested lists/tuples/dicts of them) in place and
      returns the loss as a Python float (see return_loss).

    Raises (on a call):
      TypeError: a parameter that is neither a Variable nor a writeable float
        NumPy array (named by its path).
      NonFiniteGradientError: see check_finite.

    Example::

        >>> def loss_fn(w, X, y):
        ...     z = X @ w
        ...     return gradtape.mean(gradtape.softplus(z) - y * z)
        >>> step = gradtape.train_step(loss_fn, gradtape.optimizers.SGD(0.1))
        >>> w = np.zeros(3)
        >>> for _ in range(100):
        ...     loss = step(w, X, y)          # w changes in place
    """
    if not callable(loss_fn):
        raise TypeError(f"train_step expects a loss function, got a {type(loss_fn).__name__}")
    if not isinstance(optimizer, Optimizer):
        raise TypeError(
            f"train_step expects a gradtape.optimizers.Optimizer (SGD, Adam, ...), got "
            f"{type(optimizer).__name__}"
        )
    return TrainStep(loss_fn, optimizer, has_aux=has_aux, check_finite=check_finite, return_loss=return_loss)


class TrainStep:
    """One compiled optimization step; see `train_step`.

    Attributes:
      optimizer: the optimizer whose rule, slots and iterations it uses.
      calls: how many steps were made (each one call of the compiled step).
    """

    def __init__(self, loss_fn, optimizer, *, has_aux=False, check_finite=None, return_loss=True):
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.has_aux = bool(has_aux)
        self.check_finite = optimizer.check_finite if check_finite is None else bool(check_finite)
        self.return_loss = bool(return_loss)
        self.calls = 0
        # Inlined into the step's trace, never compiled alone.
        differentiate = value_and_grad if self.return_loss else grad
        self._derivative = differentiate(loss_fn, has_aux=self.has_aux)
        self._plans = {}  # (params structure, batch structure) -> _Plan
        self._name = getattr(loss_fn, "__name__", type(loss_fn).__name__)

    def __call__(self, params, *batch):
        leaves, params_key = _leaves_of(params)
        if all(type(b) is np.ndarray for b in batch):  # the common case, without walking trees
            batch_leaves, batch_key = batch, len(batch)
        else:
            batch_leaves = [b.numpy() if isinstance(b, Tensor) else b for b in tree.flatten(batch)]
            batch_key = outline_key(batch)
        plan = self._plans.get((params_key, batch_key))
        if plan is None:
            plan = self._plans[(params_key, batch_key)] = _Plan(self, params, batch, len(leaves))
        opt = self.optimizer
        args = [_parameter_array(x, params, k, self._name) for k, x in enumerate(leaves)]
        if plan.slot_names:
            entries = [opt._slot_entry(x)[1] for x in leaves]
            for name in plan.slot_names:
                args += [e[name] for e in entries]
        args += batch_leaves
        it = opt._iterations
        lr = opt.learning_rate
        args.append(np.array(lr(it) if callable(lr) else lr, dtype=np.float64))
        args.append(np.array(it, dtype=np.float64))
        outs = plan.staged(*args)
        self.calls += 1
        if plan.has_aux:
            outs, aux = outs
        n = len(leaves)
        if self.check_finite:
            self._check_finite(outs[-n:], params, leaves, it)
        for x, new in zip(leaves, outs):
            if type(x) is np.ndarray:
                np.copyto(x, new)
            else:
                x.assign(new)
        if plan.slot_names:
            pos = n
            for name in plan.slot_names:
                for e in entries:
                    e[name] = outs[pos]
                    pos += 1
        opt._iterations = it + 1
        if not self.return_loss:
            return aux if plan.has_aux else None
        loss = float(outs[n * (1 + len(plan.slot_names))])
        return (loss, aux) if plan.has_aux else loss

    def _check_finite(self, flags, params, leaves, it):
        for k, flag in enumerate(flags):
            if flag != 0.0:  # sum(g * 0) is 0 for a finite g, NaN otherwise
                who = checks.describe_path(tree.leaf_paths(params)[k], k, leaves[k])
                raise checks.non_finite_error(f"train_step({self._name})", who, None, it)

    def cache_info(self):
        """The cache counters of the compiled step functions, summed over parameter/batch structures.

        Returns:
          CacheInfo(hits, misses, traces, compiles); `hits + misses` is the
          number of calls of compiled steps, `compiles` how many were built.
        """
        from .staging import CacheInfo

        infos = [plan.staged.cache_info() for plan in self._plans.values()]
        return CacheInfo(*[sum(column) for column in zip(*infos)]) if infos else CacheInfo(0, 0, 0, 0)

    def __repr__(self):
        return f"<train_step {self._name} with {self.optimizer.name}: {self.calls} calls>"


class _Plan:
    """The staged step for one structure of parameters and batch."""

    def __init__(self, owner: TrainStep, params, batch, n_params: int):
        self.slot_names = owner.optimizer.slot_names
        self.has_aux = owner.has_aux
        params_skeleton = tree.unflatten(params, [None] * n_params)
        batch_skeleton = tree.unflatten(batch, [None] * len(tree.flatten(batch)))
        self.staged = differentiable(
            _flat_step(owner, params_skeleton, batch_skeleton, n_params, self.slot_names)
        )


def _flat_step(owner: TrainStep, params_skeleton, batch_skeleton, n: int, slot_names):
    """The traced function: flat leaves in, flat results out (see the module docstring)."""
    optimizer, derivative = owner.optimizer, owner._derivative
    check_finite, has_aux, return_loss = owner.check_finite, owner.has_aux, owner.return_loss
    n_slots = n * len(slot_names)

    def step(*leaves):
        p = list(leaves[:n])
        slots = [{name: leaves[n + j * n + k] for j, name in enumerate(slot_names)} for k in range(n)]
        batch = tree.unflatten(batch_skeleton, leaves[n + n_slots:-2])
        lr, iterations = leaves[-2], leaves[-1]
        params = tree.unflatten(params_skeleton, p)
        if return_loss:
            out, grads = derivative(params, *batch)
            loss, aux = out if has_aux else (out, None)
        else:
            grads, aux = derivative(params, *batch) if has_aux else (derivative(params, *batch), None)
        g = tree.flatten(grads)
        new_p, new_slots = optimizer._update_flat(g, p, slots, lr, iterations)
        outs = list(new_p) + [s[name] for name in slot_names for s in new_slots]
        if return_loss:
            outs.append(loss)
        if check_finite:
            outs += [gtf.sum(gk * 0.0) for gk in g]
        return (tuple(outs), aux) if has_aux else tuple(outs)

    step.__name__ = f"train_step_{getattr(owner.loss_fn, '__name__', 'loss')}"
    return step


def _leaves_of(params):
    """The parameter leaves and a key for their structure (one array, a flat list: no tree walk)."""
    t = type(params)
    if t is np.ndarray or t is Variable:
        return [params], "leaf"
    if (t is list or t is tuple) and all(type(x) is np.ndarray or type(x) is Variable for x in params):
        return list(params), (t, len(params))
    return tree.flatten(params), ("tree", outline_key(params))


def _parameter_array(x, params, k: int, name: str) -> np.ndarray:
    """The array a parameter leaf passes to the compiled step (checked once per call)."""
    if type(x) is np.ndarray:
        if x.dtype.kind == "f" and x.flags.writeable:
            return x
    elif isinstance(x, Variable):
        if x.dtype.kind == "f":
            return x.numpy()
    who = checks.describe_path(tree.leaf_paths(params)[k], k, x)
    if isinstance(x, (np.ndarray, Variable)):
        checks.check_float_parameter(f"train_step({name})", who, x)
        raise TypeError(
            f"train_step({name}): {who} is a read-only array; parameters are updated in place, "
            "so pass a writeable array (np.array(x)) or a gradtape.Variable"
        )
    raise TypeError(
        f"train_step({name}): {who} is a {type(x).__name__}; train_step updates parameters in "
        "place, so they must be gradtape.Variables or float NumPy arrays (np.asarray(x, float))"
    )
