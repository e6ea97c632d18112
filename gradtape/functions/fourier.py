"""numpy.fft on tensors: fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2,
irfft2, rfftn, irfftn, hfft, ihfft, fftfreq, rfftfreq, fftshift, ifftshift.

Each resizes its input to the lengths asked for (`n`, `s`: truncating or padding
with zeros, as NumPy), binds one of the unscaled transforms of ir/ops/fourier.py and
scales by the `norm` ("backward", the default: the inverse divides by n;
"ortho": both divide by sqrt(n); "forward": the forward divides by n). Results
have NumPy's dtypes: complex64 from float32 or complex64, complex128 otherwise.
Derivatives follow JAX's convention (docs/complex.md).

Example::

    >>> np.fft.fft(gradtape.constant([1.0, 2.0, 3.0, 4.0]))
    Tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex128)
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.ops import fourier as fft_ops
from ..ir.types import complex_dtype
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from . import elementwise as ew
from ._promote import as_tensor, convert
from .complex_numbers import conj
from .linalg import _no_out
from .rearrange import roll
from .shape import pad

# Not gradtape's own names (numpy.fft's functions run through NumPy's dispatch): `np.fft.fft(t)`.
__all__: list = []

_NORMS = (None, "backward", "ortho", "forward")


def _scale(norm, n: int, forward: bool):
    """The factor the norm applies to a transform over n points."""
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    divides = (norm == "forward") if forward else (norm in (None, "backward"))
    return 1.0 / n if divides else 1.0


def _scaled(x, factor):
    return x if factor == 1.0 else ew.multiply(x, x.dtype.type(factor))


def _resized(x, axis: int, n: int):
    """x truncated or zero-padded to length n along axis (numpy.fft's n and s)."""
    have = x.shape[axis]
    if n == have:
        return x
    if n < have:
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, n)
        return x[tuple(index)]
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, n - have)
    return pad(x, widths)


def _complex(x):
    x = as_tensor(x)
    if x.dtype.kind == "c":
        return x
    return convert(x, complex_dtype(x.dtype if x.dtype.kind == "f" else np.float64))


def _real(name, x):
    x = as_tensor(x)
    if x.dtype.kind == "c":
        raise TypeError(f"{name}: expected real input, got a tensor of dtype {x.dtype} "
                        "(NumPy would discard the imaginary part); pass numpy.real(x) or use fft")
    return x if x.dtype.kind == "f" else convert(x, np.float64)


def _axes_and_lengths(name, x, s, axes) -> tuple:
    """numpy.fft's (s, axes) rules: the axes (non-negative, in order) and a length for each."""
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    axes = tuple(int(a) for a in axes)
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise np.exceptions.AxisError(f"{name}: axis {a} is out of bounds for an array of dimension {x.ndim}")
    axes = tuple(a % x.ndim for a in axes)
    if s is None:
        s = tuple(x.shape[a] for a in axes)
    s = tuple(int(v) for v in s)
    if len(s) != len(axes):
        raise ValueError(f"{name}: shape and axes have different lengths ({len(s)} and {len(axes)})")
    if any(v < 1 for v in s):
        raise ValueError(f"{name}: invalid number of data points ({min(s)}) specified")
    return axes, s


def _c2c(name, a, s, axes, norm, inverse, out=None):
    _no_out(name, out)  # NumPy writes into out=; ignoring it would leave the caller's array unwritten
    x = _complex(a)
    axes, s = _axes_and_lengths(name, x, s, axes)
    if len(set(axes)) != len(axes):  # NumPy transforms a repeated axis twice
        for axis, n in zip(axes, s):
            x = _c2c(name, x, (n,), (axis,), norm, inverse)
        return x
    for axis, n in zip(axes, s):
        x = _resized(x, axis, n)
    out = bind(fft_ops.fft_p, x, axes=axes, inverse=inverse)
    return _scaled(out, _scale(norm, math.prod(s), forward=not inverse))


def _r2c(name, a, s, axes, norm, out=None):
    _no_out(name, out)
    x = _real(name, a)
    axes, s = _axes_and_lengths(name, x, s, axes)
    for axis, n in zip(axes, s):
        x = _resized(x, axis, n)
    out = bind(fft_ops.rfft_p, x, axes=axes)
    return _scaled(out, _scale(norm, math.prod(s), forward=True))


