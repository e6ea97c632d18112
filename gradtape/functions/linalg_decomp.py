"""numpy.linalg's decompositions on Tensors: eigh, eigvalsh, svd, svdvals, qr.

Each op (gradtape/ir/ops/linalg_decomp.py) returns its results packed in
one tensor; these functions slice them apart and return NumPy's named
tuples' fields. Derivatives where they do not exist (repeated eigenvalues
or singular values coupled by the loss) are NaN, documented in docs/numpy.md.
"""
from __future__ import annotations

import collections

import numpy as np

from ..ir.ops.linalg_decomp import eigh_p, qr_p, qr_sizes, svd_p, svd_sizes
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ._promote import shape_of
from .complex_numbers import real
from .linalg_solve import in_double, matrices
from .shape import reshape

__all__: list = []  # public as gradtape.linalg.* (gradtape/linalg.py), as in NumPy

EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = collections.namedtuple("QRResult", ["Q", "R"])


def _eigh(name, a, UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError(f"numpy.linalg.{name}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return bind(eigh_p, matrices(name, a, complex_ok=True), uplo=UPLO, vectors=name == "eigh")


@implements(np.linalg.eigh)
@in_double(complex_ok=True)
def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices (numpy.linalg.eigh).

    Reads one triangle of `a`, as NumPy does, so the gradient is zero in the
    other (for complex, Hermitian `a`: and in the diagonal's imaginary part,
    docs/complex.md). The eigenvectors' derivative divides by eigenvalue gaps: it is NaN
    where two eigenvalues are equal and the loss depends on how their
    eigenvectors turn (docs/numpy.md); eigenvalue losses are always finite.

    Args:
      a: (..., n, n) Tensor or array-like.
      UPLO: 'L' (read the lower triangle) or 'U' (the upper one); either way
        the eigenvectors are NumPy's, signs included.

    Returns:
      EighResult(eigenvalues (..., n), eigenvectors (..., n, n), as columns).

    Raises:
      numpy.linalg.LinAlgError: a is not square, or the iteration does not converge.

    Example::

        >>> gradtape.linalg.eigh(gradtape.constant([[2.0, 0.0], [0.0, 1.0]])).eigenvalues.numpy()
        array([1., 2.])
    """
    packed = _eigh("eigh", a, UPLO)
    w = packed[..., 0, :]
    return EighResult(real(w) if w.dtype.kind == "c" else w, packed[..., 1:, :])


@implements(np.linalg.eigvalsh)
@in_double(complex_ok=True)
def eigvalsh(a, UPLO="L"):
    """The eigenvalues of symmetric matrices, ascending (numpy.linalg.eigvalsh); see eigh.

    Computed as NumPy computes them, without the eigenvectors (LAPACK's JOBZ='N'): the same
    values, and LinAlgError for an infinity, where eigh gives NaNs. The derivatives compute the
    eigenvectors.

    Example::

        >>> gradtape.linalg.eigvalsh(gradtape.constant([[2.0, 1.0], [1.0, 2.0]])).numpy()
        array([1., 3.])
    """
    w = _eigh("eigvalsh", a, UPLO)
    return real(w) if w.dtype.kind == "c" else w


def _unpack_svd(packed, m, n, full_matrices):
    u, k, v = svd_sizes(m, n, full_matrices)
    batch = tuple(shape_of(packed))[:-1]
    s = packed[..., m * u:m * u + k]
    return (reshape(packed[..., :m * u], batch + (m, u)),
            real(s) if s.dtype.kind == "c" else s,   # a complex matrix's singular values are real
            reshape(packed[..., m * u + k:], batch + (v, n)))


@in_double(complex_ok=True)
def singular_values(a):
    """The singular values of each matrix of `a` (descending), differentiable."""
    a = matrices("svd", a, square=False, complex_ok=True)
    m, n = tuple(shape_of(a))[-2:]
    return _unpack_svd(bind(svd_p, a, full_matrices=False), m, n, False)[1]


@implements(np.linalg.svd)
@in_double(complex_ok=True)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition `a = U @ diag(S) @ Vh` (numpy.linalg.svd).

    Derivatives of `S` always exist (NaN only with repeated singular values
    that the loss couples through U or Vh); those of `U` and `Vh` need
    `full_matrices=False` for a non-square matrix (the extra columns of the
    full U or Vh are an arbitrary basis; NotImplementedError otherwise).
    Complex matrices give real `S` and complex `U`, `Vh`; each pair of singular
    vectors has a free phase, so their derivative is that of losses that do
    not depend on it (docs/complex.md).

    Args:
      a: (..., m, n) Tensor or array-like.
      full_matrices: U (m, m) and Vh (n, n), or the reduced (m, k) and (k, n).
      compute_uv: False returns S only.
      hermitian: accepted for compatibility; the general SVD is used.

    Returns:
      SVDResult(U, S, Vh), or S when compute_uv is False.

    Raises:
      numpy.linalg.LinAlgError: a is not at least 2-D, or the SVD does not converge.

    Example::

        >>> gradtape.linalg.svd(gradtape.constant([[3.0, 0.0], [0.0, -2.0]])).S.numpy()
        array([3., 2.])
    """
    if not compute_uv:
        return singular_values(a)
    a = matrices("svd", a, square=False, complex_ok=True)
    m, n = tuple(shape_of(a))[-2:]
    full = bool(full_matrices)  # square: the same shapes, but ?gesdd's job 'A' as NumPy calls it
    return SVDResult(*_unpack_svd(bind(svd_p, a, full_matrices=full), m, n, full))


if hasattr(np.linalg, "svdvals"):
    svdvals = implements(np.linalg.svdvals)(lambda x, /: singular_values(x))
    svdvals.__doc__ = "The singular values, descending (numpy.linalg.svdvals); see svd."
else:  # NumPy < 2
    def svdvals(x, /):
        """The singular values, descending (numpy.linalg.svdvals); see svd."""
        return singular_values(x)


@implements(np.linalg.qr)
@in_double(complex_ok=True)
def qr(a, mode="reduced"):
    """QR decomposition `a = Q @ R` (numpy.linalg.qr), for matrices and stacks.

    Derivatives are implemented for mode 'reduced' (and 'r'), for tall,
    square and wide matrices (R's leading square block invertible; a wide
    A = [X | Y] is differentiated through X's QR and R's block Q^T Y);
    mode 'complete' of a tall matrix raises NotImplementedError when
    differentiated.

    Args:
      a: (..., m, n) Tensor or array-like.
      mode: 'reduced', 'complete' or 'r' ('raw' is not supported).

    Returns:
      QRResult(Q, R), or R for mode 'r'.

    Raises:
      numpy.linalg.LinAlgError: a is not at least 2-D.
      ValueError: an unknown mode.

    Example::

        >>> q, r = gradtape.linalg.qr(gradtape.constant([[3.0], [4.0]]))
        >>> abs(r.numpy())
        array([[5.]])
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"numpy.linalg.qr: mode {mode!r} is not supported; use 'reduced', 'complete' or 'r'")
    a = matrices("qr", a, square=False, complex_ok=True)
    m, n = tuple(shape_of(a))[-2:]
    complete = mode == "complete" and m > n
    q = qr_sizes(m, n, complete)
    packed = bind(qr_p, a, complete=complete)
    batch = tuple(shape_of(packed))[:-1]
    r = reshape(packed[..., m * q:], batch + (q, n))
    if mode == "r":
        return r
    return QRResult(reshape(packed[..., :m * q], batch + (m, q)), r)
