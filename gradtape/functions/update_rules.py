"""The five indexed updates on flat vectors, built from existing ops.

Every function here takes x flattened to (n,), the updates v flattened to
(K,) (already of x's dtype) and the K flat positions p they go to, and
returns the updated (n,) vector. Only `where`, `gather`, `scatter_add`,
elementwise ops and reductions are used, so the updates are differentiable
to any order, batch under vmap and compile to native code through the rules
those ops already have.

Positions known while tracing (a NumPy array) are grouped by `Groups`
(update_positions.py): each group's updates are combined pairwise, log2 of
the largest group's size levels of gathers, then placed with one gather and
one `where`; add needs one scatter_add. A traced p (a Tensor) has duplicates
known only when it runs: `TracedGroups` compares every entry with every
other (a K x K mask).

min and max take the tangent JAX gives them: among the values that equal the
result (x's own element, and each update that equals it) the derivative is
split equally, so at a tie of x and one update each gets one half, and a
position no update beats keeps x's derivative whole.
"""
from __future__ import annotations

import numpy as np

from ..ir.ops import elementwise as ew_ops
from ..ir.ops.indexing import gather_p, scatter_add_p
from ..tracer.dispatch import bind
from . import elementwise as ew
from .predicates import any as any_
from .reductions import max as max_
from .reductions import min as min_
from .reductions import prod
from .shape import reshape
from .update_positions import Groups

COMBINE = {"add": ew.add, "multiply": ew.multiply, "min": ew.minimum, "max": ew.maximum}


def _gather(v, src):
    return v if src is None else bind(gather_p, v, src, axis=0)


def _scatter_add(v, p, n):
    return bind(scatter_add_p, v, p, axis=0, size=n)


def _select(hit, new, old):
    return new if hit is None else ew.where(hit, new, old)


def _sg(x):
    return bind(ew_ops.stop_gradient_p, x)


def concrete_update(mode, x, v, p: np.ndarray):
    """x updated at the known positions p (see the module docstring)."""
    n = x.shape[0]
    if mode == "add":  # one scatter_add sums every group
        return _select(_known_hit(p, n), ew.add(x, _scatter_add(v, p, n)), x)
    groups = Groups(p, n)
    if mode == "set":
        hit, src = groups.last
        return _select(hit, _gather(v, src), x)
    extremal = mode in ("min", "max") and x.dtype.kind == "f"
    base, updates = (_sg(x), _sg(v)) if extremal else (x, v)  # min/max: the value alone
    combine = COMBINE[mode]
    reduced = _gather(updates, groups.order)
    for left, right, paired in groups.levels:
        first = _gather(reduced, left)
        reduced = _select(paired, combine(first, _gather(reduced, right)), first)
    out = _select(groups.hit, combine(base, _gather(reduced, groups.src)), base)
    return extremal_tangent(x, v, p, out) if extremal else out


def _known_hit(p: np.ndarray, n: int):
    hit = np.zeros(n, bool)
    hit[p] = True
    return None if hit.all() else hit


def written(p, n: int):
    """Whether each of the n positions is written by some entry of the traced p."""
    return ew.greater(_scatter_add(np.ones(p.shape[0], np.int64), p, n), 0)


class TracedGroups:
    """Which entries of a traced p write the same position: `same` (K x K), whether each
    entry is the last to write its position (`is_last`), whether a position is written
    (`hit`, (n,)) and which entry wrote it last (`src`, 0 where none did)."""

    def __init__(self, p, n: int):
        k = p.shape[0]
        self.same = ew.equal(reshape(p, (k, 1)), reshape(p, (1, k)))
        later = np.triu(np.ones((k, k), bool), 1)  # entry j' > j: j is overwritten by a later one
        self.is_last = ew.logical_not(any_(ew.logical_and(self.same, later), axis=1))
        self.hit = written(p, n)
        entries = np.arange(k, dtype=np.int64)
        self.src = _scatter_add(ew.where(self.is_last, entries, np.int64(0)), p, n)

    def combined(self, v, identity, reduce):
        """Per entry, `reduce` over the updates of every entry that writes its position."""
        k = v.shape[0]
        grid = ew.where(self.same, reshape(v, (1, k)), identity)
        return reduce(grid, axis=1)


def _identity(mode, dtype):
    if mode == "multiply":
        return dtype.type(1)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    big = dtype.type(np.inf) if dtype.kind == "f" else info.max
    return big if mode == "min" else (-big if dtype.kind == "f" else info.min)


def traced_update(mode, x, v, p):
    """x updated at the traced positions p (see the module docstring)."""
    n = x.shape[0]
    if mode == "add":
        return ew.where(written(p, n), ew.add(x, _scatter_add(v, p, n)), x)
    groups = TracedGroups(p, n)
    if mode == "set":
        return ew.where(groups.hit, _gather(v, groups.src), x)
    extremal = mode in ("min", "max") and x.dtype.kind == "f"
    reduce = {"multiply": lambda g, axis: prod(g, axis=axis, dtype=x.dtype), "min": min_, "max": max_}[mode]
    per_entry = groups.combined(_sg(v) if extremal else v, _identity(mode, x.dtype), reduce)
    out = ew.where(groups.hit, COMBINE[mode](_sg(x) if extremal else x, _gather(per_entry, groups.src)), x)
    return extremal_tangent(x, v, p, out) if extremal else out


def extremal_tangent(x, v, p, r):
    """The min/max result r (its value, no derivative) given JAX's derivative: split
    equally among x's element and the updates that equal the result (module docstring).

    The value stays r exactly: r - (L - L) with L the linear combination carrying the
    derivative, whose difference with itself is +0.0 (so r = -0.0 keeps its sign).
    """
    n = x.shape[0]
    r = _sg(r)
    kept = ew.equal(x, r)
    won = ew.equal(v, _gather(r, p))
    one, zero = x.dtype.type(1), x.dtype.type(0)
    count = ew.add(ew.where(kept, one, zero), _scatter_add(ew.where(won, one, zero), p, n))
    count = ew.maximum(count, one)  # 0 only where r is NaN: no branch is taken there
    linear = ew.add(ew.where(kept, ew.divide(x, count), zero),
                    _scatter_add(ew.where(won, ew.divide(v, _gather(count, p)), zero), p, n))
    return ew.subtract(r, ew.subtract(_sg(linear), linear))
