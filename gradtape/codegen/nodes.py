"""Symbolic values: how to compute one element of an IR value at an index.

Lowering turns each IR value into a Node. A Node is a description, built
before any LLVM code exists, of how to produce the element at a multi-index
(`read`) and, for nodes whose element depends only on its C-order position
(`linear`), at a linear index (`read_linear`). Kernels (steps.py) emit loops
and ask their nodes for elements inside the loop body, so a chain of
elementwise and layout ops becomes one expression in one loop nest:

    View      an element of a buffer at offset + sum(index * stride): stored
              values and every layout op of a stored value (transpose,
              slice, broadcast, most reshapes) are Views, i.e. pure index
              arithmetic
    Const     a scalar constant, the same at every index
    Map       an elementwise op of operands, with NumPy broadcasting
    Reindex   another node read at a remapped index (layout ops of computed
              values)
    Relabel   a reshape of a linear node: the same linear index
    Placed    a node placed into a larger array filled with a constant
              (pad, unslice)
    Gather    a node read at indices loaded from an index node

Reads are cached per (node, index) within the current loop scope, so a node
used several times at one index is computed once.
"""
from __future__ import annotations

import numpy as np

from .dtypes import constant, from_storage, to_storage
from .dynamic_sizes import is_symbolic, surely
from .scalar import clamped_index


def _size(x):
    """An int, or a run-time size as it is (codegen/dynamic_sizes.py)."""
    return x if is_symbolic(x) else int(x)


def contiguous_strides(shape) -> tuple:
    strides, s = [], 1
    for d in reversed(shape):
        strides.append(s)
        s *= d
    return tuple(reversed(strides))


def is_contiguous(shape, strides) -> bool:
    """Whether C-order positions map to consecutive elements (size-1 axes ignored)."""
    expected = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d == 0:
            return True
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


class Buffer:
    """Memory holding one array in C order: an argument, an arena region or a constant.

    kind is "arg" (slot = index into the args array), "arena" (offset set by
    the arena planner) or "const" (data = the NumPy array, emitted as a global).
    """

    def __init__(self, type, kind: str, slot: int | None = None, data=None):
        self.type = type
        self.kind = kind
        self.slot = slot
        self.data = data
        self.offset = None

    @property
    def nbytes(self) -> int:
        return self.type.size * self.type.dtype.itemsize

    def __repr__(self):
        where = {"arg": f"arg{self.slot}", "arena": f"arena@{self.offset}", "const": "const"}[self.kind]
        return f"Buffer({self.type}, {where})"


class Node:
    linear = False

    def __init__(self, type):
        self.type = type

    @property
    def shape(self):
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype

    def children(self) -> tuple:
        return ()

    def buffers(self) -> set:
        """Every Buffer this node reads."""
        out, todo, seen = set(), [self], set()
        while todo:
            n = todo.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            if isinstance(n, View):
                out.add(n.buffer)
            todo.extend(n.children())
        return out

    def read(self, k, idx):
        key = (id(self), tuple(id(i) for i in idx))
        v = k.cached(key)
        if v is None:
            v = k.remember(key, self._load(k, list(idx)))
        return v

    def read_linear(self, k, lin):
        key = (id(self), "lin", id(lin))
        v = k.cached(key)
        if v is None:
            v = k.remember(key, self._load_linear(k, lin))
        return v

    def _load(self, k, idx):
        raise NotImplementedError

    def _load_linear(self, k, lin):
        return self._load(k, k.delinearize(lin, self.shape))


