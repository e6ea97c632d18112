"""NumPy's 1-D convolutions and polynomial functions on tensors: convolve,
correlate, polyval, polyadd, polysub, polymul, polyder, polyint, polydiv,
poly (from roots) and vander.

Lengths are static, so each is a fixed composition: a convolution is the
outer product of its operands summed along anti-diagonals (one matmul with
a constant 0/1 matrix), and polynomial division is long division unrolled
over the quotient's length. Coefficients run from the highest power down,
as in NumPy.
"""
from __future__ import annotations

import numpy as np

from ..tracer.numpy_dispatch import implements
from . import elementwise as ew
from ._promote import as_tensor, promote
from .complex_numbers import conj
from .shape import broadcast_to, concatenate, reshape, stack

__all__ = ["convolve", "correlate", "polyval", "polyadd", "polysub", "polymul", "polyder", "polyint", "polydiv",
           "poly", "vander"]


def _vector(name, what, x):
    x = as_tensor(x)
    if x.ndim != 1 or x.shape[0] == 0:
        raise ValueError(f"{name}: {what} must be a non-empty 1-D array, got shape {x.shape}")
    return x


def _full_convolution(a, v):
    n, m = a.shape[0], v.shape[0]
    # antidiagonal[i * m + j, i + j] = 1: the full convolution is outer(a, v) summed along i + j
    antidiagonal = np.zeros((n * m, n + m - 1), a.dtype)
    antidiagonal[np.arange(n * m), (np.arange(n)[:, None] + np.arange(m)).ravel()] = 1
    outer = ew.multiply(reshape(a, (n, 1)), reshape(v, (1, m)))
    return np.matmul(reshape(outer, (n * m,)), antidiagonal)


@implements(np.convolve)
def convolve(a, v, mode="full"):
    """The discrete linear convolution of two 1-D sequences, as numpy.convolve.

    Args:
      a, v: non-empty 1-D tensors or arrays.
      mode: 'full' (length n + m - 1), 'same' (max(n, m)) or 'valid' (max(n, m) - min(n, m) + 1).

    Returns:
      A 1-D Tensor, differentiable in both operands.

    Raises:
      ValueError: an empty or non-1-D operand, or an unknown mode.

    Example::

        >>> gradtape.convolve(gradtape.constant([1.0, 2.0, 3.0]), [0.0, 1.0, 0.5])
        Tensor([0. , 1. , 2.5, 4. , 1.5], dtype=float64)
    """
    a, v = promote(_vector("convolve", "a", a), _vector("convolve", "v", v))
    if a.dtype.kind not in "fc":
        a, v = ew.cast(a, np.float64), ew.cast(v, np.float64)
    n, m = a.shape[0], v.shape[0]
    full = _full_convolution(a, v)
    if mode == "full":
        return full
    if mode == "same":
        start = (min(n, m) - 1) // 2
        return full[start:start + max(n, m)]
    if mode == "valid":
        return full[min(n, m) - 1:max(n, m)]
    raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    """The cross-correlation of two 1-D sequences (v conjugated when complex), as numpy.correlate.

    Example::

        >>> gradtape.correlate(gradtape.constant([1.0, 2.0, 3.0]), [0.0, 1.0, 0.5])
        Tensor([3.5], dtype=float64)
    """
    a, v = _vector("correlate", "a", a), _vector("correlate", "v", v)
    if v.dtype.kind == "c":
        v = conj(v)
    full = convolve(a, v[::-1], "full")
    n, m = a.shape[0], v.shape[0]
    if mode == "full":
        return full
    if mode == "valid":
        return full[min(n, m) - 1:max(n, m)]
    if mode == "same":  # NumPy's window, which depends on which operand is longer
        start = (m - 1) // 2 if n >= m else n // 2
        return full[start:start + max(n, m)]
    raise ValueError(f"correlate: mode must be 'full', 'same' or 'valid', got {mode!r}")


@implements(np.polyval)
def polyval(p, x):
    """The polynomial with coefficients p (highest power first) at x, by Horner's rule, as numpy.polyval.

    Example::

        >>> gradtape.polyval([3.0, 0.0, 1.0], gradtape.constant(2.0))
        Tensor(13., dtype=float64)
    """
    p = as_tensor(p)
    if p.ndim != 1:
        raise ValueError(f"polyval: p must be 1-D, got shape {p.shape}")
    p, x = promote(p, x)
    out = ew.multiply(x, 0)
    for i in range(p.shape[0]):
        out = ew.add(ew.multiply(out, x), p[i])
    return out


def _aligned(name, a1, a2):
    a1, a2 = promote(_vector(name, "a1", a1), _vector(name, "a2", a2))
    n = max(a1.shape[0], a2.shape[0])
    pad = lambda t: t if t.shape[0] == n else concatenate([broadcast_to(as_tensor(0, t.dtype), (n - t.shape[0],)), t])
    return pad(a1), pad(a2)


@implements(np.polyadd)
def polyadd(a1, a2):
    """The sum of two polynomials, as numpy.polyadd.

    Example::

        >>> gradtape.polyadd(gradtape.constant([1.0, 2.0]), [1.0, 0.0, 0.0])
        Tensor([1., 1., 2.], dtype=float64)
    """
    a1, a2 = _aligned("polyadd", a1, a2)
    return ew.add(a1, a2)


