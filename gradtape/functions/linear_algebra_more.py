"""numpy.linalg's array-API functions (NumPy 2) and numpy.cross on tensors:
linalg.matmul, outer, tensordot, trace, diagonal, cross, vector_norm,
matrix_norm, svdvals, cond, tensorinv, tensorsolve, and numpy.cross.

Each calls the NumPy function it is defined by (np.matmul, np.linalg.norm,
np.linalg.svd, ...) on the tensor, so it runs gradtape's implementation of
that function through NumPy's dispatch: the derivatives are theirs.
"""
from __future__ import annotations

import math

import numpy as np

from ..tracer.numpy_dispatch import implements
from . import elementwise as ew
from . import predicates, reductions
from ._promote import as_tensor, promote
from .shape import moveaxis, reshape, stack

__all__ = ["cross"]  # the numpy.linalg functions here are reached through np.linalg.* on tensors


@implements(np.linalg.matmul)
def _linalg_matmul(x1, x2, /):
    return np.matmul(as_tensor(x1), x2)


@implements(np.linalg.outer)
def _linalg_outer(x1, x2, /):
    x1, x2 = as_tensor(x1), as_tensor(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"linalg.outer: input arrays must be one-dimensional, got shapes {x1.shape} and {x2.shape}")
    return np.outer(x1, x2)


@implements(np.linalg.tensordot)
def _linalg_tensordot(x1, x2, /, *, axes=2):
    return np.tensordot(as_tensor(x1), x2, axes=axes)


@implements(np.linalg.trace)
def _linalg_trace(x, /, *, offset=0, dtype=None):
    return np.trace(as_tensor(x), offset=offset, axis1=-2, axis2=-1, dtype=dtype)


@implements(np.linalg.diagonal)
def _linalg_diagonal(x, /, *, offset=0):
    return np.diagonal(as_tensor(x), offset=offset, axis1=-2, axis2=-1)


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors (or the z component for 2-vectors) along the given axes, as numpy.cross.

    Example::

        >>> gradtape.cross(gradtape.constant([1.0, 0.0, 0.0]), [0.0, 1.0, 0.0])
        Tensor([0., 0., 1.], dtype=float64)
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote(a, b)
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must be 2 or 3), "
                         f"got shapes {a.shape} and {b.shape}")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return ew.subtract(ew.multiply(a[..., 0], b[..., 1]), ew.multiply(a[..., 1], b[..., 0]))
    pad = lambda t: t if t.shape[-1] == 3 else np.concatenate([t, ew.multiply(t[..., :1], 0)], axis=-1)
    a, b = pad(a), pad(b)
    c = stack([ew.subtract(ew.multiply(a[..., 1], b[..., 2]), ew.multiply(a[..., 2], b[..., 1])),
               ew.subtract(ew.multiply(a[..., 2], b[..., 0]), ew.multiply(a[..., 0], b[..., 2])),
               ew.subtract(ew.multiply(a[..., 0], b[..., 1]), ew.multiply(a[..., 1], b[..., 0]))], axis=-1)
    return moveaxis(c, -1, axisc)


@implements(np.linalg.cross)
def _linalg_cross(x1, x2, /, *, axis=-1):
    x1, x2 = as_tensor(x1), as_tensor(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"linalg.cross: both input arrays must be (arrays of) 3-dimensional vectors, "
                         f"got shapes {x1.shape} and {x2.shape}")
    return cross(x1, x2, axis=axis)


@implements(np.linalg.vector_norm)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The vector ord-norm of x over axis (all elements if None), as numpy.linalg.vector_norm.

    Example::

        >>> np.linalg.vector_norm(gradtape.constant([3.0, -4.0]))
        Tensor(5., dtype=float64)
    """
    x = as_tensor(x)
    if x.dtype.kind == "c":
        x = ew.abs(x)  # every norm of complex numbers is that of their absolute values
    if x.dtype.kind != "f":
        x = ew.cast(x, np.float64)
    if axis is None:
        flat = reshape(x, (-1,))
        out = vector_norm(flat, axis=0, ord=ord)
        return reshape(out, (1,) * x.ndim) if keepdims else out
    if ord == 2:
        return ew.sqrt(reductions.sum(ew.multiply(x, x), axis=axis, keepdims=keepdims))
    magnitude = ew.abs(x)
    if ord == math.inf:
        return reductions.max(magnitude, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return reductions.min(magnitude, axis=axis, keepdims=keepdims)
    if ord == 0:
        return reductions.sum(ew.cast(ew.not_equal(x, 0), x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return reductions.sum(magnitude, axis=axis, keepdims=keepdims)
    return ew.power(reductions.sum(ew.power(magnitude, float(ord)), axis=axis, keepdims=keepdims), 1.0 / ord)


@implements(np.linalg.matrix_norm)
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The matrix norm over the last two axes, as numpy.linalg.matrix_norm (numpy.linalg.norm's).

    Example::

        >>> np.linalg.matrix_norm(gradtape.constant([[3.0, 0.0], [0.0, 4.0]]))
        Tensor(5., dtype=float64)
    """
    return np.linalg.norm(as_tensor(x), ord=ord, axis=(-2, -1), keepdims=keepdims)


