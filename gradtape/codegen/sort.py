"""argsort in native code: each row is sorted by a merge sort (O(n log n)), or, from
RADIX_MIN elements on, by an LSD radix sort (8 linear passes).

The step (ArgSort) turns each row of the operand into (key, index) pairs in
a scratch buffer, calls one sorting function that the module defines once
(`gradtape_sort_pairs`), and stores the sorted indices. Keys are int64s
whose signed order is NumPy's sort order, so the sorting function is the
same for every dtype and compares integers only:

    float   -0.0 becomes +0.0 (NumPy sorts them as equal); the bits, with
            the 63 (31) low bits flipped for negative numbers, order as
            the numbers do; NaN (any sign or payload) becomes INT64_MAX,
            after +inf (which is below it), so NaNs go last
    int     sign- (or zero-) extended; uint64 with its top bit flipped
    bool    0 or 1

The sort is stable (a merge takes from the right run only when its key is
strictly smaller, and the insertion sort that makes the first runs moves
an element only past strictly larger keys), so equal keys keep their
index order: the permutation is exactly np.argsort(x, kind="stable").

Sorting a short row: insertion sort of runs of RUN elements, then
bottom-up merge passes that double the run length, alternating between
the two halves of the scratch buffer; the result is copied back when the
pass count is odd. A long row: one pass counts each byte's values, then
one stable bucketing pass per byte (least significant first; a byte that
is the same in every key is skipped), alternating buffers the same way.
Every loop bound is a run-time value (the function serves every row
length), so its loops are built here with phis rather than the emitter's
counted loops.
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ..ir import TensorType
from .dtypes import I1, I32, I64, is_bool, is_float
from .dynamic_sizes import DynamicUnsupported
from .lowered import Unsupported
from .steps import Step

SORT_FUNCTION = "gradtape_sort_pairs"
RUN = 16  # insertion-sorted run length: fewer merge passes, each run in cache
RADIX_MIN = 2048  # rows this long are radix sorted: 8 linear passes beat log2(n / RUN) merges
_INT64_MAX = (1 << 63) - 1


# --- keys ----------------------------------------------------------------------------

def sort_key(b: ir.IRBuilder, v, dtype) -> ir.Value:
    """The int64 whose signed order is NumPy's sort order of value `v` of `dtype`."""
    dtype = np.dtype(dtype)
    if is_bool(dtype):
        return b.zext(v, I64)
    if dtype.kind in "iu":
        width = v.type.width
        if dtype.kind == "i":
            return v if width == 64 else b.sext(v, I64)
        if width < 64:
            return b.zext(v, I64)
        return b.xor(v, ir.Constant(I64, -(1 << 63)))  # unsigned order as signed order
    if not is_float(dtype) or dtype.itemsize not in (4, 8):
        raise Unsupported(f"argsort: native code sorts float32, float64, integers and bools, got {dtype}")
    bits_type = I64 if dtype.itemsize == 8 else I32
    width = bits_type.width
    plus_zero = b.fadd(v, ir.Constant(v.type, 0.0))  # -0.0 + 0.0 is +0.0; x + 0.0 is x otherwise
    bits = b.bitcast(plus_zero, bits_type)
    low = b.lshr(b.ashr(bits, ir.Constant(bits_type, width - 1)), ir.Constant(bits_type, 1))
    key = b.xor(bits, low)  # negative numbers: every bit but the sign flipped
    if width < 64:
        key = b.sext(key, I64)
    is_nan = b.fcmp_unordered("uno", v, v)
    return b.select(is_nan, ir.Constant(I64, _INT64_MAX), key)


# --- loops with run-time bounds --------------------------------------------------------

def _while(b: ir.IRBuilder, init, cond, body):
    """`while cond(*vars): vars = body(*vars)`; returns the vars' final values."""
    pre = b.block
    head = b.append_basic_block("sort.head")
    loop = b.append_basic_block("sort.body")
    done = b.append_basic_block("sort.end")
    b.branch(head)
    b.position_at_end(head)
    phis = []
    for v in init:
        p = b.phi(v.type)
        p.add_incoming(v, pre)
        phis.append(p)
    b.cbranch(cond(*phis), loop, done)
    b.position_at_end(loop)
    out = body(*phis)
    for p, v in zip(phis, out):
        p.add_incoming(v, b.block)
    b.branch(head)
    b.position_at_end(done)
    return phis


def _for(b: ir.IRBuilder, lo, hi, body, step=1):
    """`for i in range(lo, hi, step): body(i)` (bounds and step may be run-time values)."""
    step = ir.Constant(I64, step) if isinstance(step, int) else step

    def next_i(i):
        body(i)
        return [b.add(i, step)]

    _while(b, [lo], lambda i: b.icmp_signed("<", i, hi), next_i)


def _at(b, ptr, i):
    return b.gep(ptr, [i], inbounds=True)


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


