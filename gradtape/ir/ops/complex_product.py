"""A batched complex matrix product over real tensors in complex layout, the op BLAS's
zgemm / cgemm computes:

    complex_matmul  a (..., m, k, 2), b (..., k, n, 2) -> (..., m, n, 2)

The last axis of each operand holds a complex number's real and imaginary parts side by
side (NumPy's memory layout of complex128 / complex64 viewed as float64 / float32), and the
product is that of the complex matrices: c = a @ b. The leading (batch) axes of a and b are
the same.

complex_split.py (codegen) makes a large complex `contract` this op, after differentiation,
so nothing needs its derivatives; it has rules anyway (tests/ir's table-driven checks need
them). The product is bilinear, and with the real pairing sum(ct * out), the transposes
are products with conjugate transposes: a_bar = ct @ b^H, b_bar = a^H @ ct.

Example::

    >>> from gradtape import ir
    >>> b = ir.Builder()
    >>> x = b.input(ir.TensorType((3, 4, 2), np.float64))
    >>> y = b.input(ir.TensorType((4, 5, 2), np.float64))
    >>> complex_matmul(x, y).shape
    (3, 5, 2)
"""
from __future__ import annotations

import numpy as np

from ..builder import Sym, bind
from ..errors import DTypeError, ShapeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..types import TensorType
from .elementwise import add, mul
from .layout import all_batched, transpose

__all__ = ["complex_matmul_p", "complex_matmul"]

complex_matmul_p = new_op("complex_matmul", elementwise=False, can_fail_on_values=False, runs_code=False)


def _shape(a, b):
    for x in (a, b):
        if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise DTypeError(f"complex_matmul: expected float32 or float64 operands, got {x}")
        if x.ndim < 3 or x.shape[-1] != 2:
            raise ShapeError(f"complex_matmul: expected (..., rows, columns, 2) operands, got {x}")
    if a.dtype != b.dtype or a.shape[:-3] != b.shape[:-3] or a.shape[-2] != b.shape[-3]:
        raise ShapeError(f"complex_matmul: operands {a} and {b} do not multiply "
                         "(one dtype, the same batch axes, a's columns = b's rows)")
    return TensorType(a.shape[:-2] + (b.shape[-2], 2), a.dtype)


def _as_complex(x):
    x = np.asarray(x)
    z = np.empty(x.shape[:-1], np.complex64 if x.dtype == np.float32 else np.complex128)
    z.real, z.imag = x[..., 0], x[..., 1]
    return z


def _impl(a, b):
    c = np.matmul(_as_complex(a), _as_complex(b))
    return np.stack([c.real, c.imag], axis=-1).astype(np.asarray(a).dtype, copy=False)


def _conj_transpose(x: Sym) -> Sym:
    """x^H in complex layout: the matrix axes swapped, the imaginary parts negated."""
    n = x.ndim
    swapped = transpose(x, list(range(n - 3)) + [n - 2, n - 3, n - 1])
    sign = x.builder.literal(np.array([1.0, -1.0], x.dtype).reshape((1,) * (n - 1) + (2,)))
    return mul(swapped, sign)


def complex_matmul(a: Sym, b: Sym) -> Sym:
    """The complex product a @ b of (..., m, k, 2) and (..., k, n, 2) real tensors in complex layout."""
    return bind(complex_matmul_p, a, b)


def _vjp(ct, out, a, b):
    return complex_matmul(ct, _conj_transpose(b)), complex_matmul(_conj_transpose(a), ct)


def _jvp(ts, out, a, b):
    ta, tb = ts
    terms = ([complex_matmul(ta, b)] if ta is not None else []) + ([complex_matmul(a, tb)] if tb is not None else [])
    return terms[0] if len(terms) == 1 else add(*terms)


shape_rules[complex_matmul_p] = _shape
impls[complex_matmul_p] = _impl
vjp_rules[complex_matmul_p] = _vjp
jvp_rules[complex_matmul_p] = _jvp
batching_rules[complex_matmul_p] = lambda size, ins, batched: bind(complex_matmul_p, *all_batched(size, ins, batched))
