"""`contract` as (batched) GEMM or GEMV through OpenBLAS, or as a loop nest.

Every binary contraction is C[b] = A[b] @ B[b] once letters summed out of one
operand alone are reduced away: batch letters (in both operands and the
output), M (A's letters kept in the output), N (B's) and K (summed). An
operand that is a View whose M (or N) and K letters each collapse into one
stride, one of them unit, is passed to BLAS as it is, with the transpose
flag saying which; anything else (a computed value, a broadcast, reversed
or scattered strides) is first copied into the arena in (batch, M, K) order,
with its computation fused into the copy. The output is written in place
when its M and N letters collapse (swapping the operands, C^T = B^T A^T,
when its M stride is the unit one), else into the arena and then permuted.

Products whose M or N is 1 (matrix-vector, `X @ w`, `r @ X`) call ?gemv
instead: ?gemm with N = 1 ran 3-4x slower (4000 x 50 float64: 112-166 us
against gemv's 33-42 us, as NumPy's X @ w). The free operand is the
matrix, the other one a vector read with any positive stride.

Small products and integer dtypes use a loop nest instead, and so does every
product when BLAS is off (`codegen.lower(..., blas=False)`: code that must
run without NumPy, for gradtape.export_c). Measured for
square n x n float64 matmuls (1 thread, shared 2-core Zen 3, noisy to about
+-1 us): loop 0.7 / BLAS 2.7 us at n=16, 1.6 / 2.2 us at n=24, 4.7 / 4.7 us at
n=32, 16 / 9.6 us at n=48, 70 / 38 us at n=64 (float32 alike), so products
with m*n*k below 24**3 stay loops.
"""
from __future__ import annotations

import math

import llvmlite.ir as ir

from ..ir import TensorType, ops
from ..ir.ops.contract import parse_spec
from . import blas
from .lowered import blas_allowed
from .dtypes import I32, constant
from .dynamic_sizes import at_least
from .nodes import Const, Map, Node, Reindex, View
from .reductions import REDUCE_FLAGS
from .scalar import SCALAR
from .steps import Fill, Step, load_fresh

BLAS_MIN_MNK = 24 ** 3  # m*n*k at and above which a product goes to BLAS
# The same for matrix-vector products (gemv): loop / gemv for n x n float64, 1 thread, in us:
# 0.7 / 0.8 at n=48, 1.4 / 1.4 at 96, 2.5-3.3 / 2.1-3.2 at 128, 7.8-8.7 / 6.1-7.8 at 192.
BLAS_MIN_MK = 24 ** 3

_ANY = "any"  # the stride of a group of size 1: any value will do


def lower_contract(ctx, eqn, a: Node, b: Node) -> View:
    la, lb, lo = parse_spec(eqn.params["spec"])
    dest = ctx.dest(eqn.out)
    dtype = dest.dtype
    a, la = _sum_alone(ctx, a, la, lb + lo)
    b, lb = _sum_alone(ctx, b, lb, la + lo)
    size = dict(zip(la, a.shape))
    size.update(zip(lb, b.shape))
    batch = [c for c in lo if c in la and c in lb]
    free_a = [c for c in lo if c in la and c not in lb]
    free_b = [c for c in lo if c in lb and c not in la]
    summed = [c for c in la if c in lb and c not in lo]
    m, n, k = (_prod(size, g) for g in (free_a, free_b, summed))
    if dest.type.size == 0:
        return dest
    if not summed or k == 0:  # an outer product, or an empty sum (zeros)
        ctx.add(Fill(dest, _product(dest.type, a, la, b, lb, lo) if k else Const(dest.type, 0)))
        return dest
    routine = "gemv" if m == 1 or n == 1 else "gemm"
    symbol = blas.address(routine, dtype) if blas_allowed() else None  # off: code for export_c
    # A run-time size (a dynamic version) is taken to be large: BLAS.
    if symbol is None or not at_least(m * n * k, BLAS_MIN_MK if routine == "gemv" else BLAS_MIN_MNK):
        ctx.add(ContractLoop(dest, _as_view(ctx, a, la, la), la, _as_view(ctx, b, lb, lb), lb, lo, summed))
        return dest
    ctx.use_external(*symbol)
    make_step = _gemv_step if routine == "gemv" else _gemm_step
    ctx.add(make_step(ctx, dest, a, la, b, lb, lo, batch, free_a, free_b, summed, size))
    return dest


def _prod(size, letters) -> int:
    return math.prod(size[c] for c in letters)  # Python ints (or a run-time size): no overflow


def _sum_alone(ctx, x: Node, letters: str, others: str):
    """Reduce away the letters of `x` that neither the other operand nor the output has."""
    alone = [i for i, c in enumerate(letters) if c not in others]
    if not alone:
        return x, letters
    kept = "".join(c for i, c in enumerate(letters) if i not in alone)
    return ctx.reduce(x, alone, "sum"), kept


