"""Op spec of complex_matmul (a batched complex matrix product over real tensors in complex
layout, (..., m, k, 2) @ (..., k, n, 2): what a large complex product becomes once complex
tensors are split into real ones, the op zgemm / cgemm computes). The spec binds the op on
tensors; NumPy's complex matmul is its reference."""
import numpy as np

from gradtape.ir.ops import complex_product as cmm
from gradtape.tracer.dispatch import bind

from .op_specs import OpSpec, args, normal


def _product(x, y):
    return bind(cmm.complex_matmul_p, x, y) * y[:, :3]


def _complex(x):
    return x[..., 0] + 1j * x[..., 1]


def _product_numpy(x, y):
    c = _complex(x) @ _complex(y)
    return np.stack([c.real, c.imag], axis=-1) * y[:, :3]


SPECS = [
    OpSpec("complex_matmul", _product, args(normal(2, 3, 4, 2), normal(2, 4, 3, 2)), ops=("complex_matmul",),
           numpy_fn=_product_numpy),
]