# --- the sorting function ------------------------------------------------------------

def sort_function(module: ir.Module) -> ir.Function:
    """`void gradtape_sort_pairs(i64 n, i64* key, i64* idx, i64* key2, i64* idx2)`: sorts the n
    pairs (key[i], idx[i]) by key, stably, in place; key2/idx2 are n-element scratch."""
    try:
        return module.get_global(SORT_FUNCTION)
    except KeyError:
        pass
    p = I64.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, p, p, p, p]), SORT_FUNCTION)
    fn.linkage = "internal"
    n, key, idx, key2, idx2 = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    one, zero = ir.Constant(I64, 1), ir.Constant(I64, 0)

    def insertion_sort_run(start):
        end = _min(b, b.add(start, ir.Constant(I64, RUN)), n)

        def insert(i):
            k_i, v_i = b.load(_at(b, key, i)), b.load(_at(b, idx, i))

            def larger_before(j):  # j > start and key[j - 1] > k_i (the load stays in bounds)
                inside = b.icmp_signed(">", j, start)
                prev = b.select(inside, b.sub(j, one), start)
                return b.and_(inside, b.icmp_signed(">", b.load(_at(b, key, prev)), k_i))

            def shift(j):
                jm1 = b.sub(j, one)
                b.store(b.load(_at(b, key, jm1)), _at(b, key, j))
                b.store(b.load(_at(b, idx, jm1)), _at(b, idx, j))
                return [jm1]

            (j,) = _while(b, [i], larger_before, shift)
            b.store(k_i, _at(b, key, j))
            b.store(v_i, _at(b, idx, j))

        _for(b, b.add(start, one), end, insert)

    radix = b.icmp_signed(">=", n, ir.Constant(I64, RADIX_MIN))
    with b.if_else(radix) as (long_rows, short_rows):
        with long_rows:
            _radix_sort(b, n, key, idx, key2, idx2)
        with short_rows:
            _for(b, zero, n, insertion_sort_run, step=RUN)
            _merge_sort(b, n, key, idx, key2, idx2)
    b.ret_void()
    return fn


def _merge_sort(b, n, key, idx, key2, idx2):
    """Merge the sorted runs of RUN pairs into one, stably (result in key/idx)."""
    one, zero = ir.Constant(I64, 1), ir.Constant(I64, 0)

    def merge_pass(width, sk, si, dk, di, parity):
        def merge(lo):
            mid = _min(b, b.add(lo, width), n)
            hi = _min(b, b.add(mid, width), n)

            def both_left(i, j, o):
                return b.and_(b.icmp_signed("<", i, mid), b.icmp_signed("<", j, hi))

            def take_one(i, j, o):
                kl, kr = b.load(_at(b, sk, i)), b.load(_at(b, sk, j))
                right = b.icmp_signed("<", kr, kl)  # strictly: ties take the left (stable)
                b.store(b.select(right, kr, kl), _at(b, dk, o))
                b.store(b.select(right, b.load(_at(b, si, j)), b.load(_at(b, si, i))), _at(b, di, o))
                r = b.zext(right, I64)
                return [b.add(i, b.sub(one, r)), b.add(j, r), b.add(o, one)]

            i, j, o = _while(b, [lo, mid, lo], both_left, take_one)
            for start, stop in ((i, mid), (j, hi)):  # the rest of whichever run is left
                def copy(t, start=start, o=o):
                    at = b.add(o, b.sub(t, start))
                    b.store(b.load(_at(b, sk, t)), _at(b, dk, at))
                    b.store(b.load(_at(b, si, t)), _at(b, di, at))
                _for(b, start, stop, copy)
                o = b.add(o, b.sub(stop, start))

        _for(b, zero, n, merge, step=b.shl(width, one))
        return [b.shl(width, one), dk, di, sk, si, b.xor(parity, ir.Constant(I1, 1))]

    width, sk, si, _, _, parity = _while(
        b, [ir.Constant(I64, RUN), key, idx, key2, idx2, ir.Constant(I1, 0)],
        lambda width, *rest: b.icmp_signed("<", width, n), merge_pass)
    _copy_back_if(b, parity, n, sk, si, key, idx)


def _copy_back_if(b, flag, n, sk, si, key, idx):
    with b.if_then(flag):  # the sorted pairs are in the second buffers
        def copy_back(t):
            b.store(b.load(_at(b, sk, t)), _at(b, key, t))
            b.store(b.load(_at(b, si, t)), _at(b, idx, t))
        _for(b, ir.Constant(I64, 0), n, copy_back)