def _product(type, a, la, b, lb, lo) -> Node:
    """The elementwise product a[...] * b[...] laid out by the output letters."""
    pick = lambda letters: lambda k, idx: [idx[lo.index(c)] for c in letters]  # noqa: E731
    ra = Reindex(TensorType(type.shape, a.dtype), a, pick(la))
    rb = Reindex(TensorType(type.shape, b.dtype), b, pick(lb))
    return Map(type, SCALAR[ops.mul_p]([a.dtype, b.dtype], type.dtype), [ra, rb])


def _as_view(ctx, x: Node, letters: str, order: str) -> View:
    """x as a View whose axes are in the letter `order` (copied into the arena unless it is one already)."""
    if isinstance(x, View) and letters == order:
        return x
    return _copy(ctx, x, letters, order)


def _copy(ctx, x: Node, letters: str, order: str) -> View:
    """A contiguous arena copy of x with axes in the letter `order` (x's computation fused in)."""
    shape = [x.shape[letters.index(c)] for c in order]
    t = TensorType(shape, x.dtype)
    target = ctx.arena(t)
    strides = dict(zip(order, target.strides))
    ctx.add(Fill(View(target.buffer, x.type, 0, [strides[c] for c in letters]), x))
    return target


class ContractLoop(Step):
    """A loop nest for small products (and integers).

    When the output's last letter is long enough to vectorize over and runs
    along contiguous memory in its operand, the summed letters loop outside
    it (out[..., j] += a[..., k] * b[k, j], the "ikj" order): the inner loop
    then runs along contiguous rows. Otherwise (a matrix-vector product
    `ij,j->i`, say) each output element is one dot product accumulated in a
    register, its loop along the summed letters.
    """

    def __init__(self, dest, a, la, b, lb, lo, summed):
        self.dest, self.a, self.la, self.b, self.lb, self.lo, self.summed = dest, a, la, b, lb, lo, summed

    def reads(self):
        return self.a.buffers() | self.b.buffers()

    def writes(self):
        return {self.dest.buffer}

    def _inner_is_output_letter(self) -> bool:
        if not self.dest.shape or self.dest.shape[-1] < 4:
            return False
        last = self.lo[-1]
        view, letters = (self.b, self.lb) if last in self.lb else (self.a, self.la)
        return view.strides[letters.index(last)] == 1

    def emit(self, k):
        dest, a, b = self.dest, self.a, self.b
        float_ = dest.dtype.kind == "f"
        zero = Const(dest.type, 0)._load(k, [])
        sizes = [a.shape[self.la.index(c)] for c in self.summed]

        def product(at):
            x = a.read(k, [at[c] for c in self.la])
            y = b.read(k, [at[c] for c in self.lb])
            return k.b.fmul(x, y) if float_ else k.b.mul(x, y)

        def add(acc, v, flags=REDUCE_FLAGS):
            return k.b.fadd(acc, v, flags=flags) if float_ else k.b.add(acc, v)

        if self._inner_is_output_letter():
            k.loop(dest.type.size, lambda i: dest.store_linear(k, i, zero))

            def outer(out_idx):
                def middle(inner):
                    def row(j):
                        at = dict(zip(self.lo, out_idx + [j]))
                        at.update(zip(self.summed, inner))
                        idx = out_idx + [j]
                        dest.store(k, idx, add(load_fresh(k, dest, idx), product(at), ()))

                    k.loop(dest.shape[-1], row)

                k.nest(sizes, middle)

            k.nest(dest.shape[:-1], outer)
            return

        def body(out_idx):
            at = dict(zip(self.lo, out_idx))

            def dot(inner, acc):
                at.update(zip(self.summed, inner))
                return (add(acc, product(at)),)

            (acc,) = k.nest(sizes, dot, (zero,))
            dest.store(k, out_idx, acc)

        k.nest(dest.shape, body)


# --- the BLAS path -------------------------------------------------------------------------

def _group_stride(strides: dict, letters, size):
    """The one stride of `letters` read as a single C-order axis, _ANY for size 1, None if impossible."""
    ls = [c for c in letters if size[c] != 1]
    if not ls:
        return _ANY
    for x, y in zip(ls, ls[1:]):
        if strides[x] != strides[y] * size[y]:
            return None
    return strides[ls[-1]]


def _matrix(view, letters, rows, cols, size, n_rows, n_cols):
    """(trans flag, leading dimension) reading `view` as a rows x cols matrix, or None."""
    if not isinstance(view, View):
        return None
    strides = dict(zip(letters, view.strides))
    sr, sc = _group_stride(strides, rows, size), _group_stride(strides, cols, size)
    if sr is None or sc is None:
        return None
    if sc in (1, _ANY):
        ld = max(1, n_cols) if sr == _ANY else sr
        if ld >= max(1, n_cols):
            return blas.NO_TRANS, ld
    if sr in (1, _ANY):
        ld = max(1, n_rows) if sc == _ANY else sc
        if ld >= max(1, n_rows):
            return blas.TRANS, ld
    return None


