"""Matrix-vector pairs over one matrix, run block of rows by block of rows.

The gradient of a linear model reads its matrix twice: forward `z = X @ w`,
elementwise work on z (a loss's derivative), then backward `g = X.T @ r`.
As separate steps X streams through the caches twice (logistic regression
on a 4000 x 50 float64 X, 1.6 MB: 32-40 us per OpenBLAS gemv, 10 us for the
elementwise part). When the steps between the two products read what they
write only at the row being computed, they run on a block of rows at a time:

    g = 0
    for each block R of rows of X (BLOCK_ELEMENTS elements: stays in L1):
        z[R] = X[R, :] @ w          GROUP_ROWS rows at a time, one load of w per GROUP_ROWS FMAs
        r[R] = f(z[R], ...)         the elementwise steps, vectorized over R
        g += X[R, :].T @ r[R]       GROUP_ROWS rows at a time, one load and store of g per GROUP_ROWS FMAs

so X leaves memory (or L3) once per call, and its second read hits L1. The
products are loops here, not gemv calls: blocks are small, and OpenBLAS's
gemv on short rows is no faster than these loops. They are written in
explicit vectors of LANE_BYTES (a row's columns in vectors, then one
narrower vector for the last `cols % lanes`), so no row ends in scalar
code; the dots of one group end in one vector of z, summed across lanes by
shuffles (`transpose_sum`) rather than row by row. Sums are reassociated
(as BLAS's are), so results differ from the reference interpreter's in the
last bits.

Measured on W4's step (4000 x 50 float64, shared 2-core Zen 3, its
elementwise part one sigmoid): 51-53 us per call with 64 KiB blocks, 4 rows
per group and scalar code for the horizontal sums and the last two
columns; 43-45 us as here (the blocks' second read from L1 instead of L2,
half the loads of w and g per FMA). Of those, the dots take 23 us, bound
by the fill of L1 from L2 (a sum over X alone takes 22 us, and the dots
take as long when X fits in L2), the axpys 12 us and the sigmoid 7.5 us.
Software prefetches of the next block, in any of the three parts, and the
three parts interleaved group by group, were slower.
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from . import blas
from .contract import Gemv
from .dtypes import I32, constant, storage_type
from .nodes import Map, View
from .steps import Fill, FusedFill, Step

BLOCK_ELEMENTS = 2048  # elements of the matrix per block (16 KiB of float64: stays in L1 between the products)
MAX_COLS = 8192  # longer rows: w and g no longer stay in cache while the loops sweep them
MIN_ROWS = 16  # fewer rows than two groups: nothing to gain
GROUP_ROWS = 8  # rows per pass of the dot and axpy loops: 8 accumulators, each load of w or g serves 8 FMAs
LANE_BYTES = 32  # one AVX2 register (4 float64, 8 float32): the vector width of the loops
FLAGS = ("reassoc", "contract")  # vectorizable sums with fused multiply-adds, as BLAS has (no nsz: reductions.py)
MAX_LOOKAHEAD = 16  # steps scanned for the second product of a pair


def block_matvec_pairs(steps) -> list:
    """Replace each run `Gemv NO_TRANS, row-local fills, Gemv TRANS` over one matrix by a RowBlocked step.

    Other steps between the two products (the loss's own sum, in a
    value_and_grad) move after the pair when the pair does not read what
    they write.
    """
    out: list = []
    i = 0
    while i < len(steps):
        first = steps[i]
        if _is_plain(first, blas.NO_TRANS):
            middle, later = [], []
            j = i + 1
            while j < len(steps) and j - i <= MAX_LOOKAHEAD and not isinstance(steps[j], Gemv):
                (middle if _is_row_fill(steps[j], first.shape[0]) else later).append(steps[j])
                j += 1
            last = steps[j] if j < len(steps) else None
            if last is not None and _pairs(first, middle, last) and _can_follow(later, first, middle, last):
                out.append(RowBlocked(first, middle, last))
                out.extend(later)
                i = j + 1
                continue
        out.append(first)
        i += 1
    return out


def _can_follow(later, first, middle, last) -> bool:
    """Whether `later` (steps that ran among the pair) may run after it: the pair neither reads nor writes
    what they write (what they read is complete by then: buffers are written once)."""
    touched = set().union(first.reads(), first.writes(), last.reads(), last.writes(),
                          *(s.reads() | s.writes() for s in middle))
    return all(not (s.writes() & touched) for s in later)


def _is_plain(step, trans) -> bool:
    """A gemv without batch letters over a matrix of MIN_ROWS rows or more, of rows short enough
    that w and g stay in cache while the loops sweep them once per GROUP rows."""
    return (isinstance(step, Gemv) and not step.batch and step.op_a[0] == trans
            and step.shape[0] >= MIN_ROWS and step.shape[1] <= MAX_COLS)


def _fills(step) -> list:
    return step.fills if isinstance(step, FusedFill) else [step]


def _is_row_fill(step, rows: int) -> bool:
    return isinstance(step, (Fill, FusedFill)) and all(f.dest.shape == (rows,) for f in _fills(step))


def _same_view(a: View, b: View) -> bool:
    return a.buffer is b.buffer and a.offset == b.offset and a.strides == b.strides


def _pairs(first: Gemv, middle, last) -> bool:
    """Whether running first, middle and last block by block computes what running them in turn does."""
    if not _is_plain(last, blas.TRANS) or last.shape != first.shape:
        return False
    if (last.a.buffer, last.a.offset, last.op_a[1]) != (first.a.buffer, first.a.offset, first.op_a[1]):
        return False  # another matrix: nothing to share
    rows = first.shape[0]
    written = {first.y.buffer: first.y}  # buffer -> the (rows,) view the group writes it through
    for f in (f for s in middle for f in _fills(s)):
        if f.dest.buffer in written or not _reads_rows_only(f.src, written):
            return False
        written[f.dest.buffer] = f.dest
    if first.y.shape != (rows,):
        return False
    if first.a.buffer in written or first.x.buffer in written or last.y.buffer in written:
        return False
    read = set().union(first.reads(), *(s.reads() for s in middle))
    if last.y.buffer in read:  # last accumulates into y: nothing in the group may read it
        return False
    w = written.get(last.x.buffer)
    return w is None or (w.offset == last.x.offset == 0 and w.strides == (1,) and last.inc_x == 1)


def _reads_rows_only(node, written) -> bool:
    """Whether `node` (of shape (rows,)) reads the buffers in `written` only at its own index."""
    todo = [(node, True)]
    while todo:
        n, at_index = todo.pop()
        if isinstance(n, View):
            w = written.get(n.buffer)
            if w is not None and not (at_index and _same_view(n, w) and n.shape == w.shape):
                return False
            continue
        same = isinstance(n, Map)
        todo.extend((c, at_index and same and c.shape == n.shape) for c in n.children())
    return True


class RowBlocked(Step):
    """first, middle and last (see block_matvec_pairs) run block of rows by block of rows."""

    def __init__(self, first: Gemv, middle, last: Gemv):
        self.first, self.middle, self.last = first, list(middle), last
        rows, cols = first.shape
        self.rows = rows
        self.block = max(GROUP_ROWS, min(rows, BLOCK_ELEMENTS // max(cols, 1)) // GROUP_ROWS * GROUP_ROWS)

    def reads(self):
        return set().union(self.first.reads(), self.last.reads(), *(s.reads() for s in self.middle))

    def writes(self):
        return set().union(self.first.writes(), self.last.writes(), *(s.writes() for s in self.middle))

    def emit(self, k):
        _Loops(self, k).emit()


class _Loops:
    """The loops of one RowBlocked step (see the module docstring)."""

    def __init__(self, step: RowBlocked, k):
        self.step, self.k, self.b = step, k, k.b
        self.first, self.last = step.first, step.last
        self.dtype = step.last.y.dtype
        self.itemsize = np.dtype(self.dtype).itemsize
        self.lanes = max(1, LANE_BYTES // self.itemsize)
        self.cols = step.first.shape[1]
        self.nvec, self.tail = divmod(self.cols, self.lanes)
        scalar = storage_type(self.dtype)
        self.vec = ir.VectorType(scalar, self.lanes)
        self.tail_vec = ir.VectorType(scalar, self.tail) if self.tail else None
        self.fills = [f for s in step.middle for f in _fills(s)]

    def emit(self):
        k, step = self.k, self.step
        zero = constant(self.dtype, 0)
        k.loop(self.cols, lambda c: self.store_scalar(zero, self.last.y, self.last.inc_y, c))
        full, tail = divmod(step.rows, step.block)
        k.loop(full, lambda i: self.block(k.mul(i, step.block), step.block))
        if tail:
            self.block(k.i64(full * step.block), tail)

    def block(self, row0, n):
        self.in_groups(row0, n, self.dots)
        self.middle(row0, n)
        self.in_groups(row0, n, self.axpys)

    def in_groups(self, row0, n, product):
        k = self.k
        full, rest = divmod(n, GROUP_ROWS)
        k.loop(full, lambda g: product(k.add(row0, k.mul(g, GROUP_ROWS)), GROUP_ROWS))
        if rest:
            product(k.add(row0, k.i64(full * GROUP_ROWS)), rest)

    # --- the three parts ------------------------------------------------------------------
    def dots(self, i0, n):
        """z[i0:i0+n] = X[i0:i0+n, :] @ w: a vector accumulator per row (two when few rows leave
        registers for them: 8 independent chains of FMAs either way)."""
        k, first = self.k, self.first
        rows = [k.add(i0, k.i64(r)) for r in range(n)]
        split = 2 if 2 * n <= GROUP_ROWS and self.nvec >= 2 else 1
        zero = ir.Constant(self.vec, None)

        def columns(j, *accs):  # vectors j*split ... j*split + split - 1 of every row
            accs = list(accs)
            for s in range(split):
                c = k.mul(k.add(k.mul(j, split), k.i64(s)), self.lanes)
                w = self.load(first.x, first.inc_x, c, self.vec)
                for r, row in enumerate(rows):
                    accs[r * split + s] = self.fma(self.row_load(row, c, self.vec), w, accs[r * split + s])
            return tuple(accs)

        accs = list(k.loop(self.nvec // split, columns, (zero,) * (n * split))) or [zero] * (n * split)
        for j in range(self.nvec // split * split, self.nvec):  # the vector left over by the split
            c = k.i64(j * self.lanes)
            w = self.load(first.x, first.inc_x, c, self.vec)
            for r, row in enumerate(rows):
                accs[r * split] = self.fma(self.row_load(row, c, self.vec), w, accs[r * split])
        if self.tail:  # the last columns, zero-extended to a full vector
            c = k.i64(self.nvec * self.lanes)
            w = self.widen(self.load(first.x, first.inc_x, c, self.tail_vec))
            for r, row in enumerate(rows):
                accs[r * split] = self.fma(self.widen(self.row_load(row, c, self.tail_vec)), w, accs[r * split])
        sums = [accs[r] for r in range(n)] if split == 1 else [
            self.add(accs[2 * r], accs[2 * r + 1]) for r in range(n)]
        if n % self.lanes == 0:
            for v in range(0, n, self.lanes):
                self.store(self.transpose_sum(sums[v:v + self.lanes]), first.y, first.inc_y, rows[v], self.vec)
        else:
            for row, v in zip(rows, sums):
                self.store_scalar(self.hsum(v), first.y, first.inc_y, row)

    def middle(self, row0, n):
        """The elementwise steps over the block's rows (LLVM vectorizes this loop)."""
        k = self.k

        def row(j):
            i = k.add(row0, j)
            for f in self.fills:
                f.dest.store(k, [i], f.src.read(k, [i]))

        k.loop(n, row)

    def axpys(self, i0, n):
        """g += X[i0:i0+n, :].T @ r[i0:i0+n]: each vector of g loaded and stored once per n rows."""
        k, b, last = self.k, self.b, self.last
        rows = [k.add(i0, k.i64(r)) for r in range(n)]
        us = [b.load(last.x.pointer_at(k, k.add(k.i64(last.x.offset), k.mul(row, last.inc_x)))) for row in rows]

        def update(c, vt):
            g = self.load(last.y, last.inc_y, c, vt)
            for u, row in zip(us, rows):
                g = self.fma(self.splat(u, vt), self.row_load(row, c, vt), g)
            self.store(g, last.y, last.inc_y, c, vt)

        k.loop(self.nvec, lambda j: update(k.mul(j, self.lanes), self.vec))
        if self.tail:
            update(k.i64(self.nvec * self.lanes), self.tail_vec)

    # --- vectors --------------------------------------------------------------------
    def pointer(self, view, inc: int, i):
        k = self.k
        return view.pointer_at(k, k.add(k.i64(view.offset), k.mul(i, inc)))

    def load(self, view, inc: int, i, vt):
        """Elements i, i + 1, ... (as many as vt has lanes) of a vector view with stride `inc`."""
        b = self.b
        if inc == 1:
            return b.load(b.bitcast(self.pointer(view, inc, i), vt.as_pointer()), align=self.itemsize)
        v = ir.Constant(vt, None)
        for lane in range(vt.count):
            v = b.insert_element(v, b.load(self.pointer(view, inc, self.k.add(i, self.k.i64(lane)))),
                                 ir.Constant(I32, lane))
        return v

    def store(self, value, view, inc: int, i, vt):
        b = self.b
        if inc == 1:
            b.store(value, b.bitcast(self.pointer(view, inc, i), vt.as_pointer()), align=self.itemsize)
            return
        for lane in range(vt.count):
            b.store(b.extract_element(value, ir.Constant(I32, lane)),
                    self.pointer(view, inc, self.k.add(i, self.k.i64(lane))))

    def store_scalar(self, value, view, inc: int, i):
        self.b.store(value, self.pointer(view, inc, i))

    def row_load(self, row, c, vt):
        """Matrix elements (row, c), (row, c + 1), ... (rows are contiguous) as a vector of type vt."""
        k = self.k
        return self.load(self.first.a, 1, k.add(k.mul(row, self.first.op_a[1]), c), vt)

    def shuffle(self, x, y, lanes):
        return self.b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, len(lanes)), list(lanes)))

    def widen(self, x):
        """A tail vector as a full one, zeros in the lanes past the tail."""
        return self.shuffle(x, ir.Constant(self.tail_vec, None),
                            list(range(self.tail)) + [self.tail] * (self.lanes - self.tail))

    def splat(self, x, vt):
        v = self.b.insert_element(ir.Constant(vt, None), x, ir.Constant(I32, 0))
        return self.shuffle(v, ir.Constant(vt, None), [0] * vt.count)

    def fma(self, x, y, acc):
        return self.b.fadd(acc, self.b.fmul(x, y, flags=FLAGS), flags=FLAGS)

    def add(self, x, y):
        return self.b.fadd(x, y, flags=FLAGS)

    def hsum(self, v):
        """The sum of a vector's lanes (halves folded: log2(lanes) adds)."""
        while v.type.count > 1:
            half = v.type.count // 2
            v = self.add(self.shuffle(v, v, range(half)), self.shuffle(v, v, range(half, 2 * half)))
        return self.b.extract_element(v, ir.Constant(I32, 0))

    def transpose_sum(self, vs):
        """The vector whose lane r is the sum of the lanes of vs[r] (len(vs) == lanes).

        Pairs of vectors are added lane-interleaved, which halves the partial
        sums per row at each level: for 4 lanes, [a0+a1, b0+b1, a2+a3, b2+b3]
        from a and b, then [a, b, c, d] from that and its c, d counterpart
        (LLVM emits vhaddpd and a 128-bit permute and add).
        """
        n, period = self.lanes, 1
        while len(vs) > 1:
            lo, hi = [], []
            for base in range(0, n, 2 * period):
                lo += [base + t for t in range(period)] + [n + base + t for t in range(period)]
                hi += [base + period + t for t in range(period)] + [n + base + period + t for t in range(period)]
            vs = [self.add(self.shuffle(x, y, lo), self.shuffle(x, y, hi)) for x, y in zip(vs[::2], vs[1::2])]
            period *= 2
        return vs[0]
