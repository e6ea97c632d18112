"""train_step: loss, gradient and optimizer update compiled into one native call per step.

    step = gradtape.train_step(loss_fn, gradtape.optimizers.Adam(1e-3))
    for x, y in batches:
        loss = step(params, x, y)        # params updated in place

The step is a staged function of the flat leaves

    (params..., slots..., batch..., [learning_rate, iterations])
        -> (new params..., new slots..., loss[, finite flags...][, aux])

(`grad` instead of `value_and_grad`, and no loss, with return_loss=False)

whose trace calls `value_and_grad(loss_fn)` (inlined: staged functions
called inside another trace become its equations) and then the optimizer's
functional rule, so forward, backward and update are one optimized Function
and one native call. The learning rate and the iteration count are
arguments, so a schedule (any Python callable) is evaluated in Python at
each step and nothing is retraced; the optimizer's other hyperparameters
are constants of the trace.

Writing back. NumPy parameters are updated in place (`x[...] = new`, into
their own buffers); Variables by `assign` (a Variable's array is never
mutated, since tapes may hold it). The compiled function's `out=` cannot
name the parameters themselves: its native entry refuses an output that
overlaps an input (the kernel may read an input after writing an output).
Slots are the optimizer's Keras-style slots (shared with
`apply_gradients`); the new arrays simply replace the old.

The hot path. The first call of a structure of parameters and batch goes
through the staged function (flatten, validate, trace and compile once,
convert); it then keeps the compiled step's native entry, with the
parameter leaves it was called with (`_hot_path`). A later call with the
same leaf objects (still writeable, their slots still the optimizer's) and
a batch of plain arrays calls that entry directly: the entry itself checks
the batch's types, dtypes, shapes and layout, and declines anything else
(NotImplemented), which sends the call down the general path with exactly
the checks and errors of a first call. The learning rate and iteration
count go in one float64[2] array rewritten in place. Python's share of a
step went from 5 us to 1.2 us on a 16 x 50 batch, and from 8-14 us to 2-3 us
on W4's 4000 x 50 (more there: Python meets caches that the kernel's sweep
over X has emptied).
"""
from __future__ import annotations

import numpy as np

from . import codegen
from . import functions as gtf
from .optimizers import checks
from .optimizers.base import Optimizer
from .optimizers.structure import outline_key
from .staging import CacheInfo, differentiable, grad, value_and_grad
from .staging import pickling
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

    Raises:
      TypeError: a parameter that is neither a Variable nor a writeable float
        NumPy array (named by its path).
      NonFiniteGradientError: see check_finite.

    Example::

        >>> def loss_fn(w, X, y):
        ...     z = X @ w
        ...     return gradtape.mean(gradtape.softplus(z) - y * z)
        >>> step = gradtape.train_step(loss_fn, gradtape.optimizers.SGD(0.1))
        >>> X = np.random.default_rng(0).normal(size=(50, 3))
        >>> y = (X @ np.array([2.0, -1.0, 0.0]) > 0).astype(float)
        >>> w = np.zeros(3)
        >>> for _ in range(100):
        ...     loss = step(w, X, y)          # w changes in place
        >>> round(loss, 4) < round(float(np.log(2.0)), 4)   # below the loss at w = 0
        True
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

    A step is not meant to be called from several threads at once (nor is
    its optimizer: both count steps and hold state between calls).

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
        # The step's last argument: [learning rate, iterations], rewritten in place before each call
        # (two item writes cost less than making two 0-d arrays, and the kernel only reads it).
        self._hyper = np.zeros(2)
        self._hot = None  # (params, batch) -> the step's result, or a _DECLINED: see _hot_path
        self._hot_compiled = None  # the compiled step _hot calls
        self._general_calls = 0  # steps made through the staged function (the others went straight in)

    def __call__(self, params, *batch):
        hot = self._hot
        if hot is not None:
            result = hot(params, batch)
            if result is _DECLINED:
                return self._call_general(params, batch)
            if result is _DECLINED_LR_SET:  # a schedule is called once per step
                return self._call_general(params, batch, lr_set=True)
            return result
        return self._call_general(params, batch)

    def _call_general(self, params, batch, lr_set=False):
        """Any call: flatten, validate, find (or trace) the plan, call the staged step; then make it hot."""
        leaves, params_key = _leaves_of(params)
        plain_batch = all(type(b) is np.ndarray for b in batch)
        if plain_batch:  # the common case, without walking trees
            batch_leaves, batch_key = batch, len(batch)
        else:
            batch_leaves = [b.numpy() if isinstance(b, Tensor) else b for b in tree.flatten(batch)]
            batch_key = outline_key(batch)
        plan = self._plans.get((params_key, batch_key))
        if plan is None:
            plan = self._plans[(params_key, batch_key)] = _Plan.of(self, params, batch, len(leaves))
        opt = self.optimizer
        args = [_parameter_array(x, params, k, self._name) for k, x in enumerate(leaves)]
        entries = [opt._slot_entry(x)[1] for x in leaves] if plan.slot_names else None
        for name in plan.slot_names:
            args += [e[name] for e in entries]
        args += batch_leaves
        it = opt._iterations
        hyper = self._hyper
        if not lr_set:
            lr = opt.learning_rate
            hyper[0] = lr(it) if callable(lr) else lr
        hyper[1] = it
        args.append(hyper)
        outs = plan.staged(*args)
        self._general_calls += 1
        if plain_batch and (params_key == _LEAF or params_key[0] is not _TREE):
            found = plan.staged.compiled_for(*args)
            # None: still compiling in the background (the last hot path stays meanwhile). When the entry
            # declined this batch (a layout it takes only converted) the hot path stays as it is.
            if found is not None and not (lr_set and found[0] is self._hot_compiled):
                self._hot = _hot_path(self, plan, params, leaves, entries, *found)
                self._hot_compiled = found[0]
        outs, aux = outs if self.has_aux else (outs, None)
        return self._finish(outs, aux, params, leaves, entries, plan.slot_names, it)

    def _finish(self, outs, aux, params, leaves, entries, slot_names, it):
        """After the compiled step ran: check the flags, write the parameters and slots back, count the
        step. Returns the step's result."""
        self.calls += 1
        n = len(leaves)
        if self.check_finite:
            self._check_finite(outs[-n:], params, leaves, it)
        for x, new in zip(leaves, outs):
            if isinstance(x, np.ndarray):
                x[...] = new
            else:
                x.assign(new)
        if entries:
            pos = n
            for name in slot_names:
                for e in entries:
                    e[name] = outs[pos]
                    pos += 1
        self.optimizer._iterations = it + 1
        if not self.return_loss:
            return aux if self.has_aux else None
        loss = float(outs[n * (1 + len(slot_names))])
        return (loss, aux) if self.has_aux else loss

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
        infos = [plan.staged.cache_info() for plan in self._plans.values()]
        total = [sum(column) for column in zip(*infos)] if infos else [0, 0, 0, 0]
        total[0] += self.calls - self._general_calls  # steps that went straight to the native entry: hits
        return CacheInfo(*total)

    def __repr__(self):
        return f"<train_step {self._name} with {self.optimizer.name}: {self.calls} calls>"

    def __reduce__(self):
        """Pickled as its loss function (by reference), its optimizer (with its state) and the IR
        and machine code of each compiled step: a receiver steps without tracing or compiling."""
        plans = [(key, plan.params_skeleton, plan.batch_skeleton, plan.n_params,
                  pickling.export_programs(plan.staged)) for key, plan in self._plans.items()]
        config = (self.loss_fn, self.optimizer, self.has_aux, self.check_finite, self.return_loss)
        return (_unpickle_step, (config, self.calls, plans))


