"""Where an indexed update writes: the flat positions `x[index]` reads, and, when
they are known while tracing, how the entries that write the same position group.

`x.at[index].op(v)` (indexed_update.py) works on x flattened to one axis of
n = x.size elements. Indexing `arange(n).reshape(x.shape)` with the same
index gives, for every element of the indexed shape, the flat position it
stands for, with `Tensor.__getitem__`'s own rules for every index form (so
`.at[...]` accepts exactly what `x[...]` accepts, and an index out of bounds
fails, or is clamped, exactly as there).

A concrete index gives a NumPy array of positions; an index holding a traced
integer tensor (an argument of a staged function, or batched under vmap)
gives an abstract Tensor, whose duplicates are only known when it runs.
"""
from __future__ import annotations

import numpy as np

from ..tracer.tensor import Tensor
from .shape import getitem


def flat_positions(shape, index):
    """The flat position of every element of `x[index]` for an x of `shape`: an int64
    NumPy array of the indexed shape, or an abstract integer Tensor (a traced index)."""
    n = int(np.prod(shape, dtype=np.int64))
    positions = Tensor(np.arange(n, dtype=np.int64).reshape(shape))
    out = getitem(positions, index)
    return out if out.is_abstract else np.asarray(out.numpy())


class Groups:
    """The entries of the known flat positions `p` (K of them) grouped by the position
    they write, for the updates to combine each group's values first.

    `order` sorts the entries by position, each group's entries in the order they come
    (None when p is sorted already). `levels` then halve every group until one value per
    group is left: at each level, slot i of the new values combines slots `left[i]` and
    `right[i]` of the previous ones where `paired[i]` (else it is `left[i]` alone), so a
    position written r times costs log2(r) levels, not r. Value g is then group g's, and
    it lands at position t through `src[t] = g` where `hit[t]` (hit None: every position).
    `last` is (hit, src) for `set`: the entry written last to each position (the last
    write wins, as in NumPy's `a[idx] = v`); src None when entry t writes position t.
    """

    def __init__(self, p: np.ndarray, n: int):
        order = np.argsort(p, kind="stable")  # stable: each group keeps its entries' order
        sorted_p = p[order]
        starts = np.flatnonzero(np.r_[True, sorted_p[1:] != sorted_p[:-1]])
        ends = np.r_[starts[1:], p.size]
        self.order = None if np.array_equal(order, np.arange(p.size)) else order
        self.levels = self._levels(np.repeat(np.arange(starts.size), ends - starts))
        self.hit, self.src = self._placed(sorted_p[starts], np.arange(starts.size), n)
        self.last = self._placed(sorted_p[ends - 1], order[ends - 1], n)

    @staticmethod
    def _levels(group: np.ndarray) -> list:
        """(left, right, paired) per level, for slots whose group ids are `group` (sorted)."""
        levels = []
        while group.size and np.any(group[1:] == group[:-1]):
            start = np.r_[True, group[1:] != group[:-1]]
            rank = np.arange(group.size) - np.maximum.accumulate(np.where(start, np.arange(group.size), 0))
            left = np.flatnonzero(rank % 2 == 0)
            right = np.minimum(left + 1, group.size - 1)
            paired = (left + 1 < group.size) & (group[right] == group[left])
            levels.append((left, np.where(paired, right, left), None if paired.all() else paired))
            group = group[left]
        return levels

    @staticmethod
    def _placed(targets: np.ndarray, values: np.ndarray, n: int) -> tuple:
        """(hit, src) putting values[i] at the distinct positions targets[i] (see the class)."""
        hit = np.zeros(n, bool)
        hit[targets] = True
        src = np.zeros(n, np.int64)
        src[targets] = values
        if np.array_equal(src, np.arange(n)):
            src = None
        return (None if hit.all() else hit), src
