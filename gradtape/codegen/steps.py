"""Kernels: the loop nests a lowered Function runs, one after another.

Each step reads Nodes (so every elementwise and layout op feeding it is
computed inside its loops) and writes Views. Steps report the buffers they
read and write, from which the arena planner derives lifetimes.

    Fill         dest[i] = src[i]: one flat loop when both are linear in C
                 order, else a loop nest over dest's shape
    FusedFill    several Fills over one index space in one loop nest
    ScatterAdd   np.add.at into zeros

Reductions are in reductions.py, contractions in contract.py.
"""
from __future__ import annotations

from ..ir import ops
from .dtypes import constant
from .nodes import Map, Node, View, placement_splits
from .scalar import SCALAR, clamped_index


class Step:
    def reads(self) -> set:
        return set()

    def writes(self) -> set:
        return set()

    def emit(self, k):
        raise NotImplementedError


class Fill(Step):
    """dest[...] = src[...] (src may be any Node of dest's shape and dtype)."""

    def __init__(self, dest: View, src: Node):
        self.dest = dest
        self.src = src
        self._reads = None

    def reads(self):
        # Asked by fusion, the arena planner and the emitter; a walk of src's whole DAG each time.
        if self._reads is None:
            self._reads = frozenset(self.src.buffers())
        return self._reads

    def writes(self):
        return {self.dest.buffer}

    def emit(self, k):
        dest, src = self.dest, self.src
        if dest.type.size == 0:
            return
        if dest.linear and src.linear:
            k.loop(dest.type.size, lambda i: dest.store_linear(k, i, src.read_linear(k, i)))
        else:
            k.nest(dest.shape, lambda idx: dest.store(k, idx, src.read(k, idx)),
                   splits=placement_splits(src, dest.shape))


def load_fresh(k, view: View, idx):
    """A read that bypasses the cache (for memory this step also writes)."""
    return view._load(k, idx)


# --- scatter_add --------------------------------------------------------------------------

class ScatterAdd(Step):
    """dest = zeros; dest[..., idx[j], ...] += x[..., j, ...] (duplicates add up)."""

    def __init__(self, dest: View, x: Node, index: Node, axis: int):
        self.dest, self.x, self.index, self.axis = dest, x, index, axis

    def reads(self):
        return self.x.buffers() | self.index.buffers()

    def writes(self):
        return {self.dest.buffer}

    def emit(self, k):
        dest, x, axis = self.dest, self.x, self.axis
        dtype = dest.dtype
        k.loop(dest.type.size, lambda i: dest.store_linear(k, i, constant(dtype, 0)))
        if x.type.size == 0:
            return
        r = self.index.type.ndim
        size = dest.shape[axis]
        add = SCALAR[ops.add_p]([dtype, dtype], dtype)  # NumPy's add, in index order like np.add.at

        def body(xi):
            b = k.b
            # Clamped to the edge like the gather it is the gradient of: an out-of-range
            # index's gradient goes to the element that gather read.
            j = clamped_index(b, self.index.read(k, xi[axis:axis + r]), self.index.dtype, size)
            at = xi[:axis] + [j] + xi[axis + r:]
            dest.store(k, at, add(k, [load_fresh(k, dest, at), x.read(k, xi)]))

        k.nest(x.shape, body)


# --- horizontal fusion of fills -----------------------------------------------------------

MAX_FUSED_FILLS = 8


class FusedFill(Step):
    """Several Fills over one index space in one loop nest (each stored value once)."""

    def __init__(self, fills):
        self.fills = list(fills)

    def reads(self):
        return set().union(*(f.reads() for f in self.fills))

    def writes(self):
        return set().union(*(f.writes() for f in self.fills))

    def emit(self, k):
        first = self.fills[0].dest
        if first.type.size == 0:
            return
        if all(f.dest.linear and f.src.linear for f in self.fills):
            k.loop(first.type.size,
                   lambda i: [f.dest.store_linear(k, i, f.src.read_linear(k, i)) for f in self.fills])
        else:
            per_fill = [placement_splits(f.src, first.shape) for f in self.fills]
            splits = [set().union(*cuts) for cuts in zip(*per_fill)]
            k.nest(first.shape, lambda idx: [f.dest.store(k, idx, f.src.read(k, idx)) for f in self.fills],
                   splits=splits)


def fuse_fills(steps) -> list:
    """Merge runs of consecutive Fills over the same shape into FusedFills.

    A Fill joins the run when it reads what the run wrote only at the index
    the loop is at (through elementwise ops of equal shape, from a View laid
    out exactly like the written one): it then reads back a value stored in
    the same iteration. Any other read of a value written in the run (a
    transpose, a broadcast, a gather of it) would read an element a later
    iteration writes, so it starts a new run.
    """
    out: list = []
    run: list = []

    def flush():
        if len(run) == 1:
            out.append(run[0])
        elif run:
            out.append(FusedFill(run))
        run.clear()

    for step in steps:
        if isinstance(step, Fill) and run and _joins(run, step):
            run.append(step)
            continue
        flush()
        if isinstance(step, Fill):
            run.append(step)
        else:
            out.append(step)
    flush()
    return out


def _joins(run, fill) -> bool:
    if len(run) >= MAX_FUSED_FILLS or fill.dest.shape != run[0].dest.shape:
        return False
    linear = all(f.dest.linear and f.src.linear for f in run)
    if linear != (fill.dest.linear and fill.src.linear):
        return False
    written = {f.dest.buffer: f.dest for f in run}
    if any(fill.dest.buffer in f.reads() for f in run):
        return False
    todo = [(fill.src, True)]
    seen = set()  # (node, at_index) pairs walked: src is a DAG, whose paths can be exponentially many
    while todo:
        node, at_index = todo.pop()
        if (id(node), at_index) in seen:
            continue
        seen.add((id(node), at_index))
        if isinstance(node, View):
            w = written.get(node.buffer)
            if w is not None and not (
                at_index and node.shape == w.shape and node.offset == w.offset and node.strides == w.strides
            ):
                return False
            continue
        same = isinstance(node, Map)
        todo.extend((c, at_index and same and c.shape == node.shape) for c in node.children())
    return True
