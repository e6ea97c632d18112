"""Lowering of complex_matmul (ir/ops/complex_product.py): one cblas zgemm (float64 parts)
or cgemm (float32 parts) call per batch index, C = A @ B with alpha = 1, beta = 0.

Operands are (..., m, k, 2) and (..., k, n, 2) real tensors in complex layout (each
complex number's real and imaginary parts side by side), which is the memory layout
BLAS's complex routines read: a C-ordered operand is passed as it is (its leading
dimension k or n complex numbers), anything else (a computed value, a transpose) is
first copied into the arena, its computation fused into the copy. The result is written
in place when its destination is C-ordered, else into the arena and then copied.

complex_split.py emits the op only where BLAS may be called; `lower(..., blas=False)`
(code that must run without NumPy) refuses it. Batched products are split into units of
batch indices for the runtime's pool, and OpenBLAS runs on one thread meanwhile, as for the
real ?gemm (parallel_blas.py): the bits do not depend on the thread count.
"""
from __future__ import annotations

import llvmlite.ir as ir

from . import blas
from .dtypes import I32
from .dynamic_sizes import DynamicUnsupported
from .lowered import Unsupported, blas_allowed
from .nodes import Const, View
from .contract import Gemm
from .steps import Fill

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def lower_complex_matmul(ctx, eqn, a, b) -> View:
    out_type = eqn.out.type
    for t in (a.type, b.type, out_type):
        if any(type(d) is not int for d in t.shape):
            raise DynamicUnsupported("complex_matmul on a shape known only at run time")
    symbol = blas.complex_gemm_address(out_type.dtype) if blas_allowed() else None
    if symbol is None:
        raise Unsupported("complex_matmul calls BLAS's zgemm / cgemm, which this code may not call")
    dest = ctx.dest(eqn.out)
    if out_type.size == 0:
        return dest
    m, k = a.shape[-3:-1]
    n = b.shape[-2]
    if k == 0:
        ctx.add(Fill(dest, Const(out_type, 0)))
        return dest
    out = dest if dest.linear else ctx.arena(out_type)
    batch = a.shape[:-3]
    ctx.use_external(*symbol)
    ctx.add(ComplexGemm(out, _contiguous(ctx, a), _contiguous(ctx, b), batch, m, n, k))
    if out is not dest:
        ctx.add(Fill(dest, out))
    return dest


def _contiguous(ctx, node) -> View:
    """node itself when it is a C-ordered View, else a contiguous arena copy of it."""
    if isinstance(node, View) and node.linear:
        return node
    return ctx.store(node)


class ComplexGemm(Gemm):
    """One cblas zgemm / cgemm call per batch index of C-ordered operands in complex layout.

    Gemm's (contract.py) reads, writes and batch loop, and its `batch` and `size` (batch
    letters, their sizes) so that parallel_blas.py splits batches alike (not rows: its
    bits are checked for ?gemm's blocks of rows only); m, n, k count complex numbers."""

    def __init__(self, c: View, a: View, b: View, batch_shape, m: int, n: int, k: int):
        # Not Gemm's __init__: operands are always C-ordered, so no letters, flags or strides.
        self.c, self.a, self.b = c, a, b
        self.batch = list(_LETTERS[:len(batch_shape)])
        self.size = dict(zip(self.batch, batch_shape))
        self.m, self.n, self.k = m, n, k

    def call(self, k, idx, rows=None):
        """The zgemm / cgemm of batch index `idx` (i64 values); `rows` is never given (no row split)."""
        flat = k.i64(0)
        for c, i in zip(self.batch, idx):
            flat = k.add(k.b.mul(flat, k.i64(self.size[c])), i)

        def matrix(view, elements):  # elements: reals in one batch index's matrix
            return view.pointer_at(k, k.add(k.i64(view.offset), k.b.mul(flat, k.i64(elements))))

        dtype = self.c.dtype
        pointer = blas._float(dtype).as_pointer()
        one, zero = (k.b.bitcast(_scalar(k.module, dtype, v), pointer) for v in (1.0, 0.0))
        k.b.call(blas.declare_complex_gemm(k.module, dtype), [
            ir.Constant(I32, blas.ROW_MAJOR), ir.Constant(I32, blas.NO_TRANS), ir.Constant(I32, blas.NO_TRANS),
            k.i64(self.m), k.i64(self.n), k.i64(self.k), one,
            matrix(self.a, 2 * self.m * self.k), k.i64(self.k),
            matrix(self.b, 2 * self.k * self.n), k.i64(self.n),
            zero,
            matrix(self.c, 2 * self.m * self.n), k.i64(self.n),
        ])


def _scalar(module, dtype, real: float):
    """A module constant holding the complex number `real` + 0i (alpha and beta go by pointer)."""
    t = blas._float(dtype)
    name = f"gradtape_complex_{'one' if real else 'zero'}_{t}"
    try:
        return module.get_global(name)
    except KeyError:
        g = ir.GlobalVariable(module, ir.ArrayType(t, 2), name)
        g.initializer = ir.Constant(ir.ArrayType(t, 2), [real, 0.0])
        g.global_constant = True
        g.linkage = "internal"
        return g
