"""Complex numbers in the op table: conj, real, imag, and which elementwise ops
take complex operands.

Derivatives follow JAX's convention (docs/complex.md): a tangent of a complex
value is complex, and a cotangent pairs with a tangent as Re(sum(ct * t)), with
no conjugation. So a holomorphic op's VJP multiplies by its derivative f'(z),
exactly as its real rule does (exp, mul, matmul keep their rules), and the
non-holomorphic ops have the transposes written here:

    conj   t -> conj(t)      ct -> conj(ct)
    real   t -> real(t)      ct (real) -> ct + 0j
    imag   t -> imag(t)      ct (real) -> -1j * ct
    abs    t -> Re(conj(s) t), s = z / |z| (0 at 0)    ct -> ct * conj(s)

With these, `grad` of a real loss of a complex z is what JAX's grad gives:
d loss/dx - i d loss/dy (the conjugate of TensorFlow's and PyTorch's).
"""
from __future__ import annotations

import numpy as np

from ..builder import bind
from ..op import jvp_rules, shape_rules, vjp_rules
from ..types import real_dtype
from ._helpers import COMPLEX_OPS, DTypeError
from . import elementwise as ew

__all__ = ["conj_p", "real_p", "imag_p", "conj", "real", "imag", "times_i", "complex_sign"]


def _complex_only(op, out_real: bool):
    def shape_rule(x):
        if x.dtype.kind != "c":
            raise DTypeError(f"{op.name}: expected a complex operand, got {x} (the function "
                             f"numpy.{op.name} of real input is computed without this op)")
        return x.with_dtype(real_dtype(x.dtype)) if out_real else x

    shape_rules[op] = shape_rule


conj_p = ew.unary("conj", np.conjugate, float_only=False, cheap=True)
real_p = ew.unary("real", np.real, float_only=False, cheap=True)
imag_p = ew.unary("imag", np.imag, float_only=False, cheap=True)
_complex_only(conj_p, out_real=False)
_complex_only(real_p, out_real=True)
_complex_only(imag_p, out_real=True)


def conj(x): return bind(conj_p, x)
def real(x): return bind(real_p, x)
def imag(x): return bind(imag_p, x)


def times_i(x):
    """x * 1j, for a complex Sym x."""
    return x * x.builder.literal(1j, x.dtype)


def complex_sign(z):
    """z / |z|, and 0 where z is 0 (NumPy 2's sign of a complex number)."""
    size = ew.abs(z)
    nonzero = ew.ne(size, 0.0)
    return z / ew.cast(ew.where(nonzero, size, 1.0), z.dtype)


vjp_rules[conj_p] = lambda ct, out, x: (conj(ct),)
jvp_rules[conj_p] = lambda ts, out, x: conj(ts[0])
vjp_rules[real_p] = lambda ct, out, x: (ew.cast(ct, x.dtype),)
jvp_rules[real_p] = lambda ts, out, x: real(ts[0])
vjp_rules[imag_p] = lambda ct, out, x: (times_i(ew.cast(ew.neg(ct), x.dtype)),)
jvp_rules[imag_p] = lambda ts, out, x: imag(ts[0])

# cast from real to complex embeds the reals in the plane; its transpose is the real part.
_other_cast_vjp = vjp_rules[ew.cast_p]
vjp_rules[ew.cast_p] = lambda ct, out, x, *, dtype: (
    (ew.cast(real(ct), x.dtype),) if x.dtype.kind == "f" and out.dtype.kind == "c"
    else _other_cast_vjp(ct, out, x, dtype=dtype))

# abs: the real rule (ct * sign(x)) for real x; for complex z, |z| is not holomorphic.
_real_abs_vjp, _real_abs_jvp = vjp_rules[ew.abs_p], jvp_rules[ew.abs_p]
vjp_rules[ew.abs_p] = lambda ct, out, x: (
    (ew.cast(ct, x.dtype) * conj(complex_sign(x)),) if x.dtype.kind == "c" else _real_abs_vjp(ct, out, x))
jvp_rules[ew.abs_p] = lambda ts, out, x: (
    real(conj(complex_sign(x)) * ts[0]) if x.dtype.kind == "c" else _real_abs_jvp(ts, out, x))

# arcsinh: the real rule is 1 / hypot(1, x), which has no complex meaning; for complex z
# arcsinh'(z) = 1 / sqrt(1 + z^2), whose principal branch cuts (z = iy, |y| > 1) are arcsinh's.
_real_arcsinh_vjp, _real_arcsinh_jvp = vjp_rules[ew.arcsinh_p], jvp_rules[ew.arcsinh_p]


def _arcsinh_slope(z):
    return 1.0 / ew.sqrt(1.0 + z * z)


vjp_rules[ew.arcsinh_p] = lambda ct, out, x: (
    (ct * _arcsinh_slope(x),) if x.dtype.kind == "c" else _real_arcsinh_vjp(ct, out, x))
jvp_rules[ew.arcsinh_p] = lambda ts, out, x: (
    ts[0] * _arcsinh_slope(x) if x.dtype.kind == "c" else _real_arcsinh_jvp(ts, out, x))

# Holomorphic functions keep their real rules (f'(z) by the same formula); these take
# complex operands with NumPy's meaning (principal branches).
COMPLEX_OPS.update((
    conj_p, real_p, imag_p, ew.abs_p, ew.neg_p,
    ew.exp_p, ew.log_p, ew.log1p_p, ew.expm1_p, ew.sqrt_p, ew.sin_p, ew.cos_p, ew.tan_p, ew.tanh_p,
    ew.sinh_p, ew.cosh_p, ew.arcsin_p, ew.arccos_p, ew.arctan_p, ew.arctanh_p, ew.arccosh_p, ew.arcsinh_p,
    ew.log2_p, ew.log10_p, ew.exp2_p,
    ew.add_p, ew.sub_p, ew.mul_p, ew.div_p, ew.pow_p, ew.eq_p, ew.ne_p,
))