def _gemm_step(ctx, dest, a, la, b, lb, lo, batch, free_a, free_b, summed, size):
    m, n, k = (_prod(size, g) for g in (free_a, free_b, summed))
    c_strides = dict(zip(lo, dest.strides))
    s_m, s_n = _group_stride(c_strides, free_a, size), _group_stride(c_strides, free_b, size)
    c_view, c_letters, permute_from = dest, lo, None
    if s_m is None or s_n is None or (s_n not in (1, _ANY) and s_m not in (1, _ANY)):
        # The output's M/N letters do not collapse: compute into (batch, M, N) and permute.
        order = "".join(batch + free_a + free_b)
        c_view = ctx.arena(TensorType([size[c] for c in order], dest.dtype))
        c_letters, permute_from = order, c_view
        c_strides = dict(zip(order, c_view.strides))
        s_m, s_n = _group_stride(c_strides, free_a, size), _group_stride(c_strides, free_b, size)
    if s_n in (1, _ANY):  # row-major C (m x n) = A (m x k) B (k x n)
        ldc = max(1, n) if s_m == _ANY else s_m
        first, l1, rows1, second, l2, cols2, mm, nn = a, la, free_a, b, lb, free_b, m, n
    else:  # C^T (n x m) = B^T (n x k) A^T (k x m)
        ldc = max(1, m) if s_n == _ANY else s_n
        first, l1, rows1, second, l2, cols2, mm, nn = b, lb, free_b, a, la, free_a, n, m
    op1 = _matrix(first, l1, rows1, summed, size, mm, k)
    if op1 is None:
        order = "".join(batch + rows1 + summed)
        first, l1 = _copy(ctx, first, l1, order), order
        op1 = _matrix(first, l1, rows1, summed, size, mm, k)
    op2 = _matrix(second, l2, summed, cols2, size, k, nn)
    if op2 is None:
        order = "".join(batch + summed + cols2)
        second, l2 = _copy(ctx, second, l2, order), order
        op2 = _matrix(second, l2, summed, cols2, size, k, nn)
    step = Gemm(c_view, c_letters, ldc, first, l1, op1, second, l2, op2, batch, size, mm, nn, k)
    return _permuted(ctx, step, dest, lo, permute_from, c_letters)


def _permuted(ctx, step, dest, lo, scratch, scratch_letters):
    """`step`, when it computes straight into `dest`; else `step` (into `scratch`, whose
    axes are `scratch_letters`) followed by a copy into dest's order `lo`."""
    if scratch is None:
        return step
    ctx.add(step)
    strides = dict(zip(scratch_letters, scratch.strides))
    return Fill(dest, View(scratch.buffer, dest.type, 0, [strides[c] for c in lo]))


class Gemm(Step):
    """One cblas ?gemm call per batch index: C = op1(A) @ op2(B)."""

    def __init__(self, c, lc, ldc, a, la, op_a, b, lb, op_b, batch, size, m, n, k):
        self.c, self.lc, self.ldc = c, lc, ldc
        self.a, self.la, self.op_a = a, la, op_a
        self.b, self.lb, self.op_b = b, lb, op_b
        self.batch, self.size, self.m, self.n, self.k = batch, size, m, n, k

    def reads(self):
        return {self.a.buffer, self.b.buffer}

    def writes(self):
        return {self.c.buffer}

    def emit(self, k):
        k.nest([self.size[c] for c in self.batch], lambda idx: self.call(k, idx))

    def call(self, k, idx, rows=None):
        """The ?gemm of batch index `idx` (i64 values); with `rows` = (first, count) (i64
        values), only those rows of C (the rest of the product is the same calls' business)."""
        dtype = self.c.dtype
        i32 = lambda v: ir.Constant(I32, v)  # noqa: E731
        a = _batch_pointer(k, self.a, self.la, self.batch, idx)
        c = _batch_pointer(k, self.c, self.lc, self.batch, idx)
        m = k.i64(self.m)
        if rows is not None:
            first, m = rows
            # Row r of op(A) starts r rows into A, or r columns when A is stored transposed.
            a = k.b.gep(a, [first if self.op_a[0] == blas.TRANS else k.mul(first, self.op_a[1])], inbounds=True)
            c = k.b.gep(c, [k.mul(first, self.ldc)], inbounds=True)
        k.b.call(blas.declare_gemm(k.module, dtype), [
            i32(blas.ROW_MAJOR), i32(self.op_a[0]), i32(self.op_b[0]),
            m, k.i64(self.n), k.i64(self.k), constant(dtype, 1),
            a, k.i64(self.op_a[1]),
            _batch_pointer(k, self.b, self.lb, self.batch, idx), k.i64(self.op_b[1]), constant(dtype, 0),
            c, k.i64(self.ldc),
        ])



