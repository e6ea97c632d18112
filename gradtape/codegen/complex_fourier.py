"""The FFT ops of ir/ops/fourier.py lowered to the native kernels' pair ops (complex_split.py's rules).

A complex tensor is a Pair of real ones (complex_split.py); ir/ops/fourier_pairs.py's ops
transform the last axis of such a pair with the native kernels (codegen/fft_kernels.py). An
FFT over other axes moves each axis last (a transpose), transforms it, and moves it back;
over several axes, one axis after another, as NumPy's pocketfft does:

    fft[axes, inverse]   each axis of `axes`: fft_pairs
    rfft[axes]           the last axis of `axes`: rfft_pairs (n // 2 + 1 terms), then the
                         others: fft_pairs
    irfft[axes, n]       every axis but the last: inverse fft_pairs, then the last: irfft_pairs
                         of length n

The ops are unscaled, as the IR's (`norm` is a scale the front end multiplies by).
"""
from __future__ import annotations

from ..ir.ops.fourier_pairs import fft_pairs, irfft_pairs, rfft_pairs
from ..ir.ops.layout import transpose
from .complex_math import Pair


def _last(x, axis: int, ndim: int):
    """`x` with `axis` moved last, and the permutation that moves it back."""
    if axis == ndim - 1:
        return x, None
    perm = [a for a in range(ndim) if a != axis] + [axis]
    back = [perm.index(a) for a in range(ndim)]
    return transpose(x, perm), back


def _back(x, back):
    return x if back is None else transpose(x, back)


def _c2c(z: Pair, axis: int, ndim: int, inverse: bool) -> Pair:
    re, back = _last(z.re, axis, ndim)
    im, _ = _last(z.im, axis, ndim)
    re, im = fft_pairs(re, im, inverse)
    return Pair(_back(re, back), _back(im, back))


def fft_rule(eqn, z, *, axes, inverse):
    ndim = len(eqn.inputs[0].type.shape)
    for axis in axes:
        z = _c2c(z, axis, ndim, inverse)
    return z


def rfft_rule(eqn, x, *, axes):
    ndim = len(eqn.inputs[0].type.shape)
    moved, back = _last(x, axes[-1], ndim)
    re, im = rfft_pairs(moved)
    z = Pair(_back(re, back), _back(im, back))
    for axis in axes[:-1]:
        z = _c2c(z, axis, ndim, False)
    return z


def irfft_rule(eqn, z, *, axes, n):
    ndim = len(eqn.inputs[0].type.shape)
    for axis in axes[:-1]:
        z = _c2c(z, axis, ndim, True)
    re, back = _last(z.re, axes[-1], ndim)
    im, _ = _last(z.im, axes[-1], ndim)
    return _back(irfft_pairs(re, im, n), back)


RULES = {"fft": fft_rule, "rfft": rfft_rule, "irfft": irfft_rule}