def _unpickle_step(config, calls, plans) -> TrainStep:
    loss_fn, optimizer, has_aux, check_finite, return_loss = config
    step = TrainStep(loss_fn, optimizer, has_aux=has_aux, check_finite=check_finite, return_loss=return_loss)
    step.calls = step._general_calls = calls
    for key, params_skeleton, batch_skeleton, n_params, programs in plans:
        plan = step._plans[key] = _Plan(step, params_skeleton, batch_skeleton, n_params)
        pickling.adopt_programs(plan.staged, programs)
    return step


class _Plan:
    """The staged step for one structure of parameters and batch."""

    @classmethod
    def of(cls, owner: TrainStep, params, batch, n_params: int) -> "_Plan":
        """The plan for the structure of these parameters and batch."""
        params_skeleton = tree.unflatten(params, [None] * n_params)
        batch_skeleton = tree.unflatten(batch, [None] * len(tree.flatten(batch)))
        return cls(owner, params_skeleton, batch_skeleton, n_params)

    def __init__(self, owner: TrainStep, params_skeleton, batch_skeleton, n_params: int):
        self.slot_names = owner.optimizer.slot_names
        self.has_aux = owner.has_aux
        self.params_skeleton, self.batch_skeleton, self.n_params = params_skeleton, batch_skeleton, n_params
        self.staged = differentiable(
            _flat_step(owner, params_skeleton, batch_skeleton, n_params, self.slot_names)
        )


# What the hot path returns when the general path must make the step, before or after (_LR_SET) it wrote
# the learning rate into the step's [learning rate, iterations] array.
_DECLINED, _DECLINED_LR_SET = object(), object()