def _positive_stride(view, letters, group, size):
    """The one positive element stride of the `group` letters of `view` (1 for size 1), or None."""
    if not isinstance(view, View):
        return None
    stride = _group_stride(dict(zip(letters, view.strides)), group, size)
    if stride == _ANY:
        return 1
    return stride if stride is not None and stride > 0 else None


def _gemv_step(ctx, dest, a, la, b, lb, lo, batch, free_a, free_b, summed, size):
    """y = op(A) x for a product whose M or N is 1: one ?gemv per batch index.

    gemm with N = 1 runs 3-4x slower than gemv (X @ w on 4000 x 50: 112-166
    against 33-42 us), so the operand with the free letters is the matrix and
    the other one the vector, read with any positive stride.
    """
    m, n, k = (_prod(size, g) for g in (free_a, free_b, summed))
    if n == 1:
        mat, lm, rows, vec, lv = a, la, free_a, b, lb
    else:
        mat, lm, rows, vec, lv = b, lb, free_b, a, la
    n_rows = _prod(size, rows)
    y_view, y_letters, permute_from = dest, lo, None
    inc_y = _positive_stride(dest, lo, rows, size)
    if inc_y is None:  # the output's row letters do not collapse: compute in order, then permute
        order = "".join(batch + free_a + free_b)
        y_view = ctx.arena(TensorType([size[c] for c in order], dest.dtype))
        y_letters, permute_from = order, y_view
        inc_y = _positive_stride(y_view, order, rows, size)
    op = _matrix(mat, lm, rows, summed, size, n_rows, k)
    if op is None:
        order = "".join(batch + rows + summed)
        mat, lm = _copy(ctx, mat, lm, order), order
        op = _matrix(mat, lm, rows, summed, size, n_rows, k)
    inc_x = _positive_stride(vec, lv, summed, size)
    if inc_x is None:
        order = "".join(batch + summed + [c for c in lv if c not in batch and c not in summed])
        vec, lv = _copy(ctx, vec, lv, order), order
        inc_x = _positive_stride(vec, lv, summed, size)
    # BLAS's M x N is the matrix as stored: rows x k, or k x rows when it is read transposed.
    shape = (n_rows, k) if op[0] == blas.NO_TRANS else (k, n_rows)
    step = Gemv(y_view, y_letters, inc_y, mat, lm, op, vec, lv, inc_x, batch, size, shape)
    return _permuted(ctx, step, dest, lo, permute_from, y_letters)


class Gemv(Step):
    """One cblas ?gemv call per batch index: y = op(A) @ x.

    `shape` is BLAS's M x N: the matrix as stored, whose rows are the
    output's (NO_TRANS) or the summed letters (TRANS).
    """

    def __init__(self, y, ly, inc_y, a, la, op_a, x, lx, inc_x, batch, size, shape):
        self.y, self.ly, self.inc_y = y, ly, inc_y
        self.a, self.la, self.op_a = a, la, op_a
        self.x, self.lx, self.inc_x = x, lx, inc_x
        self.batch, self.size, self.shape = batch, size, shape

    def reads(self):
        return {self.a.buffer, self.x.buffer}

    def writes(self):
        return {self.y.buffer}

    def emit(self, k):
        k.nest([self.size[c] for c in self.batch], lambda idx: self.call(k, idx))

    def call(self, k, idx):
        """The ?gemv of batch index `idx` (i64 values)."""
        self._call(k, self.shape[0], _batch_pointer(k, self.a, self.la, self.batch, idx),
                   _batch_pointer(k, self.x, self.lx, self.batch, idx),
                   _batch_pointer(k, self.y, self.ly, self.batch, idx), constant(self.y.dtype, 0))

    def _call(self, k, rows, a, x, y, beta):
        dtype = self.y.dtype
        k.b.call(blas.declare_gemv(k.module, dtype), [
            ir.Constant(I32, blas.ROW_MAJOR), ir.Constant(I32, self.op_a[0]),
            k.i64(rows), k.i64(self.shape[1]), constant(dtype, 1), a, k.i64(self.op_a[1]),
            x, k.i64(self.inc_x), beta, y, k.i64(self.inc_y),
        ])


def _batch_pointer(k, view, letters, batch, idx):
    """Pointer to the first element of `view` at batch index `idx`."""
    at = dict(zip(batch, idx))
    strides = dict(zip(letters, view.strides))
    return view.pointer_at(k, k.affine(view.offset, [(at[c], strides[c]) for c in batch]))