def _radix_sort(b, n, key, idx, key2, idx2):
    """LSD radix sort of the pairs by key, one byte per pass (stable: result in key/idx).

    The keys' signed order is the unsigned order of key ^ 2^63, so each pass buckets by a
    byte of that. One pass over the keys counts every byte's values; a byte that is the
    same in every key (the high bytes of small integers) is skipped."""
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
    counts = b.alloca(ir.ArrayType(I64, 8 * 256))  # counts[byte * 256 + value]
    base = b.gep(counts, [zero, zero], inbounds=True)
    _for(b, zero, ir.Constant(I64, 8 * 256), lambda i: b.store(zero, _at(b, base, i)))
    sign = ir.Constant(I64, -(1 << 63))

    def digit(k, byte):
        return b.and_(b.lshr(b.xor(k, sign), ir.Constant(I64, 8 * byte)), ir.Constant(I64, 255))

    def count(i):
        k = b.load(_at(b, key, i))
        for byte in range(8):
            slot = _at(b, base, b.add(ir.Constant(I64, 256 * byte), digit(k, byte)))
            b.store(b.add(b.load(slot), one), slot)

    _for(b, zero, n, count)
    first = b.load(_at(b, key, zero))
    sk, si, dk, di, parity = key, idx, key2, idx2, ir.Constant(I1, 0)
    for byte in range(8):
        row = b.gep(base, [ir.Constant(I64, 256 * byte)], inbounds=True)
        varies = b.icmp_signed("!=", b.load(_at(b, row, digit(first, byte))), n)
        pre = b.block
        with b.if_then(varies):
            def to_offsets(v, total):  # counts -> where each value's first key goes
                c = b.load(_at(b, row, v))
                b.store(total, _at(b, row, v))
                return [b.add(total, c)]

            _while(b, [zero, zero], lambda v, total: b.icmp_signed("<", v, ir.Constant(I64, 256)),
                   lambda v, total: [b.add(v, one), *to_offsets(v, total)])

            def scatter(i, sk=sk, si=si, dk=dk, di=di, row=row, byte=byte):
                k = b.load(_at(b, sk, i))
                slot = _at(b, row, digit(k, byte))
                at = b.load(slot)
                b.store(b.add(at, one), slot)
                b.store(k, _at(b, dk, at))
                b.store(b.load(_at(b, si, i)), _at(b, di, at))

            _for(b, zero, n, scatter)
            flipped = b.xor(parity, ir.Constant(I1, 1))
            swapped = b.block
        # after the pass, the data is in (dk, di) if it ran, else still in (sk, si)
        phis = []
        for ran, kept in ((dk, sk), (di, si), (sk, dk), (si, di), (flipped, parity)):
            p = b.phi(ran.type)
            p.add_incoming(ran, swapped)
            p.add_incoming(kept, pre)
            phis.append(p)
        sk, si, dk, di, parity = phis
    _copy_back_if(b, parity, n, sk, si, key, idx)


# --- the step ----------------------------------------------------------------------------

class ArgSort(Step):
    """dest (int64) = the stable argsort of src along `axis` (NumPy's order, NaN last)."""

    def __init__(self, dest, src, axis: int, scratch):
        self.dest, self.src, self.axis, self.scratch = dest, src, axis, scratch

    @staticmethod
    def scratch_type(n: int) -> TensorType:
        return TensorType((4 * n,), np.int64)  # keys, indices, and the merge's second copy of each

    def reads(self):
        return self.src.buffers()

    def writes(self):
        return {self.dest.buffer, self.scratch.buffer}

    def emit(self, k):
        src, dest, axis = self.src, self.dest, self.axis
        n = src.shape[axis]
        if type(n) is not int:
            raise DynamicUnsupported("argsort along an axis whose length is known only at run time")
        if dest.type.size == 0:
            return
        b = k.b
        sort = sort_function(k.module)
        base = b.gep(k.pointer(self.scratch.buffer), [k.i64(self.scratch.offset)], inbounds=True)
        key, idx, key2, idx2 = (b.gep(base, [k.i64(part * n)], inbounds=True) for part in range(4))
        outer = dest.shape[:axis] + dest.shape[axis + 1:]

        def row(out_idx):
            at = lambda j: out_idx[:axis] + [j] + out_idx[axis:]  # noqa: E731

            def fill(j):
                k.b.store(sort_key(k.b, src.read(k, at(j)), src.dtype), k.b.gep(key, [j], inbounds=True))
                k.b.store(j, k.b.gep(idx, [j], inbounds=True))

            k.loop(n, fill)
            k.b.call(sort, [k.i64(n), key, idx, key2, idx2])
            k.loop(n, lambda j: dest.store(k, at(j), k.b.load(k.b.gep(idx, [j], inbounds=True))))

        k.nest(outer, row)


def lower_argsort(ctx, eqn, x):
    dest = ctx.dest(eqn.out)
    axis = eqn.params["axis"]
    scratch = ctx.arena(ArgSort.scratch_type(x.shape[axis]))
    ctx.add(ArgSort(dest, x, axis, scratch))
    return dest