def _hot_path(owner: TrainStep, plan: _Plan, params, leaves, entries, compiled, assemble):
    """The step for the parameters of this call, straight through the compiled step's native entry.

    Returns `run(params, batch)`: when `params` holds the same leaf objects as
    now, every array leaf is still writeable, the optimizer still holds the
    same slots for them, the code generator is the same and the entry takes
    the arguments, it makes the step and returns its result; else it returns
    a _DECLINED, having changed nothing but the [learning rate, iterations]
    array. The entry checks the batch (exactly ndarrays, of the dtypes and
    shapes compiled, C-contiguous), so nothing here looks at it. The closure
    holds the leaves, so their ids stay theirs.
    """
    entry, version = compiled.entry, codegen.CODEGEN_VERSION
    optimizer, hyper, finish = owner.optimizer, owner._hyper, owner._finish
    container = type(params)
    leaves = list(leaves)
    ids = tuple(map(id, leaves))
    arrays = [x for x in leaves if type(x) is np.ndarray]  # checked writeable on each call
    all_arrays = len(arrays) == len(leaves)
    slot_names = plan.slot_names
    table = optimizer._slots
    table_entries = [table.get(id(x)) for x in leaves] if entries else ()
    has_aux = owner.has_aux
    _ndarray = np.ndarray
    if all_arrays and not entries and not has_aux and not owner.check_finite:
        return _lean_hot_path(owner, container, leaves, ids, compiled, version)

    same = _same_parameters(leaves, container, ids, arrays, version)

    def run(params, batch):
        if not same(params):
            return _DECLINED
        values = leaves if all_arrays else [x if type(x) is _ndarray else x.numpy() for x in leaves]
        slots = ()
        if entries:
            for x, e in zip(leaves, table_entries):
                if table.get(id(x)) is not e:  # the optimizer made new slots for it
                    return _DECLINED
            slots = [e[name] for name in slot_names for e in entries]
        it = _write_hyper(optimizer, hyper)
        outs = entry(*values, *slots, *batch, hyper)
        if outs is NotImplemented:
            return _DECLINED_LR_SET
        outs, aux = assemble(outs) if has_aux else (outs, None)
        return finish(outs, aux, params, leaves, entries, slot_names, it)

    return run


def _lean_hot_path(owner: TrainStep, container, leaves: list, ids: tuple, compiled, version):
    """`run` of _hot_path for NumPy parameters, an optimizer without slots, no aux and no finiteness check:
    the same steps with what they do not need left out (W4's loop: 2 of its 46 us per step were
    train_step's Python, which meets cold caches after each call's sweep over X). The results go into
    arrays of its own, copied out at once, so a call allocates nothing."""
    optimizer, hyper = owner.optimizer, owner._hyper
    into = compiled.entry_into
    outs = [np.empty(t.shape, t.dtype) for t in compiled.out_types]
    loss_at = len(leaves) if owner.return_loss else None

    same = _same_parameters(leaves, container, ids, leaves, version)

    def run(params, batch):
        if not same(params):
            return _DECLINED
        it = _write_hyper(optimizer, hyper)
        if into(*leaves, *batch, hyper, *outs) is NotImplemented:
            return _DECLINED_LR_SET
        owner.calls += 1  # as TrainStep._finish does
        for x, new in zip(leaves, outs):
            x[...] = new
        optimizer._iterations = it + 1
        return None if loss_at is None else float(outs[loss_at])

    return run


def _same_parameters(leaves: list, container, ids: tuple, arrays: list, version):
    """`same(params)`: whether `params` holds the same leaf objects as `leaves` (in a `container`, or
    the one leaf itself), every array among them is still writeable, and the code generator is the
    one the step was compiled by: what both hot paths need before they reuse the compiled step."""
    first, single = leaves[0], container is np.ndarray or container is Variable

    def same(params) -> bool:
        if single:
            if params is not first:
                return False
        elif type(params) is not container or tuple(map(id, params)) != ids:
            return False
        if codegen.CODEGEN_VERSION != version:
            return False
        for x in arrays:
            if not x.flags.writeable:
                return False
        return True

    return same


def _write_hyper(optimizer, hyper) -> int:
    """Write this step's [learning rate, iterations] into `hyper`; returns the iteration count."""
    it = optimizer._iterations
    lr = optimizer.learning_rate
    hyper[0] = lr(it) if callable(lr) else lr
    hyper[1] = it
    return it


def _flat_step(owner: TrainStep, params_skeleton, batch_skeleton, n: int, slot_names):
    """The traced function: flat leaves in, flat results out (see the module docstring)."""
    optimizer, derivative = owner.optimizer, owner._derivative
    check_finite, has_aux, return_loss = owner.check_finite, owner.has_aux, owner.return_loss
    n_slots = n * len(slot_names)

    def step(*leaves):
        p = list(leaves[:n])
        slots = [{name: leaves[n + j * n + k] for j, name in enumerate(slot_names)} for k in range(n)]
        batch = tree.unflatten(batch_skeleton, leaves[n + n_slots:-1])
        hyper = leaves[-1]
        lr, iterations = hyper[0], hyper[1]
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


_LEAF, _TREE = "leaf", "tree"


def _leaves_of(params):
    """The parameter leaves and a key for their structure (one array, a flat list: no tree walk)."""
    t = type(params)
    if t is np.ndarray or t is Variable:
        return [params], _LEAF
    if (t is list or t is tuple) and all(type(x) is np.ndarray or type(x) is Variable for x in params):
        return list(params), (t, len(params))
    return tree.flatten(params), (_TREE, outline_key(params))


def _parameter_array(x, params, k: int, name: str) -> np.ndarray:
    """The array a parameter leaf passes to the compiled step (checked once per call)."""
    if type(x) is np.ndarray or type(x) is np.memmap:  # a memmap: parameters kept in a file, written back there
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
