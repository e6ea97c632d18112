"""x[index] for a basic index, the common case of indexing on an eager tape.

`getitem(x, index)` answers `x[index]` when `x` is a concrete Tensor (a
PendingTensor or a Variable too) and `index` is a Python int, a slice of
ints and Nones, or a tuple of them with no more entries than `x` has axes,
every int in range. It binds what functions/shape.py's general getitem
binds for such an index: `slice` with normalized per-axis ranges (skipped
when it keeps everything), then `reshape` dropping the int-indexed axes, so
both record identical structures. For anything else (arrays, None,
Ellipsis, NumPy integers, an out-of-range int, a zero step, an abstract
tensor) it returns NotImplemented and the general getitem answers, with its
error messages.

The C accelerator's `getitem` (_crecord.c) is the same function, chosen at
import unless GRADTAPE_PURE_PYTHON is set; this module is its reference.
"""
from __future__ import annotations

from ..ir.ops.indexing import normalize_range, slice_p
from ..ir.ops.layout import reshape_p
from .c_view import crecord, pure_python
from .deferred import PendingTensor
from .dispatch import bind
from .tensor import Tensor
from .variable import Variable

EXACT_TENSORS = _CLASSES = (Tensor, PendingTensor, Variable)  # the classes these fast paths take


def python_getitem(x, index):
    """x[index] for a basic index, or NotImplemented (see the module docstring)."""
    if x.__class__ not in _CLASSES or (x.__class__ is not PendingTensor and x._sym is not None):
        return NotImplemented
    return basic_binds(x, index)


def abstract_getitem(x, index):
    """x[index] for a basic index on a traced Tensor whose dimensions are all known ints, or
    NotImplemented: the binds `python_getitem` makes, without the general getitem's
    index expansion (tracing a Python loop indexes on every step)."""
    if x.__class__ is not Tensor or x._sym is None or not all(d.__class__ is int for d in x.shape):
        return NotImplemented
    return basic_binds(x, index)


def basic_binds(x, index):
    """The binds of x[index] for a basic index (see the module docstring), or NotImplemented."""
    shape = x.shape
    entries = index if index.__class__ is tuple else (index,)
    if len(entries) > len(shape):
        return NotImplemented
    starts, stops, steps, kept = [], [], [], []
    full = True
    for axis, d in enumerate(shape):
        e = entries[axis] if axis < len(entries) else slice(None)
        if e.__class__ is int:
            if not -d <= e < d:
                return NotImplemented
            a, b, c = normalize_range(e % d, e % d + 1, 1)
            dropped = True
        elif e.__class__ is slice and all(v is None or v.__class__ is int for v in (e.start, e.stop, e.step)):
            if e.step == 0:
                return NotImplemented
            a, b, c = normalize_range(*e.indices(d))
            dropped = False
        else:
            return NotImplemented
        n = len(range(a, b, c))
        full = full and n == d and (d <= 1 or c == 1)
        starts.append(a), stops.append(b), steps.append(c)
        if not dropped:
            kept.append(n)
    y = x
    if not full:
        y = bind(slice_p, x, starts=tuple(starts), stops=tuple(stops), steps=tuple(steps))
    if len(kept) < len(shape):
        y = bind(reshape_p, y, shape=tuple(kept))
    return y


def _chosen():
    if crecord is None:
        return python_getitem
    crecord.setup_getitem(slice_p, reshape_p)  # also under GRADTAPE_PURE_PYTHON, for the tests
    return python_getitem if pure_python else crecord.getitem


getitem = _chosen()


def tensor_getitem(general):
    """What Tensor.__getitem__ should be, given the general getitem (which tries `getitem`
    first): with the C accelerator, a method in C that answers basic indices itself and
    calls `general` for the others, without a Python frame on the fast path."""
    if getitem is python_getitem:
        return general
    return crecord.setup_getitem(slice_p, reshape_p, general)
