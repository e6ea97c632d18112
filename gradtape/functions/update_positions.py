"""Where an indexed update writes: the flat positions `x[index]` reads, and, when
they are known while tracing, the rounds that apply duplicates in order.

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


class Rounds:
    """The flat positions `p` (K entries) of one update, split so that duplicates are
    applied in the order they come, as np.add.at applies them.

    Round r holds the r-th occurrence of every position written at least r + 1
    times, so within a round no position repeats and each round is one gather:
    `src[r][t]` is the entry written to position t (0 where `hit[r][t]` is
    False). `last` is the same for the last occurrence of each position alone:
    the entry `set` keeps (the last write wins, as in NumPy's `a[idx] = v`).
    """

    def __init__(self, p: np.ndarray, n: int):
        order = np.argsort(p, kind="stable")  # stable: each group keeps its entries' order
        sorted_p = p[order]
        first = np.r_[True, sorted_p[1:] != sorted_p[:-1]]
        group_start = np.maximum.accumulate(np.where(first, np.arange(p.size), 0))
        occurrence = np.empty(p.size, np.int64)
        occurrence[order] = np.arange(p.size) - group_start
        self.rounds = [self._round(np.flatnonzero(occurrence == r), p, n)
                       for r in range(int(occurrence.max()) + 1 if p.size else 0)]
        last_of_group = np.r_[sorted_p[1:] != sorted_p[:-1], True]
        self.last = self._round(order[last_of_group], p, n)

    @staticmethod
    def _round(entries: np.ndarray, p: np.ndarray, n: int) -> tuple:
        """(hit, src) for `entries`, whose positions are distinct: src is None when it is the
        identity (entry t writes position t), hit None when every position is written."""
        hit = np.zeros(n, bool)
        hit[p[entries]] = True
        src = np.zeros(n, np.int64)
        src[p[entries]] = entries
        if np.array_equal(src, np.arange(n)):
            src = None
        return (None if hit.all() else hit), src