@implements(np.polysub)
def polysub(a1, a2):
    """The difference of two polynomials, as numpy.polysub.

    Example::

        >>> gradtape.polysub(gradtape.constant([1.0, 2.0]), [1.0, 0.0, 0.0])
        Tensor([-1.,  1.,  2.], dtype=float64)
    """
    a1, a2 = _aligned("polysub", a1, a2)
    return ew.subtract(a1, a2)


@implements(np.polymul)
def polymul(a1, a2):
    """The product of two polynomials (their coefficients' convolution), as numpy.polymul.

    Example::

        >>> gradtape.polymul(gradtape.constant([1.0, 1.0]), [1.0, -1.0])
        Tensor([ 1.,  0., -1.], dtype=float64)
    """
    return convolve(a1, a2)


@implements(np.polyder)
def polyder(p, m=1):
    """The m-th derivative of a polynomial, as numpy.polyder.

    Example::

        >>> gradtape.polyder(gradtape.constant([1.0, 1.0, 1.0]))
        Tensor([2., 1.], dtype=float64)
    """
    p = _vector("polyder", "p", p)
    for _ in range(int(m)):
        n = p.shape[0] - 1
        if n == 0:
            return ew.multiply(p[:1], 0)
        p = ew.multiply(p[:-1], np.arange(n, 0, -1).astype(p.dtype if p.dtype.kind == "f" else np.float64))
    return p


@implements(np.polyint)
def polyint(p, m=1, k=None):
    """The m-th antiderivative of a polynomial, with integration constants k (default 0), as numpy.polyint.

    Example::

        >>> gradtape.polyint(gradtape.constant([3.0, 2.0]))
        Tensor([1.5, 2. , 0. ], dtype=float64)
    """
    p = _vector("polyint", "p", p)
    if p.dtype.kind not in "fc":
        p = ew.cast(p, np.float64)
    m = int(m)
    constants = [0.0] * m if k is None else list(np.atleast_1d(k)) if not hasattr(k, "shape") or \
        getattr(k, "ndim", 0) <= 1 else k
    if len(constants) == 1 and m > 1:
        constants = constants * m
    for i in range(m):
        n = p.shape[0]
        p = concatenate([ew.divide(p, np.arange(n, 0, -1).astype(p.dtype)),
                         reshape(as_tensor(constants[i], p.dtype), (1,))])
    return p


@implements(np.polydiv)
def polydiv(u, v):
    """(quotient, remainder) of polynomial division u / v, as numpy.polydiv.

    Long division unrolled over the quotient's length; the remainder keeps
    NumPy's length (u's minus the quotient's, at least 1).

    Example::

        >>> q, r = gradtape.polydiv(gradtape.constant([1.0, 0.0, -1.0]), [1.0, 1.0])
        >>> q.numpy(), r.numpy()
        (array([ 1., -1.]), array([0.]))
    """
    u, v = promote(_vector("polydiv", "u", u), _vector("polydiv", "v", v))
    if u.dtype.kind not in "fc":
        u, v = ew.cast(u, np.float64), ew.cast(v, np.float64)
    n, m = u.shape[0], v.shape[0]
    if n < m:
        return ew.multiply(u[:1], 0), u
    rest = [u[i] for i in range(n)]
    quotient = []
    for k in range(n - m + 1):
        q = ew.divide(rest[k], v[0])
        quotient.append(q)
        for j in range(m):
            rest[k + j] = ew.subtract(rest[k + j], ew.multiply(q, v[j]))
    remainder = stack(rest[n - m + 1:]) if m > 1 else ew.multiply(u[-1:], 0)
    return stack(quotient), remainder


@implements(np.poly)
def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (a 1-D sequence), as numpy.poly.

    Example::

        >>> gradtape.poly(gradtape.constant([1.0, 2.0]))
        Tensor([ 1., -3.,  2.], dtype=float64)
    """
    roots = as_tensor(seq_of_zeros)
    if roots.ndim != 1:
        raise ValueError(
            f"poly: gradtape takes the roots as a 1-D sequence, got shape {roots.shape} (NumPy's 2-D form "
            "takes a matrix's eigenvalues, which may be complex)")
    if roots.dtype.kind not in "fc":
        roots = ew.cast(roots, np.float64)
    coeffs = as_tensor(np.ones(1, roots.dtype))
    for i in range(roots.shape[0]):
        coeffs = convolve(coeffs, stack([as_tensor(1.0, roots.dtype), ew.negative(roots[i])]))
    return coeffs


@implements(np.vander)
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of x: columns of powers x**(N-1) ... x**0, as numpy.vander.

    Powers are running products, so the derivative is right at x = 0 too.

    Example::

        >>> gradtape.vander(gradtape.constant([2.0, 3.0]), 3)
        Tensor([[4., 2., 1.],
                [9., 3., 1.]], dtype=float64)
    """
    x = as_tensor(x)
    if x.ndim != 1:
        raise ValueError(f"vander: x must be a one-dimensional array or sequence, got shape {x.shape}")
    n = x.shape[0] if N is None else int(N)
    columns = []
    power = ew.add(ew.multiply(x, 0), 1)
    for _ in range(n):
        columns.append(power)
        power = ew.multiply(power, x)
    if not increasing:
        columns.reverse()
    return stack(columns, axis=1) if columns else reshape(ew.multiply(x, 0)[:0], (x.shape[0], 0))

