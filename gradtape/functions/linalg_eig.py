"""numpy.linalg.eig and eigvals on Tensors, and numpy.roots through them.

The op (gradtape/ir/ops/linalg_eig.py) always returns complex results; NumPy
casts them back to a real dtype when the input is real and every eigenvalue
of the stack is real. That rule depends on the values, so gradtape follows
it where the values are known (eagerly and on the tape) and returns the
complex dtype in staged functions (grad, vmap, differentiable), as JAX
always does: a loss written with np.real, np.abs or ** 2 sees the same
numbers either way. Derivatives exist where the eigenvalues are distinct;
eigenvectors have a free phase, so only losses that do not depend on it
have the derivative computed (docs/complex.md, "eig").
"""
from __future__ import annotations

import collections
import functools

import numpy as np

from ..ir.ops.linalg_eig import eig_p
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from ._promote import as_tensor, inexact_operand, shape_of
from .complex_numbers import real
from .linalg_solve import concrete, in_double, matrices
from .shape import concatenate, reshape

__all__ = ["roots"]  # eig and eigvals are public as gradtape.linalg.* (gradtape/linalg.py)

EigResult = collections.namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


@functools.cache
def _numpy_eig_can_be_real() -> bool:
    """Whether the installed NumPy's eig and eigvals give real results for real eigenvalues:
    NumPy 2.0 to 2.4 do, NumPy 2.5 always returns complex (its roots still casts)."""
    return np.linalg.eigvals(np.eye(1)).dtype.kind == "f"


def _all_real(a, w, always: bool = False) -> bool:
    """NumPy's rule: real input whose eigenvalues (the whole stack's) all have imaginary part 0,
    decided only where the values are known; for eig and eigvals only with a NumPy that casts
    them (`always`: roots, which casts in every NumPy 2)."""
    if a.dtype.kind == "c" or not (always or _numpy_eig_can_be_real()):
        return False
    values = concrete(w)
    return values is not None and bool(np.all(values.imag == 0.0))


@implements(np.linalg.eig)
@in_double(complex_ok=True)
def eig(a):
    """Eigenvalues and right eigenvectors of square matrices (numpy.linalg.eig).

    The eigenvectors are the columns, of unit norm, as LAPACK's geev returns
    them (its phase: the largest component real). Differentiable where the
    eigenvalues are distinct; the eigenvectors' derivative is the one that
    keeps the phase fixed (Im(v^H dv) = 0), so it is the derivative of
    losses that do not depend on each eigenvector's phase, such as
    ``np.abs(v)`` or ``v @ np.diag(w) @ np.linalg.inv(v)`` (docs/complex.md).

    Args:
      a: (..., n, n) real or complex Tensor or array-like.

    Returns:
      EigResult(eigenvalues (..., n), eigenvectors (..., n, n)): complex, or,
      as NumPy 2.0 to 2.4, real for real input whose eigenvalues are all real
      (only where the values are known: in staged functions they stay
      complex); with NumPy 2.5 or later, always complex, as NumPy's.

    Raises:
      numpy.linalg.LinAlgError: a is not square, holds a NaN or an infinity, or geev does not converge.

    Example::

        >>> gradtape.linalg.eig(gradtape.constant([[0.0, -1.0], [1.0, 0.0]])).eigenvalues.numpy()
        array([0.+1.j, 0.-1.j])
    """
    a = matrices("eig", a, complex_ok=True)
    packed = bind(eig_p, a, vectors=True)
    w, v = packed[..., 0, :], packed[..., 1:, :]
    if _all_real(a, w):
        return EigResult(real(w), real(v))
    return EigResult(w, v)


@implements(np.linalg.eigvals)
@in_double(complex_ok=True)
def eigvals(a):
    """The eigenvalues of square matrices (numpy.linalg.eigvals); see eig for dtypes and derivatives.

    Computed as eig's eigenvalues, so they are NumPy's eigvals to rounding (NumPy asks geev for
    the values alone, a slightly different iteration).

    Example::

        >>> gradtape.linalg.eigvals(gradtape.constant([[0.0, -2.0], [2.0, 0.0]])).numpy()
        array([0.+2.j, 0.-2.j])
    """
    return _eigenvalues("eigvals", a, always_real=False)


@in_double(complex_ok=True)
def _roots_of_companion(a):
    """eigvals of a companion matrix, real where every root is real (NumPy's roots casts them in
    every NumPy 2, also where eigvals no longer does)."""
    return _eigenvalues("roots", a, always_real=True)


def _eigenvalues(name, a, always_real: bool):
    a = matrices(name, a, complex_ok=True)
    w = bind(eig_p, a, vectors=False)
    return real(w) if _all_real(a, w, always_real) else w


def _companion(p):
    """The companion matrix whose eigenvalues are the roots of the polynomial p (NumPy's layout)."""
    n = tuple(shape_of(p))[0]
    top = reshape(-p[1:] / p[0], (1, n - 1))
    if n == 2:
        return top
    below = np.eye(n - 2, n - 1, dtype=p.dtype)
    return concatenate([top, below], axis=0)


@implements(np.roots)
def roots(p):
    """The roots of the polynomial with coefficients p, highest power first (numpy.roots).

    The eigenvalues of the companion matrix, as NumPy computes them, so they
    are differentiable with respect to the coefficients (where the roots are
    simple). Where the values are known, leading zeros are dropped and
    trailing zeros give roots 0, as in NumPy; in a staged function the
    coefficients are not known while tracing, so a leading zero raises
    LinAlgError when the function runs (the companion matrix holds an
    infinity), and a trailing zero gives a root computed as eigenvalue 0.

    Args:
      p: a 1-D real or complex Tensor or array-like.

    Returns:
      A 1-D Tensor of the roots, complex (real where NumPy gives real: see eig).

    Example::

        >>> np.sort(gradtape.roots(gradtape.constant([1.0, -3.0, 2.0])).numpy())
        array([1., 2.])
    """
    p = as_tensor(p)
    if p.ndim != 1:
        raise ValueError(f"numpy.roots: the coefficients must be a rank-1 array, got shape {tuple(p.shape)}")
    p = inexact_operand(p) if p.dtype.kind in "fc" else ew.cast(p, np.float64)
    trailing = 0
    values = concrete(p)
    if values is not None:
        nonzero = np.flatnonzero(values)
        if len(nonzero) == 0:
            return Tensor(np.array([]))
        trailing = len(values) - nonzero[-1] - 1
        p = p[int(nonzero[0]):int(nonzero[-1]) + 1]
    n = tuple(shape_of(p))[0]
    found = _roots_of_companion(_companion(p)) if n > 1 else Tensor(np.zeros(0, p.dtype))
    if trailing:
        found = concatenate([found, np.zeros(trailing, found.dtype)])
    return found
