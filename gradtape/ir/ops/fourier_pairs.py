"""The discrete Fourier transforms of ir/ops/fourier.py over pairs of real tensors (a
complex tensor split into its real and imaginary parts), along the last axis, unscaled:

    fft_pairs[inverse]  (re, im) (..., n)      -> (..., 2, n)       sum_j z_j exp(-+2 pi i j k / n)
    rfft_pairs          x (..., n)             -> (..., 2, n//2+1)  the half spectrum of real x
    irfft_pairs[n]      (re, im) (..., n//2+1) -> (..., n)          n * numpy.fft.irfft (the
                                                                    imaginary parts of the terms
                                                                    0 and n / 2 are not read)

An op has one result, so the two parts of a spectrum are packed along a new axis before the
last: index 0 the real parts, 1 the imaginary parts (`unpack_pairs` splits them; a row of
each part is contiguous, the split format the native kernels, codegen/fft_kernels.py, read
and write). `fft_pairs`, `rfft_pairs` and `irfft_pairs` below bind the ops and return the
parts.

These are what complex programs become once complex tensors are lowered to pairs of real
ones, after differentiation, so nothing needs their derivatives; they have rules anyway
(the transforms are linear, and tests/ir's table-driven checks need them). With the real
pairing sum(re_bar * re + im_bar * im), the transpose of a DFT is its conjugate, the
opposite direction:

    fft_pairs:    (re_bar, im_bar) = fft_pairs(ct, not inverse)
    rfft_pairs:   x_bar = irfft_pairs(ct / w, n)        w: fourier.hermitian_weights
    irfft_pairs:  (re_bar, im_bar) = w * rfft_pairs(ct)

Example::

    >>> from gradtape import ir
    >>> b = ir.Builder()
    >>> x = b.input(ir.TensorType((8,), np.float64))
    >>> re, im = rfft_pairs(x)
    >>> re.shape, im.shape
    ((5,), (5,))
    >>> irfft_pairs(re, im, 8).shape    # its values: 8 * x
    (8,)
"""
from __future__ import annotations

import numpy as np

from ..builder import Sym, bind
from ..errors import DTypeError, ShapeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..types import TensorType
from .elementwise import mul
from .fourier import hermitian_weights
from .indexing import slice as slice_
from .layout import all_batched, broadcast_to, reshape

__all__ = ["fft_pairs_p", "rfft_pairs_p", "irfft_pairs_p", "fft_pairs", "rfft_pairs", "irfft_pairs",
           "unpack_pairs"]


def _require_real(op, *xs: TensorType):
    for x in xs:
        if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise DTypeError(f"{op.name}: expected float32 or float64 operands, got {x}")
        if x.ndim < 1 or x.shape[-1] == 0:
            raise ShapeError(f"{op.name}: expected operands with a nonempty last axis (the transform's), got {x}")
    if any(x != xs[0] for x in xs):
        raise ShapeError(f"{op.name}: the real and imaginary parts must have one type, got {', '.join(map(str, xs))}")


def _packed(x: TensorType, length: int) -> TensorType:
    return TensorType(x.shape[:-1] + (2, length), x.dtype)


def _complex(re, im):
    """re + i im in the complex dtype of re's precision (NumPy's fft keeps complex64)."""
    re, im = np.asarray(re), np.asarray(im)
    z = np.empty(re.shape, np.complex64 if re.dtype == np.float32 else np.complex128)
    z.real, z.imag = re, im
    return z


def _pack(z, dtype):
    return np.stack([z.real, z.imag], axis=-2).astype(dtype, copy=False)


def _zero_if_none(ts, ins):
    return [zeros_like(x) if t is None else t for t, x in zip(ts, ins)]


def zeros_like(x: Sym) -> Sym:
    return broadcast_to(x.builder.literal(0, x.dtype), x.shape)


def unpack_pairs(packed: Sym):
    """(re, im) of a packed (..., 2, m) result: two (..., m) tensors."""
    m = packed.shape[-1]
    lead = packed.shape[:-2]

    def part(i):
        starts = (0,) * len(lead) + (i, 0)
        return reshape(slice_(packed, starts, lead + (i + 1, m)), lead + (m,))

    return part(0), part(1)


