"""Op specs of the FFT over pairs of real tensors (fft_pairs, rfft_pairs, irfft_pairs: what
complex programs become once their complex tensors are split into real and imaginary parts).
The spec binds the ops on tensors; numpy.fft on the complex numbers is its reference."""
import numpy as np

from gradtape.ir.ops import fourier_pairs as fp
from gradtape.tracer.dispatch import bind

from .op_specs import OpSpec, args, normal

_LOW_PASS = np.array([1.0, 1.0, 0.5, 0.25, 0.0])


def _parts(packed):
    return packed[..., 0, :], packed[..., 1, :]


def _pairs(x, y):
    re, im = _parts(bind(fp.fft_pairs_p, x, y, inverse=False))
    back_re, back_im = _parts(bind(fp.fft_pairs_p, re * 0.5, im * x, inverse=True))
    h_re, h_im = _parts(bind(fp.rfft_pairs_p, x + back_re))
    smooth = bind(fp.irfft_pairs_p, h_re * _LOW_PASS.astype(x.dtype), h_im, n=8)
    return smooth + back_im * y


def _pairs_numpy(x, y):
    z = np.fft.fft(x + 1j * y)
    back = np.fft.ifft(0.5 * z.real + 1j * z.imag * x, norm="forward")
    h = np.fft.rfft(x + back.real)
    smooth = np.fft.irfft(h.real * _LOW_PASS + 1j * h.imag, n=8, norm="forward")
    return smooth + back.imag * y


SPECS = [
    OpSpec("fft_pairs", _pairs, args(normal(3, 8), normal(3, 8)), ops=("fft_pairs", "rfft_pairs", "irfft_pairs"),
           numpy_fn=_pairs_numpy),
]
