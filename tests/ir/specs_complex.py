"""Op specs of the complex-part ops (conj, real, imag, abs of complex): real functions
of real inputs through complex intermediates, so every table-driven check (finite
differences to third order, vmap, the optimizer) applies as it is. The complex
functions themselves have their own table, tests/complex/complex_specs.py."""
import numpy as np

import gradtape as gt

from .op_specs import OpSpec, args, normal


def _parts(x, y):
    z = x + 1j * y
    return np.real(np.exp(z)) + np.imag(np.conj(np.sin(z * z))) * np.abs(z)


_LOW_PASS = np.array([1.0, 1.0, 0.5, 0.0, 0.0])


def _spectral(x):
    smooth = np.fft.irfft(np.fft.rfft(x, axis=-1) * _LOW_PASS, n=8, axis=-1)
    return smooth + np.real(np.fft.ifft(np.fft.fft(x * (1.0 + 0.5j)), n=8)) * np.imag(np.fft.fft2(x))


SPECS = [
    OpSpec("fft_rfft_irfft", _spectral, args(normal(3, 8)), ops=("fft", "rfft", "irfft", "real", "imag"),
           numpy_fn=_spectral),
    OpSpec("complex_parts", lambda x, y: _parts(x, y), args(normal(2, 3), normal(2, 3)),
           ops=("conj", "real", "imag", "abs", "exp", "sin", "mul", "cast"), numpy_fn=_parts),
    OpSpec("complex_abs_angle", lambda x: gt.angle(x * (1.0 + 2.0j) + 3.0) * gt.abs(x * 1j - 0.5),
           args(normal(4)), ops=("abs", "imag", "real", "arctan2"),
           numpy_fn=lambda x: np.angle(x * (1.0 + 2.0j) + 3.0) * np.abs(x * 1j - 0.5)),
]
