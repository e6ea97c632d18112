"""The array API's linalg extension, on gradtape.linalg (every function differentiable where defined)."""
from __future__ import annotations

import collections

import numpy as np

from .. import functions as gt
from .. import linalg as gl
from ..functions._promote import as_tensor

EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = collections.namedtuple("QRResult", ["Q", "R"])
SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])

det, inv, matrix_power, pinv_ = gl.det, gl.inv, gl.matrix_power, gl.pinv
matmul, matrix_transpose = gt.matmul, gt.matrix_transpose


def cholesky(x, /, *, upper=False):
    """The Cholesky factor of each symmetric positive-definite matrix (upper: its transpose)."""
    lower = gl.cholesky(x)
    return gt.matrix_transpose(lower) if upper else lower


def cross(x1, x2, /, *, axis=-1):
    """Cross products of 3-vectors along `axis` (the other axes broadcast)."""
    return gt.cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset=0):
    """The `offset` diagonal of each matrix (the last two axes)."""
    return gt.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def eigh(x, /):
    """Eigenvalues (ascending) and eigenvectors of each symmetric matrix."""
    return EighResult(*gl.eigh(x))


def eigvalsh(x, /):
    """Eigenvalues (ascending) of each symmetric matrix."""
    return gl.eigvalsh(x)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    """The norm `ord` of each matrix (the last two axes)."""
    return gl.norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    """The vector norm `ord` over `axis` (None: every element; a tuple: those axes together)."""
    x = as_tensor(x)
    if axis is None:
        out = gl.norm(gt.reshape(x, (-1,)), ord=ord)
        return gt.reshape(out, (1,) * x.ndim) if keepdims else out
    if isinstance(axis, tuple) and len(axis) != 1:
        axes = tuple(a % x.ndim for a in axis)
        rest = [a for a in range(x.ndim) if a not in axes]
        moved = gt.transpose(x, (*rest, *axes))
        flat = gt.reshape(moved, tuple(x.shape[a] for a in rest) + (-1,))
        out = gl.norm(flat, ord=ord, axis=-1)
        if keepdims:
            out = gt.reshape(out, tuple(1 if a in axes else x.shape[a] for a in range(x.ndim)))
        return out
    axis = axis[0] if isinstance(axis, tuple) else axis
    return gl.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def matrix_rank(x, /, *, rtol=None):
    """The rank of each matrix: singular values above rtol times the largest (no derivative)."""
    s = svdvals(x)
    x = as_tensor(x)
    if rtol is None:
        rtol = max(x.shape[-2:]) * np.finfo(x.dtype).eps
    rtol = as_tensor(rtol)
    if rtol.ndim:
        rtol = gt.expand_dims(rtol, -1)
    return gt.count_nonzero(gt.greater(s, rtol * gt.max(s, axis=-1, keepdims=True)), axis=-1)


def outer(x1, x2, /):
    """The outer product of two vectors."""
    return gt.outer(x1, x2)


def pinv(x, /, *, rtol=None):
    """The pseudo-inverse of each matrix, singular values below rtol times the largest dropped."""
    return gl.pinv(x) if rtol is None else gl.pinv(x, rcond=rtol)


def qr(x, /, *, mode="reduced"):
    """Q and R of each matrix."""
    return QRResult(*gl.qr(x, mode=mode))


def slogdet(x, /):
    """The sign and log of |det| of each matrix."""
    return SlogdetResult(*gl.slogdet(x))


def solve(x1, x2, /):
    """The solution of x1 @ y = x2 (x2 a vector only if it is 1-d)."""
    return gl.solve(x1, x2)


def svd(x, /, *, full_matrices=True):
    """U, S and Vh of each matrix."""
    return SVDResult(*gl.svd(x, full_matrices=full_matrices))


def svdvals(x, /):
    """The singular values of each matrix, descending."""
    return gl.svdvals(x)


def tensordot(x1, x2, /, *, axes=2):
    """Sums of products over `axes`."""
    return gt.tensordot(x1, x2, axes=axes)


def trace(x, /, *, offset=0, dtype=None):
    """The sum of each matrix's `offset` diagonal (the last two axes)."""
    return gt.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def vecdot(x1, x2, /, *, axis=-1):
    """Dot products along `axis`."""
    return gt.vecdot(x1, x2, axis=axis)


del pinv_
