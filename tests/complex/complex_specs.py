"""The table of complex op specs: each a function written with NumPy's names (so the
same code is NumPy's reference on arrays and gradtape's on Tensors) and inputs away
from branch cuts and poles.

Each spec's arguments are complex128 arrays (tests cast them to complex64);
`real_args` marks the positions given real float64 arrays instead (mixing real
and complex operands, as promotion allows).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np


@dataclasses.dataclass
class ComplexSpec:
    name: str
    fn: Callable  # f(*arrays) written with numpy functions and operators
    shapes: tuple  # one shape per argument
    center: complex = 0.0  # inputs: center + (normal + i normal) * scale
    scale: float = 0.5
    real_args: tuple = ()  # argument positions that are real float64
    order: int = 3  # derivative orders checked by finite differences

    def __str__(self):
        return self.name

    def args(self, rng, dtype=np.complex128) -> list:
        out = []
        for k, shape in enumerate(self.shapes):
            re, im = rng.standard_normal(shape), rng.standard_normal(shape)
            if k in self.real_args:
                out.append((self.center.real + self.scale * re).astype(np.finfo(dtype).dtype))
            else:
                out.append((self.center + self.scale * (re + 1j * im)).astype(dtype))
        return out


def _unary(name, fn, center=0.0, scale=0.5, order=3):
    return ComplexSpec(name, fn, ((2, 3),), center, scale, order=order)


UNARY = [
    _unary("negative", np.negative),
    _unary("exp", np.exp),
    _unary("log", np.log, center=2.0),
    _unary("log1p", np.log1p, center=1.0),
    _unary("expm1", np.expm1),
    _unary("sqrt", np.sqrt, center=2.0),
    _unary("sin", np.sin),
    _unary("cos", np.cos),
    _unary("tan", np.tan, scale=0.3),
    _unary("tanh", np.tanh, scale=0.3),
    _unary("sinh", np.sinh),
    _unary("cosh", np.cosh),
    _unary("arcsin", np.arcsin, scale=0.3),
    _unary("arccos", np.arccos, scale=0.3),
    _unary("arctan", np.arctan, scale=0.3),
    _unary("arctanh", np.arctanh, scale=0.3),
    _unary("arccosh", np.arccosh, center=2.5),
    _unary("arcsinh", np.arcsinh, scale=0.3),
    _unary("log2", np.log2, center=2.0),
    _unary("log10", np.log10, center=2.0),
    _unary("exp2", np.exp2),
    _unary("conj", np.conj),
    _unary("square_by_mul", lambda z: z * z),
    _unary("reciprocal", lambda z: 1.0 / z, center=2.0),
    _unary("power_real_exponent", lambda z: z ** 2.5, center=2.0),
    _unary("power_int_exponent", lambda z: z ** 3),
    _unary("power_complex_exponent", lambda z: z ** (0.5 + 0.25j), center=2.0),
    _unary("abs", np.abs, center=1.0 + 1.0j),
    _unary("real", np.real),
    _unary("imag", np.imag),
    _unary("angle", np.angle, center=1.0 + 1.0j),
    _unary("abs_squared", lambda z: np.abs(z) ** 2),
    _unary("z_times_abs", lambda z: z * np.abs(z), center=1.0 + 1.0j),
    _unary("times_i", lambda z: z * 1j),
    _unary("plus_complex_scalar", lambda z: z + (2.0 - 1.0j)),
]

BINARY = [
    ComplexSpec("add", np.add, ((2, 3), (2, 3))),
    ComplexSpec("subtract_broadcast", np.subtract, ((2, 3), (3,))),
    ComplexSpec("multiply", np.multiply, ((2, 3), (2, 3))),
    ComplexSpec("divide", np.divide, ((2, 3), (2, 3)), center=1.5),
    ComplexSpec("power_both", np.power, ((2, 3), (2, 3)), center=1.5, scale=0.3),
    ComplexSpec("real_times_complex", np.multiply, ((2, 3), (2, 3)), real_args=(0,)),
    ComplexSpec("complex_over_real", np.divide, ((2, 3), (3,)), center=1.5, real_args=(1,)),
    ComplexSpec("real_to_complex_exp", lambda x: np.exp(1j * x), ((4,),), real_args=(0,)),
    ComplexSpec("astype_complex", lambda x: x.astype(np.complex128) * (1 + 2j), ((4,),), real_args=(0,)),
]

REDUCTIONS = [
    ComplexSpec("sum", lambda z: np.sum(z, axis=1), ((3, 4),)),
    ComplexSpec("sum_all", np.sum, ((3, 4),)),
    ComplexSpec("mean", lambda z: np.mean(z, axis=0), ((3, 4),)),
    ComplexSpec("prod", lambda z: np.prod(z, axis=1), ((2, 3),), center=1.0),
]

CONTRACTIONS = [
    ComplexSpec("matmul", np.matmul, ((2, 3), (3, 4))),
    ComplexSpec("matmul_vector", np.matmul, ((3, 3), (3,))),
    ComplexSpec("dot", np.dot, ((2, 3), (3,))),
    ComplexSpec("vdot", np.vdot, ((2, 3), (2, 3))),
    ComplexSpec("vecdot", np.vecdot, ((2, 3), (3,))),
    ComplexSpec("einsum", lambda a, b: np.einsum("ij,jk->ik", a, b), ((2, 3), (3, 2))),
    ComplexSpec("tensordot", lambda a, b: np.tensordot(a, b, axes=2), ((2, 3), (2, 3))),
    ComplexSpec("outer", np.outer, ((2,), (3,))),
    ComplexSpec("real_matmul_complex", np.matmul, ((2, 3), (3, 2)), real_args=(0,)),
]

LAYOUT = [
    ComplexSpec("reshape", lambda z: np.reshape(z, (3, 2)), ((2, 3),)),
    ComplexSpec("transpose", lambda z: np.transpose(z), ((2, 3),)),
    ComplexSpec("slice", lambda z: z[:, ::2], ((2, 3),)),
    ComplexSpec("gather", lambda z: z[np.array([0, 2, 2])], ((3, 2),)),
    ComplexSpec("concatenate", lambda a, b: np.concatenate([a, b], axis=0), ((2, 3), (1, 3))),
    ComplexSpec("stack", lambda a, b: np.stack([a, b]), ((3,), (3,))),
    ComplexSpec("broadcast_to", lambda z: np.broadcast_to(z, (2, 3)), ((3,),)),
    ComplexSpec("where", lambda z: np.where(np.real(z) > 0, z, 2.0 * z), ((2, 3),), center=0.1),
    ComplexSpec("flip", lambda z: np.flip(z, axis=1), ((2, 3),)),
    ComplexSpec("pad", lambda z: np.pad(z, 1), ((2,),)),
    ComplexSpec("take", lambda z: np.take(z, np.array([1, 0]), axis=1), ((2, 3),)),
]


# NumPy functions composed of the ops above, whose complex case NumPy defines its own way
COMPOSED = [
    ComplexSpec("var", lambda z: np.var(z, axis=1), ((2, 4),)),
    ComplexSpec("std", lambda z: np.std(z), ((2, 4),), center=0.5),
    ComplexSpec("cumsum", lambda z: np.cumsum(z, axis=1), ((2, 4),)),
    ComplexSpec("cumprod", lambda z: np.cumprod(z), ((5,),), center=1.0),
    ComplexSpec("diff", lambda z: np.diff(z, axis=0), ((3, 2),)),
    ComplexSpec("convolve", np.convolve, ((4,), (3,))),
    ComplexSpec("correlate_conjugates_v", lambda a, v: np.correlate(a, v, "full"), ((4,), (3,))),
    ComplexSpec("interp_complex_values", lambda x, fp: np.interp(x, np.arange(4.0), fp), ((3,), (4,)),
                center=1.5, real_args=(0,)),
    ComplexSpec("trace", np.trace, ((3, 3),)),
    ComplexSpec("kron", np.kron, ((2,), (3,))),
    ComplexSpec("average_weighted", lambda z, w: np.average(z, axis=0, weights=w), ((3, 2), (3,)),
                center=1.0, real_args=(1,)),
    ComplexSpec("attributes", lambda z: z.real * z.imag + z.conj(), ((2, 3),)),
    ComplexSpec("sort_complex", np.sort_complex, ((2, 5),)),
    ComplexSpec("sort_complex_of_real", lambda x: np.sort_complex(x) * (1 - 2j), ((6,),), real_args=(0,)),
]

# numpy.fft (functions/fourier.py): lengths, axes and norms; real inputs for the real transforms
FFT = [
    ComplexSpec("fft", lambda z: np.fft.fft(z), ((2, 5),)),
    ComplexSpec("fft_n_axis_ortho", lambda z: np.fft.fft(z, n=7, axis=0, norm="ortho"), ((3, 4),)),
    ComplexSpec("fft_truncated", lambda z: np.fft.fft(z, n=3), ((2, 5),)),
    ComplexSpec("ifft", lambda z: np.fft.ifft(z), ((2, 6),)),
    ComplexSpec("ifft_forward_norm", lambda z: np.fft.ifft(z, n=8, norm="forward"), ((5,),)),
    ComplexSpec("fft2", lambda z: np.fft.fft2(z), ((3, 4),)),
    ComplexSpec("ifft2_s", lambda z: np.fft.ifft2(z, s=(4, 3)), ((3, 4),)),
    ComplexSpec("fftn", lambda z: np.fft.fftn(z, axes=(0, 2)), ((2, 3, 4),)),
    ComplexSpec("ifftn", lambda z: np.fft.ifftn(z), ((2, 3, 5),)),
    ComplexSpec("fft_of_real", lambda x: np.fft.fft(x), ((6,),), real_args=(0,)),
    ComplexSpec("rfft_even", lambda x: np.fft.rfft(x), ((2, 8),), real_args=(0,)),
    ComplexSpec("rfft_odd_n", lambda x: np.fft.rfft(x, n=7, axis=0), ((5, 2),), real_args=(0,)),
    ComplexSpec("rfft2_ortho", lambda x: np.fft.rfft2(x, norm="ortho"), ((4, 6),), real_args=(0,)),
    ComplexSpec("rfftn", lambda x: np.fft.rfftn(x), ((2, 3, 5),), real_args=(0,)),
    ComplexSpec("irfft_even", lambda z: np.fft.irfft(z), ((2, 5),)),
    ComplexSpec("irfft_odd_n", lambda z: np.fft.irfft(z, n=7), ((4,),)),
    ComplexSpec("irfft_padded", lambda z: np.fft.irfft(z, n=12, norm="forward"), ((3,),)),
    ComplexSpec("irfft2", lambda z: np.fft.irfft2(z), ((3, 4),)),
    ComplexSpec("irfftn_s", lambda z: np.fft.irfftn(z, s=(2, 3, 5), axes=(0, 1, 2)), ((2, 3, 3),)),
    ComplexSpec("hfft", lambda z: np.fft.hfft(z), ((4,),)),
    ComplexSpec("hfft_n_ortho", lambda z: np.fft.hfft(z, n=5, norm="ortho"), ((3, 3),)),
    ComplexSpec("ihfft", lambda x: np.fft.ihfft(x), ((6,),), real_args=(0,)),
    ComplexSpec("fftshift", lambda z: np.fft.fftshift(z), ((3, 4),)),
    ComplexSpec("ifftshift_axis", lambda z: np.fft.ifftshift(z, axes=1), ((3, 5),)),
    ComplexSpec("spectral_low_pass", lambda x: np.fft.irfft(np.fft.rfft(x) * (np.arange(5) < 3), n=8),
                ((8,),), real_args=(0,)),
    ComplexSpec("power_spectrum", lambda x: np.abs(np.fft.rfft(x)) ** 2, ((7,),), real_args=(0,)),
]


def _shifted(a, by=3.0):
    """a plus a multiple of the identity: well conditioned, distinct eigenvalues for random a."""
    return a + by * np.eye(a.shape[-1])


def _expm_by_eig(a):
    """V diag(exp(w)) V^-1: a function of A (its exponential), so independent of the phases."""
    w, v = np.linalg.eig(a)
    return np.linalg.solve(np.swapaxes(v, -1, -2), np.swapaxes(v * np.exp(w)[..., None, :], -1, -2))


# numpy.linalg of complex matrices (holomorphic: inv, solve, det; not: slogdet's parts, the
# Hermitian eigh) and the general eig: eigenvector losses are phase-invariant (docs/complex.md)
LINALG = [
    ComplexSpec("inv", lambda a: np.linalg.inv(_shifted(a)), ((3, 3),)),
    ComplexSpec("inv_stack", lambda a: np.linalg.inv(_shifted(a)), ((2, 3, 3),), order=2),
    ComplexSpec("solve", lambda a, b: np.linalg.solve(_shifted(a), b), ((3, 3), (3,))),
    ComplexSpec("solve_stack", lambda a, b: np.linalg.solve(_shifted(a), b), ((2, 3, 3), (2, 3, 2)), order=2),
    ComplexSpec("solve_real_matrix", lambda a, b: np.linalg.solve(_shifted(a), b), ((3, 3), (3,)), real_args=(0,)),
    ComplexSpec("det", lambda a: np.linalg.det(_shifted(a, 2.0)), ((3, 3),)),
    ComplexSpec("slogdet_sign", lambda a: np.linalg.slogdet(_shifted(a, 2.0)).sign, ((2, 3, 3),)),
    ComplexSpec("slogdet_logabsdet", lambda a: np.linalg.slogdet(_shifted(a, 2.0)).logabsdet, ((3, 3),)),
    ComplexSpec("cholesky", lambda a: np.linalg.cholesky(_shifted(a, 2.0)), ((3, 3),), order=2),
    ComplexSpec("cholesky_upper_stack", lambda a: np.linalg.cholesky(_shifted(a, 2.0), upper=True), ((2, 3, 3),),
                order=2),
    ComplexSpec("norm_fro", np.linalg.norm, ((3, 3),), center=0.5),
    ComplexSpec("norm_1_axis", lambda a: np.linalg.norm(a, 1, axis=1), ((3, 3),), center=0.5),
    ComplexSpec("svdvals", lambda a: np.linalg.svd(a, compute_uv=False), ((2, 3, 3),)),
    ComplexSpec("svd_tall_projectors", lambda a: (lambda u: u @ np.conj(np.swapaxes(u, -1, -2)))(
        np.linalg.svd(a, full_matrices=False).U), ((4, 3),), order=2),
    ComplexSpec("svd_wide_reassembled", lambda a: (lambda u, s, vh: (u * s ** 2) @ vh)(
        *np.linalg.svd(a, full_matrices=False)), ((2, 4),), order=2),
    ComplexSpec("svd_abs_vh", lambda a: np.abs(np.linalg.svd(a).Vh), ((3, 3),), order=2),
    ComplexSpec("qr_square", lambda a: np.linalg.qr(a).Q, ((3, 3),), order=2),
    ComplexSpec("qr_tall_r", lambda a: np.linalg.qr(a, mode="r"), ((2, 4, 3),), order=2),
    ComplexSpec("qr_wide", lambda a: (lambda q, r: q @ r[:, 2:] + r[:, :2])(*np.linalg.qr(a)), ((2, 4),), order=2),
    ComplexSpec("pinv_tall", np.linalg.pinv, ((4, 3),), order=2),
    ComplexSpec("pinv_wide_stack", np.linalg.pinv, ((2, 2, 3),), order=2),
    ComplexSpec("lstsq", lambda a, b: np.linalg.lstsq(a, b)[0], ((4, 2), (4,)), order=2),
    ComplexSpec("lstsq_residuals", lambda a, b: np.linalg.lstsq(a, b)[1], ((4, 2), (4, 2)), order=2),
    ComplexSpec("cond", lambda a: np.linalg.cond(_shifted(a, 1.0)), ((3, 3),), order=2),
    ComplexSpec("norm_2", lambda a: np.linalg.norm(a, 2), ((3, 4),)),
    ComplexSpec("norm_nuc", lambda a: np.linalg.norm(a, "nuc"), ((3, 3),)),
    ComplexSpec("eigvalsh", np.linalg.eigvalsh, ((3, 3),)),
    ComplexSpec("eigh_values_upper", lambda a: np.linalg.eigh(a, UPLO="U").eigenvalues, ((2, 3, 3),)),
    ComplexSpec("eigh_vectors", lambda a: np.abs(np.linalg.eigh(a).eigenvectors) ** 2, ((3, 3),), order=2),
    ComplexSpec("eigh_vectors_upper", lambda a: np.abs(np.linalg.eigh(a, UPLO="U").eigenvectors), ((3, 3),), order=2),
    ComplexSpec("eigvals", np.linalg.eigvals, ((3, 3),)),
    ComplexSpec("eigvals_stack", np.linalg.eigvals, ((2, 3, 3),), order=2),
    ComplexSpec("eigvals_of_real", lambda x: np.linalg.eigvals(x) + 0j, ((3, 3),), real_args=(0,)),
    ComplexSpec("eig_values", lambda a: np.linalg.eig(a).eigenvalues, ((3, 3),), order=2),
    ComplexSpec("eig_vectors", lambda a: np.abs(np.linalg.eig(a).eigenvectors) ** 2, ((3, 3),), order=2),
    ComplexSpec("eig_vectors_of_real", lambda x: np.abs(np.linalg.eig(x).eigenvectors), ((3, 3),), real_args=(0,),
                order=2),
    ComplexSpec("expm_by_eig", _expm_by_eig, ((2, 3, 3),), order=2),
    ComplexSpec("roots", lambda p: np.roots(p), ((4,),), center=1.0),
    ComplexSpec("roots_of_real", lambda p: np.roots(p) + 0j, ((4,),), center=1.0, real_args=(0,)),
]

SPECS = UNARY + BINARY + REDUCTIONS + CONTRACTIONS + LAYOUT + COMPOSED + FFT + LINALG
