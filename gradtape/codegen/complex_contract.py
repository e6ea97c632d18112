"""The lowering of a complex `contract` (matmul, einsum, dot) to real code (complex_split.py's rule).

Two ways, by size:

    four real products  (ar @ br - ai @ bi, ar @ bi + ai @ br): each a real contract, so
                        codegen/contract.py's loops or ?gemm; every spec, and the only way
                        when one operand is real (then two products)
    one zgemm / cgemm   complex_matmul (ir/ops/complex_product.py) on the parts interleaved
                        into complex layout: a spec that is a (batched) matrix product,
                        letters in any order (batch letters in both operands and the output,
                        one group kept from each operand, one group summed), its operands
                        moved into (batch, M, K) and (batch, K, N) order and the result
                        moved back, copies fused into the interleaving

The second needs BLAS (not in code for export_c) and pays for its copies (O(n^2) against
the product's O(n^3)); ZGEMM_MIN_MNK is where it starts to win (measured figures below).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import Literal
from ..ir.ops.complex_product import complex_matmul
from ..ir.ops.contract import contract, parse_spec
from ..ir.ops.indexing import concatenate, slice as slice_
from ..ir.ops.layout import reshape, transpose
from ..ir.types import TensorType, real_dtype
from . import blas
from .complex_math import Pair
from .lowered import blas_allowed

# M * N * K (complex) at and above which a product of two complex operands calls zgemm/cgemm.
# bench/complex_matmul.py (GRADTAPE_THREADS=1 OPENBLAS_NUM_THREADS=1), n x n, time / NumPy's
# A @ B for the real kernel forced onto each path, four real products / zgemm or cgemm:
#   complex128  n=8 0.58/0.55  16 1.36/0.71  32 1.43/0.87  64 1.39/1.08  512 1.26/1.01
#   complex64   n=8 0.43/0.50  16 1.39/0.68  32 1.31/0.83  64 1.32/1.01  512 1.17/0.98
# and in an earlier run (threaded, noisier) n=12: 1.07/0.68 and 1.42/0.63. So one BLAS call
# wins from n = 12 on (at n = 8 they are even, or four products win), below the real path's 24**3.
ZGEMM_MIN_MNK = 12 ** 3


def contract_rule(eqn, x, y, *, spec):
    """The complex contraction of x and y (Pairs, or one real Sym) as real ops."""
    x, y = _real_if_cast(x), _real_if_cast(y)
    if isinstance(x, Pair) and isinstance(y, Pair):
        plan = _matmul_plan(eqn, spec)
        if plan is not None:
            return _by_complex_gemm(eqn, x, y, plan)

    def c(p, q):
        return contract(p, q, spec)

    if isinstance(x, Pair) and isinstance(y, Pair):
        return Pair(c(x.re, y.re) - c(x.im, y.im), c(x.re, y.im) + c(x.im, y.re))
    if isinstance(x, Pair):
        return Pair(c(x.re, y), c(x.im, y))
    return Pair(c(x, y.re), c(x, y.im))


def _real_if_cast(z):
    """z's real part when z is a real value cast to complex (NumPy's matmul of a real and a
    complex matrix casts the real one: then two real products, not a complex one), else z."""
    if not isinstance(z, Pair):
        return z
    im = z.im
    if im.literal_value() == 0:
        return z.re
    for e in reversed(im.builder.eqns):
        if any(v is im.atom for v in e.outvars):
            src = e.inputs[0]
            zero = isinstance(src, Literal) and not np.any(np.asarray(src.value))
            return z.re if e.op.name == "broadcast_to" and zero else z
    return z


def _matmul_plan(eqn, spec):
    """(batch, free_a, free_b, summed, sizes) when `spec` is a (batched) matrix product large
    enough for zgemm / cgemm that BLAS may be called for, else None."""
    la, lb, lo = parse_spec(spec)
    if any(c not in lb and c not in lo for c in la) or any(c not in la and c not in lo for c in lb):
        return None  # a letter summed in one operand alone
    sa, sb = eqn.inputs[0].type.shape, eqn.inputs[1].type.shape
    sizes = dict(zip(la, sa))
    if any(sizes.get(c, d) != d for c, d in zip(lb, sb)):
        return None  # a size-1 letter broadcast against a longer one
    sizes.update(zip(lb, sb))
    if any(type(d) is not int for d in sizes.values()):
        return None
    batch = [c for c in lo if c in la and c in lb]
    free_a = [c for c in lo if c in la and c not in lb]
    free_b = [c for c in lo if c in lb and c not in la]
    summed = [c for c in la if c in lb and c not in lo]
    if not summed:
        return None  # an outer product: elementwise products, no sum
    m, n, k = (math.prod(sizes[c] for c in g) for g in (free_a, free_b, summed))
    dtype = real_dtype(eqn.out.type.dtype)
    if m * n * k < ZGEMM_MIN_MNK or not blas_allowed() or blas.complex_gemm_address(dtype) is None:
        return None
    return batch, free_a, free_b, summed, sizes


def _by_complex_gemm(eqn, x, y, plan):
    batch, free_a, free_b, summed, sizes = plan
    la, lb, lo = parse_spec(eqn.params["spec"])
    dtype = real_dtype(eqn.out.type.dtype)
    lead = tuple(sizes[c] for c in batch)

    def matrix(z, letters, eqn_input, rows, cols):
        """z's parts as one (batch, rows, cols, 2) tensor in complex layout."""
        part = TensorType(eqn_input.type.shape, dtype)
        order = [letters.index(c) for c in batch + rows + cols]
        shape = lead + (math.prod(sizes[c] for c in rows), math.prod(sizes[c] for c in cols), 1)
        re, im = (reshape(transpose(_full(p, part), order), shape) for p in (z.re, z.im))
        return concatenate([re, im], len(shape) - 1)

    a = matrix(x, la, eqn.inputs[0], free_a, summed)
    b = matrix(y, lb, eqn.inputs[1], summed, free_b)
    c = complex_matmul(a, b)
    grouped = batch + free_a + free_b
    back = [grouped.index(ch) for ch in lo]
    unpacked = tuple(sizes[ch] for ch in grouped)

    def part(i):
        shape = c.shape[:-1] + (1,)
        p = reshape(slice_(c, (0,) * (c.ndim - 1) + (i,), shape[:-1] + (i + 1,), (1,) * c.ndim), unpacked)
        return transpose(p, back)

    return Pair(part(0), part(1))


def _full(x, type_):
    from .complex_split import _full as full  # complex_split imports this module
    return full(None, x, type_)