@implements(np.linalg.svdvals)
def svdvals(x, /):
    """The singular values of the matrices in x, descending, as numpy.linalg.svdvals.

    Example::

        >>> np.linalg.svdvals(gradtape.constant([[3.0, 0.0], [0.0, -4.0]]))
        Tensor([4., 3.], dtype=float64)
    """
    return np.linalg.svd(as_tensor(x), compute_uv=False)


@implements(np.linalg.cond)
def cond(x, p=None):
    """The condition number of x, as numpy.linalg.cond: the ratio of extreme
    singular values for p None, 2 or -2, else norm(x, p) * norm(inv(x), p).

    As in NumPy, a singular matrix gives inf (never LinAlgError), and so does
    any matrix whose condition number is NaN without a NaN entry; a matrix
    with a NaN gives NaN and one with an infinity inf, for every p (NumPy 2.5's
    rule, kept on older NumPy too, where some p raised LinAlgError).

    Example::

        >>> np.linalg.cond(gradtape.constant([[2.0, 0.0], [0.0, 0.5]]))
        Tensor(4., dtype=float64)
    """
    x = as_tensor(x)
    # A matrix with a NaN or an inf gets NaN here (inf below unless it has a NaN): it is replaced
    # by eye(m, n) first, which every p can take, as the SVD refuses non-finite input.
    bad = ew.logical_not(predicates.all(predicates.isfinite(x), axis=(-2, -1)))
    x_safe = ew.where(bad[..., None, None], np.eye(*x.shape[-2:], dtype=x.dtype), x)
    r = _finite_cond(x_safe, p)
    r = ew.where(bad, np.nan, r)
    # As NumPy: a NaN condition number (of an infinite entry, say) is inf, unless x has a NaN
    blown = ew.logical_and(predicates.isnan(r), ew.logical_not(predicates.any(predicates.isnan(x), axis=(-2, -1))))
    return ew.where(blown, np.inf, r)


def _finite_cond(x, p):
    """cond(x, p) of matrices without NaN or inf: NaN where NumPy's formula gives NaN."""
    if p is None or p in (2, -2):
        s = svdvals(x)
        big, small = reductions.max(s, axis=-1), reductions.min(s, axis=-1)
        r = ew.divide(small, big) if p == -2 else ew.divide(big, small)
    else:
        # NumPy inverts without raising: an exactly singular matrix (a zero pivot, where slogdet's
        # sign is 0) gets a NaN inverse, hence inf in cond. Here it is inverted as the identity instead.
        singular = ew.equal(np.linalg.slogdet(x)[0], 0.0)[..., None, None]
        safe = ew.where(singular, np.eye(x.shape[-1], dtype=x.dtype), x)
        inverse = ew.where(singular, np.nan, np.linalg.inv(safe))
        r = ew.multiply(np.linalg.norm(x, ord=p, axis=(-2, -1)), np.linalg.norm(inverse, ord=p, axis=(-2, -1)))
    return r


@implements(np.linalg.tensorinv)
def tensorinv(a, ind=2):
    """The inverse of a with respect to np.tensordot(., ., ind), as numpy.linalg.tensorinv.

    Example::

        >>> np.linalg.tensorinv(gradtape.constant(np.eye(4).reshape(4, 2, 2)), ind=1).shape
        (2, 2, 4)
    """
    a = as_tensor(a)
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    out_shape, in_shape = a.shape[ind:], a.shape[:ind]
    rows = math.prod(in_shape)
    inverse = np.linalg.inv(reshape(a, (rows, -1)))
    return reshape(inverse, out_shape + in_shape)




@implements(np.linalg.tensorsolve)
def tensorsolve(a, b, axes=None):
    """x with np.tensordot(a, x, x.ndim) == b, as numpy.linalg.tensorsolve: a solve of a reshaped
    to a square matrix (so its derivatives are solve's).

    Example::

        >>> np.linalg.tensorsolve(gradtape.constant(2.0 * np.eye(4).reshape(2, 2, 4)), np.ones((2, 2))).shape
        (4,)
    """
    a, b = as_tensor(a), as_tensor(b)
    if axes is not None:  # those axes of a go last, in order
        last = [ax % a.ndim for ax in axes]
        a = moveaxis(a, last, list(range(a.ndim - len(last), a.ndim)))
    x_shape = a.shape[b.ndim:]
    rows, cols = math.prod(a.shape[:b.ndim]), math.prod(x_shape)
    if rows != cols:
        raise np.linalg.LinAlgError(
            f"tensorsolve: a's first {b.ndim} axes (b's shape {b.shape}) and the rest {x_shape} must "
            f"have the same number of elements, {rows} != {cols}")
    return reshape(np.linalg.solve(reshape(a, (rows, cols)), reshape(b, (rows,))), x_shape)
