"""Discrete Fourier transforms: three unscaled, linear ops from which every
numpy.fft function is built (functions/fourier.py adds the lengths and the norms).

    fft[axes, inverse]  complex -> complex   sum_j x_j exp(-+2 pi i j k / n) over each axis
    rfft[axes]          real -> complex      fft of real x; the last axis keeps n // 2 + 1 terms
    irfft[axes, n]      complex -> real      the inverse of rfft (unscaled), output length n on
                                             the last axis, the input read as the half of a
                                             Hermitian spectrum (imaginary parts of the terms
                                             0 and n / 2 ignored, as NumPy's)

The references are NumPy's pocketfft. Derivatives use JAX's pairing Re(sum(ct * t))
(docs/complex.md), under which a DFT matrix is its own transpose:

    fft:    the tangent and the cotangent go through the same fft
    rfft:   x_bar = real(fft(ct zero-padded to n on the last axis)) = irfft(conj(ct) / w)
    irfft:  X_bar = w * conj(rfft(ct)), with the Hermitian weights w = 1 for the terms
            0 and n / 2 (even n), 2 for the others (how often each counts in the full
            spectrum: irfft(Y) = Re(sum_k w_k Y_k exp(2 pi i j k / n)))
"""
from __future__ import annotations

import numpy as np

from ..builder import Sym, bind
from ..errors import DTypeError, ShapeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..types import TensorType, complex_dtype, real_dtype
from .complex_parts import conj
from .elementwise import mul

__all__ = ["fft_p", "rfft_p", "irfft_p", "fft", "rfft", "irfft", "hermitian_weights"]


def _check_axes(op, x: TensorType, axes) -> tuple:
    axes = tuple(int(a) for a in axes)
    if not axes or len(set(axes)) != len(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise ShapeError(f"{op.name}: axes {axes} are not distinct axes of a rank-{x.ndim} operand {x}")
    return axes


def _require(op, x: TensorType, kind: str, what: str):
    if x.dtype.kind != kind:
        raise DTypeError(f"{op.name}: expected a {what} operand, got {x}")


def _shifted(axes) -> tuple:
    """The axes of a batch element, on the batched operand (its batch axis leads)."""
    return tuple(a + 1 for a in axes)


# --- fft: complex to complex -------------------------------------------------------------

fft_p = new_op("fft", elementwise=False, can_fail_on_values=False, runs_code=False)


def _fft_shape(x, *, axes, inverse):
    _require(fft_p, x, "c", "complex")
    _check_axes(fft_p, x, axes)
    return x


# The references transform one axis at a time: NumPy's fftn, rfftn and irfftn cost 2-30x
# its one-axis functions for the same transform (NumPy 2.4, n = 1024).

def _c2c_axes(x, axes, inverse):
    for a in axes:
        x = np.fft.ifft(x, axis=a, norm="forward") if inverse else np.fft.fft(x, axis=a)
    return x


def _fft_impl(x, *, axes, inverse):
    x = np.asarray(x)
    return _c2c_axes(x, axes, inverse).astype(x.dtype, copy=False)


shape_rules[fft_p] = _fft_shape
impls[fft_p] = _fft_impl
vjp_rules[fft_p] = lambda ct, out, x, *, axes, inverse: (fft(ct, axes, inverse),)
jvp_rules[fft_p] = lambda ts, out, x, *, axes, inverse: fft(ts[0], axes, inverse)
batching_rules[fft_p] = lambda n, ins, batched, *, axes, inverse: fft(ins[0], _shifted(axes), inverse)


# --- rfft: real to the half spectrum ---------------------------------------------------------

rfft_p = new_op("rfft", elementwise=False, can_fail_on_values=False, runs_code=False)


def _rfft_shape(x, *, axes):
    _require(rfft_p, x, "f", "real floating-point")
    axes = _check_axes(rfft_p, x, axes)
    shape = list(x.shape)
    shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    return TensorType(tuple(shape), complex_dtype(x.dtype))


def _rfft_impl(x, *, axes):
    x = np.asarray(x)
    out = _c2c_axes(np.fft.rfft(x, axis=axes[-1]), axes[:-1], False)
    return out.astype(complex_dtype(x.dtype), copy=False)


def _rfft_vjp(ct, out, x, *, axes):
    n = x.shape[axes[-1]]
    weights = _weights_literal(x, axes[-1], n, 1.0 / hermitian_weights(n, x.dtype))
    return (irfft(mul(conj(ct), weights), axes, n),)


shape_rules[rfft_p] = _rfft_shape
impls[rfft_p] = _rfft_impl
vjp_rules[rfft_p] = _rfft_vjp
jvp_rules[rfft_p] = lambda ts, out, x, *, axes: rfft(ts[0], axes)
batching_rules[rfft_p] = lambda n, ins, batched, *, axes: rfft(ins[0], _shifted(axes))


# --- irfft: the half spectrum to real ---------------------------------------------------------

irfft_p = new_op("irfft", elementwise=False, can_fail_on_values=False, runs_code=False)


def _irfft_shape(x, *, axes, n):
    _require(irfft_p, x, "c", "complex")
    axes = _check_axes(irfft_p, x, axes)
    if not isinstance(n, int) or n < 1 or x.shape[axes[-1]] != n // 2 + 1:
        raise ShapeError(f"irfft: an output length n={n} needs {n // 2 + 1 if isinstance(n, int) else '?'} terms "
                         f"on axis {axes[-1]} of {x}")
    shape = list(x.shape)
    shape[axes[-1]] = n
    return TensorType(tuple(shape), real_dtype(x.dtype))


def _irfft_impl(x, *, axes, n):
    x = np.asarray(x)
    out = np.fft.irfft(_c2c_axes(x, axes[:-1], True), n=n, axis=axes[-1], norm="forward")
    return out.astype(real_dtype(x.dtype), copy=False)


def hermitian_weights(n: int, dtype) -> np.ndarray:
    """How many times each of the n // 2 + 1 terms of a real signal's half spectrum counts
    in the full spectrum: 1 for the term 0 (and n / 2 for even n), 2 for the others."""
    w = np.full(n // 2 + 1, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w.astype(real_dtype(dtype))


def _weights_literal(like, axis: int, n: int, weights):
    """The n // 2 + 1 weights as a literal of like's complex dtype, along `axis` of like's rank."""
    shape = [1] * like.ndim
    shape[axis] = n // 2 + 1
    return like.builder.literal(weights.astype(complex_dtype(like.dtype)).reshape(shape))


def _irfft_vjp(ct, out, x, *, axes, n):
    return (mul(conj(rfft(ct, axes)), _weights_literal(x, axes[-1], n, hermitian_weights(n, x.dtype))),)


shape_rules[irfft_p] = _irfft_shape
impls[irfft_p] = _irfft_impl
vjp_rules[irfft_p] = _irfft_vjp
jvp_rules[irfft_p] = lambda ts, out, x, *, axes, n: irfft(ts[0], axes, n)
batching_rules[irfft_p] = lambda count, ins, batched, *, axes, n: irfft(ins[0], _shifted(axes), n)


# --- the functions rules and passes call ------------------------------------------------------

def fft(x: Sym, axes, inverse: bool) -> Sym:
    return bind(fft_p, x, axes=tuple(int(a) for a in axes), inverse=bool(inverse))


def rfft(x: Sym, axes) -> Sym:
    return bind(rfft_p, x, axes=tuple(int(a) for a in axes))


def irfft(x: Sym, axes, n: int) -> Sym:
    return bind(irfft_p, x, axes=tuple(int(a) for a in axes), n=int(n))