class View(Node):
    """Elements of `buffer` at offset + sum(index * stride) (strides in elements)."""

    def __init__(self, buffer: Buffer, type=None, offset: int = 0, strides=None):
        super().__init__(buffer.type if type is None else type)
        self.buffer = buffer
        self.offset = _size(offset)
        self.strides = contiguous_strides(self.shape) if strides is None else tuple(_size(s) for s in strides)
        self.linear = is_contiguous(self.shape, self.strides)

    def address(self, k, idx):
        return k.affine(self.offset, zip(idx, self.strides))

    def pointer_at(self, k, addr):
        return k.b.gep(k.pointer(self.buffer), [addr], inbounds=True)

    def _load(self, k, idx):
        return from_storage(k.b, k.b.load(self.pointer_at(k, self.address(k, idx))), self.dtype)

    def _load_linear(self, k, lin):
        return from_storage(k.b, k.b.load(self.pointer_at(k, k.add(k.i64(self.offset), lin))), self.dtype)

    def store(self, k, idx, value):
        k.b.store(to_storage(k.b, value, self.dtype), self.pointer_at(k, self.address(k, idx)))

    def store_linear(self, k, lin, value):
        k.b.store(to_storage(k.b, value, self.dtype), self.pointer_at(k, k.add(k.i64(self.offset), lin)))


class Const(Node):
    """A scalar constant broadcast over `type.shape`."""

    linear = True

    def __init__(self, type, value):
        super().__init__(type)
        self.value = value

    def _load(self, k, idx):
        return constant(self.dtype, self.value)

    _load_linear = _load


def broadcast_index(k, idx, shape, out_shape):
    """The operand index of output index `idx` under NumPy broadcasting."""
    lead = len(out_shape) - len(shape)
    return [k.i64(0) if d == 1 else idx[lead + i] for i, d in enumerate(shape)]


class Map(Node):
    """`emit(k, values) -> value` applied elementwise to broadcast operands."""

    def __init__(self, type, emit, operands):
        super().__init__(type)
        self.emit = emit
        self.operands = tuple(operands)
        # A scalar constant is the same at every index, whatever its shape.
        self.linear = all(
            (o.shape == self.shape and o.linear) or isinstance(o, Const) for o in self.operands
        )

    def children(self):
        return self.operands

    def _load(self, k, idx):
        vals = [
            o.read(k, idx if o.shape == self.shape else broadcast_index(k, idx, o.shape, self.shape))
            for o in self.operands
        ]
        return self.emit(k, vals)

    def _load_linear(self, k, lin):
        if not self.linear:
            return self._load(k, k.delinearize(lin, self.shape))
        return self.emit(k, [o.read_linear(k, lin) for o in self.operands])


class Reindex(Node):
    """`inner` read at `index_fn(k, idx)`: a layout op of a computed value."""

    def __init__(self, type, inner: Node, index_fn):
        super().__init__(type)
        self.inner = inner
        self.index_fn = index_fn

    def children(self):
        return (self.inner,)

    def _load(self, k, idx):
        return self.inner.read(k, self.index_fn(k, idx))


class Relabel(Node):
    """A reshape of a linear node: element i in C order is the inner's element i."""

    linear = True

    def __init__(self, type, inner: Node):
        super().__init__(type)
        self.inner = inner

    def children(self):
        return (self.inner,)

    def _load(self, k, idx):
        return self.inner.read_linear(k, k.linearize(idx, self.shape))

    def _load_linear(self, k, lin):
        return self.inner.read_linear(k, lin)


class Placed(Node):
    """`inner` placed at range(start, ., step) along each axis, `fill` elsewhere."""

    def __init__(self, type, inner: Node, starts, steps, fill):
        super().__init__(type)
        self.inner = inner
        self.starts = tuple(starts)
        self.steps = tuple(steps)
        self.fill = fill

    def children(self):
        return (self.inner,)

    def _load(self, k, idx):
        b = k.b
        inside = None
        inner_idx = []
        for i, start, step, n, d in zip(idx, self.starts, self.steps, self.inner.shape, self.shape):
            if n == 0:
                return constant(self.dtype, self.fill)
            if start == 0 and step == 1 and n == d:
                inner_idx.append(i)
                continue
            t = k.sub(i, k.i64(start)) if step > 0 else k.sub(k.i64(start), i)
            q = t
            ok = None
            r = k.range_of(t) if abs(step) == 1 else None
            if r is not None and surely(lambda: 0 <= r[0] and r[1] <= n):  # inside wherever this loop runs
                inner_idx.append(t)
                continue
            if r is not None and surely(lambda: r[1] <= 0 or r[0] >= n):  # outside wherever this loop runs
                return constant(self.dtype, self.fill)
            if abs(step) != 1:
                q = b.sdiv(t, k.i64(abs(step)))
                ok = b.icmp_signed("==", b.mul(q, k.i64(abs(step))), t)
            in_range = b.icmp_unsigned("<", q, k.i64(n))  # negative q is huge unsigned
            ok = in_range if ok is None else b.and_(ok, in_range)
            inside = ok if inside is None else b.and_(inside, ok)
            inner_idx.append(b.select(ok, q, k.i64(0)))
        value = self.inner.read(k, inner_idx)
        if inside is None:
            return value
        return b.select(inside, value, constant(self.dtype, self.fill))