def _weights(like: Sym, n: int, weights) -> Sym:
    """The n // 2 + 1 weights as a literal of like's dtype, broadcasting along its last axis."""
    shape = (1,) * (like.ndim - 1) + (n // 2 + 1,)
    return like.builder.literal(weights.astype(like.dtype).reshape(shape))


# --- fft_pairs -------------------------------------------------------------------------------

fft_pairs_p = new_op("fft_pairs", elementwise=False, can_fail_on_values=False, runs_code=False)


def _fft_pairs_shape(re, im, *, inverse):
    _require_real(fft_pairs_p, re, im)
    return _packed(re, re.shape[-1])


def _fft_pairs_impl(re, im, *, inverse):
    z = _complex(re, im)
    out = np.fft.ifft(z, axis=-1, norm="forward") if inverse else np.fft.fft(z, axis=-1)
    return _pack(out, np.asarray(re).dtype)


shape_rules[fft_pairs_p] = _fft_pairs_shape
impls[fft_pairs_p] = _fft_pairs_impl
vjp_rules[fft_pairs_p] = lambda ct, out, re, im, *, inverse: fft_pairs(*unpack_pairs(ct), not inverse)
jvp_rules[fft_pairs_p] = lambda ts, out, re, im, *, inverse: bind(
    fft_pairs_p, *_zero_if_none(ts, (re, im)), inverse=inverse)
batching_rules[fft_pairs_p] = lambda size, ins, batched, *, inverse: bind(
    fft_pairs_p, *all_batched(size, ins, batched), inverse=inverse)


# --- rfft_pairs ------------------------------------------------------------------------------

rfft_pairs_p = new_op("rfft_pairs", elementwise=False, can_fail_on_values=False, runs_code=False)


def _rfft_pairs_shape(x):
    _require_real(rfft_pairs_p, x)
    return _packed(x, x.shape[-1] // 2 + 1)


def _rfft_pairs_impl(x):
    x = np.asarray(x)
    return _pack(np.fft.rfft(x, axis=-1), x.dtype)


def _rfft_pairs_vjp(ct, out, x):
    n = x.shape[-1]
    re, im = unpack_pairs(ct)
    inv = _weights(re, n, 1.0 / hermitian_weights(n, x.dtype))
    return (irfft_pairs(mul(re, inv), mul(im, inv), n),)


shape_rules[rfft_pairs_p] = _rfft_pairs_shape
impls[rfft_pairs_p] = _rfft_pairs_impl
vjp_rules[rfft_pairs_p] = _rfft_pairs_vjp
jvp_rules[rfft_pairs_p] = lambda ts, out, x: bind(rfft_pairs_p, ts[0])
batching_rules[rfft_pairs_p] = lambda size, ins, batched: bind(rfft_pairs_p, ins[0])


# --- irfft_pairs -----------------------------------------------------------------------------

irfft_pairs_p = new_op("irfft_pairs", elementwise=False, can_fail_on_values=False, runs_code=False)


def _irfft_pairs_shape(re, im, *, n):
    _require_real(irfft_pairs_p, re, im)
    if not isinstance(n, int) or n < 1 or re.shape[-1] != n // 2 + 1:
        want = n // 2 + 1 if isinstance(n, int) else "?"
        raise ShapeError(f"irfft_pairs: an output length n={n} needs {want} terms on the last axis of {re}")
    return TensorType(re.shape[:-1] + (n,), re.dtype)


def _irfft_pairs_impl(re, im, *, n):
    re = np.asarray(re)
    return np.fft.irfft(_complex(re, im), n=n, axis=-1, norm="forward").astype(re.dtype, copy=False)


def _irfft_pairs_vjp(ct, out, re, im, *, n):
    w = _weights(ct, n, hermitian_weights(n, ct.dtype))
    ct_re, ct_im = rfft_pairs(ct)
    return mul(ct_re, w), mul(ct_im, w)


shape_rules[irfft_pairs_p] = _irfft_pairs_shape
impls[irfft_pairs_p] = _irfft_pairs_impl
vjp_rules[irfft_pairs_p] = _irfft_pairs_vjp
jvp_rules[irfft_pairs_p] = lambda ts, out, re, im, *, n: bind(irfft_pairs_p, *_zero_if_none(ts, (re, im)), n=n)
batching_rules[irfft_pairs_p] = lambda size, ins, batched, *, n: bind(
    irfft_pairs_p, *all_batched(size, ins, batched), n=n)


# --- the functions passes call -------------------------------------------------------------------

def fft_pairs(re: Sym, im: Sym, inverse: bool):
    """(re, im) of the unscaled DFT (inverse: exp(+...)) of re + i im along the last axis."""
    return unpack_pairs(bind(fft_pairs_p, re, im, inverse=bool(inverse)))


def rfft_pairs(x: Sym):
    """(re, im) of the n // 2 + 1 terms of the DFT of real x along the last axis."""
    return unpack_pairs(bind(rfft_pairs_p, x))


def irfft_pairs(re: Sym, im: Sym, n: int) -> Sym:
    """The n reals whose unscaled half spectrum is (re, im) (n * numpy.fft.irfft)."""
    return bind(irfft_pairs_p, re, im, n=int(n))