def _c2r(name, a, s, axes, norm, out=None):
    _no_out(name, out)
    x = _complex(a)
    if s is None:  # NumPy's default: 2 (m - 1) points from m terms on the last axis
        axes, lengths = _axes_and_lengths(name, x, None, axes)
        s = lengths[:-1] + (2 * (lengths[-1] - 1),)
    axes, s = _axes_and_lengths(name, x, s, axes)
    n = s[-1]
    for axis, length in zip(axes[:-1], s[:-1]):
        x = _resized(x, axis, length)
    x = _resized(x, axes[-1], n // 2 + 1)
    out = bind(fft_ops.irfft_p, x, axes=axes, n=n)
    return _scaled(out, _scale(norm, math.prod(s), forward=False))


def _one_axis(n, axis):
    return (None if n is None else (n,)), (axis,)


@implements(np.fft.fft)
def fft(a, n=None, axis=-1, norm=None, out=None):
    """The discrete Fourier transform along one axis, as numpy.fft.fft."""
    return _c2c("fft", a, *_one_axis(n, axis), norm, False, out=out)


@implements(np.fft.ifft)
def ifft(a, n=None, axis=-1, norm=None, out=None):
    """The inverse discrete Fourier transform along one axis, as numpy.fft.ifft."""
    return _c2c("ifft", a, *_one_axis(n, axis), norm, True, out=out)


@implements(np.fft.fftn)
def fftn(a, s=None, axes=None, norm=None, out=None):
    """The n-dimensional discrete Fourier transform, as numpy.fft.fftn."""
    return _c2c("fftn", a, s, axes, norm, False, out=out)


@implements(np.fft.ifftn)
def ifftn(a, s=None, axes=None, norm=None, out=None):
    """The n-dimensional inverse discrete Fourier transform, as numpy.fft.ifftn."""
    return _c2c("ifftn", a, s, axes, norm, True, out=out)


@implements(np.fft.fft2)
def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """The two-dimensional discrete Fourier transform, as numpy.fft.fft2."""
    return _c2c("fft2", a, s, axes, norm, False, out=out)


@implements(np.fft.ifft2)
def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """The two-dimensional inverse discrete Fourier transform, as numpy.fft.ifft2."""
    return _c2c("ifft2", a, s, axes, norm, True, out=out)


@implements(np.fft.rfft)
def rfft(a, n=None, axis=-1, norm=None, out=None):
    """The discrete Fourier transform of real input, terms 0 to n // 2, as numpy.fft.rfft."""
    return _r2c("rfft", a, *_one_axis(n, axis), norm, out=out)


@implements(np.fft.rfftn)
def rfftn(a, s=None, axes=None, norm=None, out=None):
    """The n-dimensional transform of real input, as numpy.fft.rfftn (the last axis halved)."""
    return _r2c("rfftn", a, s, axes, norm, out=out)


@implements(np.fft.rfft2)
def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """The two-dimensional transform of real input, as numpy.fft.rfft2."""
    return _r2c("rfft2", a, s, axes, norm, out=out)


@implements(np.fft.irfft)
def irfft(a, n=None, axis=-1, norm=None, out=None):
    """The inverse of rfft: n real points (default 2 (m - 1)) from m terms, as numpy.fft.irfft."""
    return _c2r("irfft", a, *_one_axis(n, axis), norm, out=out)


@implements(np.fft.irfftn)
def irfftn(a, s=None, axes=None, norm=None, out=None):
    """The inverse of rfftn, as numpy.fft.irfftn."""
    return _c2r("irfftn", a, s, axes, norm, out=out)


@implements(np.fft.irfft2)
def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """The inverse of rfft2, as numpy.fft.irfft2."""
    return _c2r("irfft2", a, s, axes, norm, out=out)


_SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


@implements(np.fft.hfft)
def hfft(a, n=None, axis=-1, norm=None, out=None):
    """The transform of a Hermitian-symmetric signal given by its first half: real, as numpy.fft.hfft."""
    _scale(norm, 1, True)  # a bad norm's error
    return _c2r("hfft", conj(_complex(a)), *_one_axis(n, axis), _SWAPPED[norm], out=out)


@implements(np.fft.ihfft)
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """The inverse of hfft: the half spectrum of real input, as numpy.fft.ihfft."""
    _scale(norm, 1, True)
    return conj(_r2c("ihfft", a, *_one_axis(n, axis), _SWAPPED[norm], out=out))


@implements(np.fft.fftfreq)
def fftfreq(n, d=1.0, device=None):
    """The sample frequencies of an n-point transform, spacing d, as numpy.fft.fftfreq."""
    return ew.divide(np.fft.fftfreq(int(n)), d)


@implements(np.fft.rfftfreq)
def rfftfreq(n, d=1.0, device=None):
    """The sample frequencies of rfft's n // 2 + 1 terms, spacing d, as numpy.fft.rfftfreq."""
    return ew.divide(np.fft.rfftfreq(int(n)), d)


def _shift_amounts(x, axes, sign):
    axes = tuple(range(x.ndim)) if axes is None else ((axes,) if isinstance(axes, (int, np.integer)) else tuple(axes))
    return [sign * (x.shape[a] // 2) for a in axes], axes


@implements(np.fft.fftshift)
def fftshift(x, axes=None):
    """The zero-frequency term moved to the centre, as numpy.fft.fftshift."""
    x = as_tensor(x)
    shifts, axes = _shift_amounts(x, axes, 1)
    return roll(x, shifts, axes)


@implements(np.fft.ifftshift)
def ifftshift(x, axes=None):
    """The inverse of fftshift, as numpy.fft.ifftshift."""
    x = as_tensor(x)
    shifts, axes = _shift_amounts(x, axes, -1)
    return roll(x, shifts, axes)