class Gather(Node):
    """np.take(inner, indices, axis): indices loaded from `index`, clamped to the edge (clamped_index)."""

    def __init__(self, type, inner: Node, index: Node, axis: int):
        super().__init__(type)
        self.inner = inner
        self.index = index
        self.axis = axis

    def children(self):
        return (self.inner, self.index)

    def _load(self, k, idx):
        b = k.b
        a, r = self.axis, self.index.type.ndim
        j = clamped_index(b, self.index.read(k, idx[a:a + r]), self.index.dtype, self.inner.shape[a])
        return self.inner.read(k, idx[:a] + [j] + idx[a + r:])


def literal_node(literal, make_const_buffer):
    """The Node of an IR Literal: a Const when it holds one value, else a View of a global."""
    value = np.asarray(literal.value)
    if value.size == 1:
        return Const(literal.type, value.reshape(()).item())
    return View(make_const_buffer(literal.type, value))


def placement_splits(node: Node, shape, max_pieces: int = 16, max_inner_pieces: int = 32) -> list:
    """Where to cut the loops over `shape` that read `node` (see Emitter.nest).

    A Placed node read at a loop index shifted by a constant (through
    elementwise ops and other Placed nodes) is inside its operand on one
    range of that loop and outside on the rest; cutting the loop at those
    edges leaves each piece a static answer instead of a select and a
    clamped (gathered) load per element: grad of sum((x[1:] - x[:-1]**2)**2)
    adds three unslices, and its loop over 1e6 elements takes 0.7 ms cut
    against 3.5 ms uncut. The innermost axis is cut into at most
    `max_inner_pieces`, outer ones while the nest is copied at most
    `max_pieces` times (each piece is a copy of the loop body).
    """
    cuts = [set() for _ in shape]
    seen = set()

    def walk(n, axes):  # axes[j]: (loop axis, offset) when n's index j is that loop index + offset
        key = (id(n), tuple(axes))
        if key in seen:
            return
        seen.add(key)
        if isinstance(n, Map):
            for o in n.operands:
                lead = len(n.shape) - len(o.shape)
                walk(o, [None if d == 1 and n.shape[lead + j] != 1 else axes[lead + j]
                         for j, d in enumerate(o.shape)])
        elif isinstance(n, Placed):
            inner = []
            for a, start, step, m, d in zip(axes, n.starts, n.steps, n.inner.shape, n.shape):
                if start == 0 and step == 1 and m == d:
                    inner.append(a)
                    continue
                if a is not None and abs(step) == 1:
                    axis, off = a
                    lo = start - off if step == 1 else start - off - m + 1
                    cuts[axis].update((lo, lo + m))
                inner.append((a[0], a[1] - start) if a is not None and step == 1 else None)
            walk(n.inner, inner)

    walk(node, [(a, 0) for a in range(len(shape))])
    out = [set() for _ in shape]
    copies = 1
    for a in reversed(range(len(shape))):
        inside = {c for c in cuts[a] if surely(lambda: 0 < c < shape[a])}  # a run-time size: no cut unless sure
        limit = max_inner_pieces if a == len(shape) - 1 else max_pieces
        if inside and copies * (len(inside) + 1) <= limit:
            out[a] = inside
            copies *= len(inside) + 1
    return out
