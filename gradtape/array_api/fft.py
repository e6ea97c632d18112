"""The array API's fft extension, on gradtape's numpy.fft functions (functions/fourier.py: every
one differentiable, by JAX's convention for complex values; docs/complex.md).

    >>> import numpy as np, gradtape.array_api as xp
    >>> x = xp.asarray(np.array([1.0, 2.0, 0.0, -1.0]))
    >>> xp.fft.rfft(x)
    Tensor([2.+0.j, 1.-3.j, 0.+0.j], dtype=complex128)
"""
from __future__ import annotations

from ..functions import fourier as _fourier
from ._creation import asarray as _asarray


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    """The one-dimensional discrete Fourier transform along `axis`."""
    return _fourier.fft(x, n=n, axis=axis, norm=norm)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of `fft`."""
    return _fourier.ifft(x, n=n, axis=axis, norm=norm)


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    """The n-dimensional discrete Fourier transform over `axes`."""
    return _fourier.fftn(x, s=s, axes=axes, norm=norm)


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    """The inverse of `fftn`."""
    return _fourier.ifftn(x, s=s, axes=axes, norm=norm)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The transform of real input: the n // 2 + 1 non-negative frequencies."""
    return _fourier.rfft(x, n=n, axis=axis, norm=norm)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of `rfft`: real output of length n (default 2 (m - 1))."""
    return _fourier.irfft(x, n=n, axis=axis, norm=norm)


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    """The n-dimensional transform of real input (the last axis halved)."""
    return _fourier.rfftn(x, s=s, axes=axes, norm=norm)


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    """The inverse of `rfftn`."""
    return _fourier.irfftn(x, s=s, axes=axes, norm=norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The transform of a signal with Hermitian symmetry (real output)."""
    return _fourier.hfft(x, n=n, axis=axis, norm=norm)


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of `hfft`."""
    return _fourier.ihfft(x, n=n, axis=axis, norm=norm)


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of an n-point transform with sample spacing d."""
    out = _fourier.fftfreq(n, d)
    return _asarray(out, dtype=dtype, device=device) if dtype is not None or device is not None else out


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The non-negative sample frequencies of an n-point `rfft`."""
    out = _fourier.rfftfreq(n, d)
    return _asarray(out, dtype=dtype, device=device) if dtype is not None or device is not None else out


def fftshift(x, /, *, axes=None):
    """The zero frequency moved to the middle of `axes` (all axes by default)."""
    return _fourier.fftshift(x, axes=axes)


def ifftshift(x, /, *, axes=None):
    """The inverse of `fftshift`."""
    return _fourier.ifftshift(x, axes=axes)
