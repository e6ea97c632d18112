"""The state of emitting one LLVM function: the builder, buffer pointers,
index arithmetic that folds constants, counted loops, and the cache that
lets a value read twice at the same index be computed once.

Loops are emitted bottom-tested (`do { body } while (++i < n)`): trip counts
are static and a loop of length 0 is never emitted, and this is the rotated
form LLVM's loop vectorizer expects. Every loop body (and every conditional
region) gets its own cache scope, because a value defined inside it does not
dominate the code after it.

The emitter knows the static range of every loop index (and of a constant
offset from one), so a node can drop a bounds check that the loop's range
already decides: a nest split at the edges of an unslice or pad (`splits`)
runs its interior without selects, in loops LLVM vectorizes.
"""
from __future__ import annotations

import contextlib

import llvmlite.ir as ir

from .dtypes import I64, storage_type
from .dynamic_sizes import DynamicUnsupported, is_symbolic, surely


class Emitter:
    """Emission state of one function body (see module docstring)."""

    def __init__(self, module: ir.Module, builder: ir.IRBuilder, pointers: dict):
        self.module = module
        self.b = builder
        self._pointers = pointers  # Buffer -> i8* value defined in the entry block
        self._consts: dict = {}
        self._cache: list = [{}]
        self._ranges: dict = {}  # id(index value) -> (value, lo, hi)
        self.sizes = None  # a dynamic version's sizes vector (i64*; codegen/dynamic.py)
        self._size_builder = None

    # --- constants and index arithmetic (folded when both sides are constant) ------

    def i64(self, value: int) -> ir.Constant:
        c = self._consts.get(value)
        if c is None:
            if type(value) is not int and is_symbolic(value):
                c = self._consts[value] = self._size_value(value)
            else:
                c = self._consts[value] = ir.Constant(I64, int(value))
        return c

    def use_sizes(self, sizes: ir.Value, block: ir.Block):
        """Read run-time sizes from the i8* `sizes` (codegen/dynamic.py), computing them in
        `block`, which must dominate all the code this emitter writes (the caller ends it)."""
        self._size_builder = ir.IRBuilder(block)
        self.sizes = self._size_builder.bitcast(sizes, I64.as_pointer())

    def _size_value(self, size) -> ir.Value:
        """A polynomial in the run-time size N, computed where it dominates every use."""
        if self.sizes is None:
            raise DynamicUnsupported(f"the size {size!r} reached code that has no run-time sizes")
        eb = self._size_builder
        n = self._consts.get("N")
        if n is None:
            n = self._consts["N"] = eb.load(self.sizes, name="N")
        acc = None
        for power, coeff in sorted(size.coeffs.items()):
            term = ir.Constant(I64, coeff)
            for _ in range(power):
                term = eb.mul(term, n, flags=("nsw",))
            acc = term if acc is None else eb.add(acc, term, flags=("nsw",))
        return acc

    @staticmethod
    def const_value(v):
        return v.constant if isinstance(v, ir.Constant) else None

    def add(self, x, y):
        cx, cy = self.const_value(x), self.const_value(y)
        if cx is not None and cy is not None:
            return self.i64(cx + cy)
        if cx == 0:
            return y
        if cy == 0:
            return x
        return self._shifted(self.b.add(x, y), x if cy is not None else y, cx if cx is not None else cy, 1)

    def sub(self, x, y):
        cx, cy = self.const_value(x), self.const_value(y)
        if cx is not None and cy is not None:
            return self.i64(cx - cy)
        if cy == 0:
            return x
        if cy is not None:
            return self._shifted(self.b.sub(x, y), x, -cy, 1)
        return self._shifted(self.b.sub(x, y), y, cx, -1)

    # --- static ranges of index values ---------------------------------------------------

    def range_of(self, v):
        """(lo, hi): v is known to lie in range(lo, hi) wherever it is used, or None."""
        c = self.const_value(v)
        if c is not None:
            return c, c + 1
        r = self._ranges.get(id(v))
        return None if r is None else r[1:]

    def note_range(self, v, lo: int, hi: int):
        """Record that index value v lies in range(lo, hi) (a loop with bounds known only at run time)."""
        self._ranges[id(v)] = (v, lo, hi)

    def _shifted(self, result, v, c, sign):
        """Record the range of result = c + sign * v (c a Python int or None) from v's range."""
        r = self.range_of(v) if c is not None else None
        if r is not None:
            lo, hi = (c + r[0], c + r[1]) if sign > 0 else (c - r[1] + 1, c - r[0] + 1)
            self._ranges[id(result)] = (result, lo, hi)  # the value itself keeps its id unique
        return result

    def mul(self, x, c: int):
        """x * c for a Python int c."""
        cx = self.const_value(x)
        if cx is not None:
            return self.i64(cx * c)
        if c == 1:
            return x
        if c == 0:
            return self.i64(0)
        return self.b.mul(x, self.i64(c))

    def affine(self, base: int, terms) -> ir.Value:
        """base + sum(index * stride) over (index, stride) pairs."""
        acc = self.i64(base)
        for index, stride in terms:
            if stride:
                acc = self.add(acc, self.mul(index, stride))
        return acc

    def linearize(self, idx, shape):
        """The C-order linear index of multi-index `idx` in `shape`."""
        terms, stride = [], 1
        for i, d in zip(reversed(idx), reversed(shape)):
            if d != 1:
                terms.append((i, stride))
            stride *= d
        return self.affine(0, terms)

    def delinearize(self, lin, shape):
        """The multi-index of C-order linear index `lin` in `shape`."""
        idx = []
        rest = lin
        for d in reversed(shape):
            if d == 1:
                idx.append(self.i64(0))
                continue
            c = self.const_value(rest)
            if c is not None:
                idx.append(self.i64(c % d))
                rest = self.i64(c // d)
            else:
                idx.append(self.b.urem(rest, self.i64(d)))
                rest = self.b.udiv(rest, self.i64(d))
        return idx[::-1]

    # --- pointers ---------------------------------------------------------------------

    def pointer(self, buffer, dtype=None):
        """Typed pointer to the first element of `buffer` (as `dtype`, default its own)."""
        dtype = buffer.type.dtype if dtype is None else dtype
        key = ("ptr", id(buffer), str(dtype))
        p = self.cached(key)
        if p is None:
            p = self.remember(key, self.b.bitcast(self._pointers[buffer], storage_type(dtype).as_pointer()))
        return p

    # --- the read cache -------------------------------------------------------------

    def cached(self, key):
        for scope in reversed(self._cache):
            v = scope.get(key)
            if v is not None:
                return v
        return None

    def remember(self, key, value):
        self._cache[-1][key] = value
        return value

    @contextlib.contextmanager
    def scope(self):
        self._cache.append({})
        try:
            yield
        finally:
            self._cache.pop()

    # --- loops --------------------------------------------------------------------

    def loop(self, n: int, body, carry=(), start: int = 0):
        """`for i in range(start, n)`: body(i, *carry) returns the next carry; returns the last.

        n and start are Python ints (or run-time sizes: codegen/dynamic_sizes.py).
        Loops of one iteration are not emitted (i is the constant `start`).
        """
        carry = tuple(carry)
        if type(n) is not int or type(start) is not int:
            if not surely(lambda: n > start):  # empty at some run-time size: test first
                return carry if surely(lambda: n <= start) else self._guarded_loop(n, body, carry, start)
        if n <= start:
            return carry
        if n == start + 1:
            with self.scope():
                out = body(self.i64(start), *carry)
            return tuple(out) if carry else ()
        return self._do_while(n, body, carry, start)

    def _do_while(self, n, body, carry, start):
        """The loop's code, for a trip count known to be positive."""
        b = self.b
        pre = b.block
        head = b.append_basic_block("loop")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, "i")
        i.add_incoming(self.i64(start), pre)
        self._ranges[id(i)] = (i, start, n)  # a run-time size bound: users must ask with `surely`
        phis = []
        for c in carry:
            p = b.phi(c.type)
            p.add_incoming(c, pre)
            phis.append(p)
        with self.scope():
            out = body(i, *phis)
        out = tuple(out) if carry else ()
        nxt = b.add(i, self.i64(1), flags=("nuw", "nsw"))
        latch = b.block
        i.add_incoming(nxt, latch)
        for p, v in zip(phis, out):
            p.add_incoming(v, latch)
        done = b.append_basic_block("loop.end")
        b.cbranch(b.icmp_unsigned("<", nxt, self.i64(n)), head, done)
        b.position_at_end(done)
        return out

    def _guarded_loop(self, n, body, carry, start):
        """loop(), behind a run-time test that it runs at all (a bound that depends on N)."""
        b = self.b
        pre = b.block
        run = b.append_basic_block("loop.guard")
        skip = b.append_basic_block("loop.skip")
        b.cbranch(b.icmp_signed("<", self.i64(start), self.i64(n)), run, skip)
        b.position_at_end(run)
        with self.scope():
            out = self._do_while(n, body, carry, start)
        end = b.block
        b.branch(skip)
        b.position_at_end(skip)
        return merge_carries(b, carry, pre, out, end)

    def nest(self, shape, body, carry=(), splits=None):
        """Nested loops over `shape` in C order: body(idx_list, *carry) -> carry.

        `splits[a]` (optional) holds indices at which axis a's loop is cut into
        consecutive loops, so each piece's index has a narrower static range.
        """
        shape = tuple(shape)
        pieces = [_pieces(d, splits[a] if splits else ()) for a, d in enumerate(shape)]

        def level(k, prefix, *c):
            if k == len(shape):
                return body(list(prefix), *c)
            for lo, hi in pieces[k]:
                c = self.loop(hi, lambda i, *cc: level(k + 1, prefix + [i], *cc), c, start=lo)
            return c

        if any(d == 0 for d in shape):
            return tuple(carry)
        out = level(0, [], *carry)
        return tuple(out) if carry else ()


def _pieces(n: int, cuts) -> list:
    """range(n) cut at the `cuts` inside it: [(lo, hi), ...] in order."""
    edges = [0] + sorted({c for c in cuts if 0 < c < n}) + [n]
    return list(zip(edges, edges[1:]))


def merge_carries(b, carry, before, out, after) -> tuple:
    """Phis joining each carry's value entering a loop that may not run (from `before`) with its
    value leaving it (from `after`)."""
    phis = []
    for c, o in zip(carry, out):
        p = b.phi(c.type)
        p.add_incoming(c, before)
        p.add_incoming(o, after)
        phis.append(p)
    return tuple(phis)
