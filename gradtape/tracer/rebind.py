"""`t[index] = v`: the Tensor object t takes the value of `t.at[index].set(v)`.

Python's `t[i] = v` calls `t.__setitem__(i, v)`, which cannot rebind the name
`t`, so the object itself takes the new value: every Python reference to it
sees the update (as with NumPy and PyTorch). What was computed from t before
keeps the old value: tensors are values, never views.

The tapes make that work by identity. A Recording holds each tensor it saw
(its `values`, the operands of its pending ops) and keys its positions by
id(tensor), so before t changes, a snapshot `old` of t's state takes t's
place in every live recording, and t takes the place of the new value's
tensor: t's id now names the recorded update, whose operand is `old`.

A tensor a recorder watches (a source of tape.gradient, a primal of a
ForwardAccumulator) is refused, as PyTorch refuses in-place updates of a leaf
that requires grad: its gradient would be ambiguous. Pending values
(deferred.py) that read t are found in every live recording
(recording.live), and, once their recording is freed, among its unread
pending values that something else holds (recording.orphans) and those
they read (recording.unread_orphans): a loss kept after its tape is gone
still computes from t's old value.
"""
from __future__ import annotations

from .deferred import PendingTensor
from .recording import live, orphans, unread_orphans
from .tensor import Tensor


def rebind(t: Tensor, new: Tensor) -> None:
    """Make the object t denote `new`'s value from here on (see the module docstring)."""
    if type(t) not in (Tensor, PendingTensor):
        raise TypeError(f"t[...] = v: cannot assign into a {type(t).__name__}")
    if new is t:  # nothing was written (an empty index)
        return
    recordings = list(live)
    for rec in recordings:
        if id(t) in rec.sources:
            raise TypeError(
                f"t[...] = v: this tensor (shape {tuple(t.shape)}) is watched by a "
                "GradientTape or ForwardAccumulator, and assigning into it would change what its "
                "gradient is taken with respect to. Update a copy instead: y = t.at[index].set(v) "
                "(or y = t.copy() before the loop, then y[index] = v)."
            )
    old = _snapshot(t)
    for rec in recordings:
        _retarget(rec, t, old, new)
    _retarget_orphans(t, old)
    _take_state(t, new)


def _snapshot(t: Tensor) -> Tensor:
    """A new object with t's state, of t's class."""
    if type(t) is Tensor:
        old = Tensor.__new__(Tensor)
        old._value, old._sym = t._value, t._sym
        return old
    old = PendingTensor.__new__(PendingTensor)
    _copy_pending(old, t)
    return old


def _copy_pending(dst: PendingTensor, src: PendingTensor) -> None:
    dst._sym, dst._op, dst._args, dst._params = src._sym, src._op, src._args, src._params
    dst._forced, dst.shape, dst.dtype = src._forced, src.shape, src.dtype


def _retarget(rec, t, old, new) -> None:
    """In recording `rec`: `old` stands where t stood, and t where `new` stands."""
    values = rec.values
    new_position = rec.var_of.pop(id(new), None)
    for i, value in enumerate(values):
        if value is t:
            values[i] = old
        elif type(value) is PendingTensor and value._args is not None and any(a is t for a in value._args):
            value._args = [old if a is t else a for a in value._args]
    for positions in (rec.var_of, rec.const_of):
        p = positions.pop(id(t), None)
        if p is not None:
            positions[id(old)] = p
    if new_position is not None:
        rec.var_of[id(t)] = new_position
        values[new_position] = t


def _retarget_orphans(t, old) -> None:
    """The unread pending values of freed recordings that read t read `old` instead."""
    values = unread_orphans(orphans)
    for value in values:
        args = value._args
        if value._forced is None and args is not None and any(a is t for a in args):
            value._args = [old if a is t else a for a in args]
    if type(old) is PendingTensor and any(value is t for value in values):
        orphans.add(old)


def _take_state(t: Tensor, new: Tensor) -> None:
    if type(t) is Tensor:
        # A plain Tensor cannot become pending: the update is computed now.
        t._value = None if new._sym is not None else new._value
        t._sym = new._sym
    elif type(new) is PendingTensor:
        _copy_pending(t, new)
    else:
        t._sym, t._op, t._args, t._params = new._sym, None, None, None
        t._forced = None if new._sym is not None else new._value
        t.shape, t.dtype = tuple(new.shape), new.dtype
