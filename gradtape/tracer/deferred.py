"""Deferred eager execution: ops a tape records are computed only when a value is read.

In an eager training loop the forward pass is recorded only to be
differentiated, and most of its values are never read in Python:

    with gradtape.GradientTape() as tape:
        loss = loss_fn(w, X, y)          # recorded, not computed
    grads = tape.gradient(loss, w)       # forward and backward: one compiled call
    opt.apply_gradients(zip([grads], [w]))

So while tapes are recording, an op that one of them records (one with a
watched operand) returns a `PendingTensor`, the same one recorded on every
recorder that tracks an operand (nested tapes, a ForwardAccumulator): its type comes from the
op's shape rule (so shape errors are raised at the op, as before), its
value is computed when something reads it (`numpy()`, printing, `float()`,
an op that is not recorded, ...), by running the pending ops it depends on
with their NumPy reference implementations (or, once the recording's program
repeats, by a compiled plan: value_plans.py). `tape.gradient` never needs
those values: its backward function recomputes the forward from the
recording's leaves (backward.py, "recompute"), so forward and backward are
one compiled, fused function, cached by the recording's structure.

What is not deferred, and why:
- ops that can fail on values rather than shapes (declared
  `can_fail_on_values`: gather and scatter_add on out-of-range indices) and
  ops that run code held in their params (declared `runs_code`: call,
  custom_gradient, custom_vjp/jvp): their errors and side effects must
  happen at the op (`eager_only(op)`). (A staged function's call is deferred all the same when
  its Function has no such op: its Python ran when it was traced, and what
  is left is pure; see staging/tape_calls.py.)
- anything while no tape is recording.

Nested tapes replay the inner backward through recorded ops on the pending
values, so the outer tape records it, deferred too; its own gradient then
computes everything in one plan.

Operands are read when the value is computed. Variables are safe (an op
keeps the array the variable held when it ran: assigning replaces the
array, never mutates it), and so are Tensors gradtape made. A NumPy array
passed to an op is not copied: the recording keeps a fingerprint of it
(held_arrays.py), and computing the value, or the gradient, raises
ArrayModifiedError if the array was modified in place in the meantime.

Set GRADTAPE_DEFER_EAGER=0, or `gradtape.tracer.deferred.enabled = False`,
to compute every op at once.
"""
from __future__ import annotations

import os

import numpy as np

from ..ir.op import impls
from .held_arrays import Held
from .tensor import Tensor

enabled = os.environ.get("GRADTAPE_DEFER_EAGER", "1") != "0"


def eager_only(op) -> bool:
    """Whether `op` is computed at once even on a tape (see the module docstring)."""
    return op.can_fail_on_values or op.runs_code


class PendingTensor(Tensor):
    """A Tensor whose value is computed when first read (see the module docstring).

    It has its shape and dtype from the start; reading `_value` (through
    numpy(), NumPy's protocols, printing, an unrecorded op, ...) computes
    it and every pending value it depends on, once.
    """

    # shape and dtype are plain attributes here, not Tensor's properties:
    # front ends read them on every op.
    # _keep: a freed Recording's `values`, held by the last value it recorded when that is the
    # only one something else holds (a kept loss): freed with it, in the order they were made
    # (_crecord.c, keep_values). None otherwise.
    __slots__ = ("shape", "dtype", "_op", "_args", "_params", "_forced", "_keep")

    def __init__(self, op, args, params, type):
        self._sym = None
        self._op = op
        # Operands as the op saw them: Tensors (immutable; a PendingTensor is
        # computed first), the arrays Variables held then, arrays and scalars.
        self._args = args
        self._params = params
        self._forced = None
        self._keep = None
        self.shape = type.shape  # from the op's shape rule
        self.dtype = type.dtype

    @property
    def _value(self):
        value = self._forced
        if value is None:
            value = _force(self)
        return value


def _force(root: PendingTensor):
    """Compute `root` and the pending values it depends on, operands first (no recursion:
    a long chain of ops must not hit Python's recursion limit)."""
    stack = [root]
    while stack:
        t = stack[-1]
        if t._forced is not None:
            stack.pop()
            continue
        waiting = [a for a in t._args if type(a) is PendingTensor and a._forced is None]
        if waiting:
            stack.extend(waiting)
            continue
        stack.pop()
        # A Held is an array its owner may have written since the op was recorded: checked.
        values = [a._value if isinstance(a, Tensor) else a.checked(t._op) if a.__class__ is Held else a
                  for a in t._args]
        # The op's NumPy reference; a producer may put a plain callable in its place (a
        # staged function's call runs its compiled program: staging/tape_calls.py).
        t._forced = np.asarray(impls.get(t._op, t._op)(*values, **t._params))
        t._args = None  # the operands may now be freed
    root._keep = None  # computed: what a freed recording left to it may go
    return root._forced


python_force = _force  # dispatch.py puts _crecord.force, the same loop in C, in _force's place


def is_pending(x) -> bool:
    """Whether `x` is a Tensor whose value has not been computed yet."""
    return type(x) is PendingTensor and x._forced is None

