"""numpy.linalg's solves and their relatives on Tensors: solve, inv, det, slogdet,
cholesky, pinv, lstsq, matrix_power, multi_dot.

Each works on a matrix or a stack of matrices (the last two axes), through
`np.linalg.solve(t, ...)` and as `gradtape.linalg.solve(...)`, on the tape
and in staged functions. Three ops do the work (gradtape/ir/ops/linalg.py:
solve, slogdet, cholesky, pinv); the rest are compositions: `inv(a)` is
`solve(a, I)`, `det` is `sign * exp(logabsdet)`, `lstsq` is `pinv(a) @ b`.
Errors are numpy's: `np.linalg.LinAlgError` for a singular, non-square or
not positive-definite matrix, naming the function and the shape.
"""
from __future__ import annotations

import collections
import functools

import numpy as np

from ..ir.ops.linalg import cholesky_p, pinv_p, slogdet_p, solve_p
from ..tracer.dispatch import bind
from ..tracer.errors import ConcretizationError
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import elementwise as ew
from . import predicates, reductions
from ._promote import convert, float_operand, inexact_operand, promote, promote_float, refuse_complex, shape_of
from .complex_numbers import conj, real
from .linalg import _singular_values, matmul
from .shape import broadcast_to, reshape, swapaxes

__all__: list = []  # public as gradtape.linalg.* (gradtape/linalg.py), as in NumPy

SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])
LstsqResult = collections.namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])


def in_double(n_arrays: int = 1, complex_ok: bool = False):
    """Compute in float64 (complex128) and return the input's narrower dtype, as numpy.linalg does.

    NumPy computes every numpy.linalg function in double precision and casts
    the results back to single precision for float32 or complex64 input; so
    its rounding, and its cutoffs for the rank (pinv, lstsq), are double's.
    The decorated function receives its first `n_arrays` arguments as
    float64 (complex128 when one is complex) and its float and complex
    results are cast back to single precision when the input was single
    (a derivative flows through the casts). Functions without `complex_ok`
    refuse complex input with a TypeError naming them.
    """
    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            if not complex_ok:
                refuse_complex(fn.__name__, *args[:n_arrays])
            head = [(inexact_operand if complex_ok else float_operand)(x) for x in args[:n_arrays]]
            dtype = np.result_type(*[x.dtype for x in head])
            double = np.dtype(np.complex128 if dtype.kind == "c" else np.float64)
            if dtype == double:
                return fn(*head, *args[n_arrays:], **kwargs)
            return _narrowed(fn(*[convert(x, double) for x in head], *args[n_arrays:], **kwargs), dtype)
        return run
    return wrap


def _narrowed(result, dtype):
    """result's float64 parts as the real dtype of `dtype` (the input's), complex128 as its complex one."""
    if isinstance(result, tuple):
        items = [_narrowed(r, dtype) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    if isinstance(result, (Tensor, np.ndarray)) and result.dtype.kind in "fc" and result.dtype.itemsize in (8, 16):
        real = np.finfo(dtype).dtype
        return convert(result, real if result.dtype.kind == "f" else np.result_type(real, np.complex64))
    return result


def matrices(name: str, a, square: bool = True, complex_ok: bool = False):
    """`a` as a float (or, with complex_ok, complex) stack of matrices, or numpy's LinAlgError
    naming `name` and the shape."""
    a = inexact_operand(a) if complex_ok else float_operand(a)
    shape = tuple(shape_of(a))
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"numpy.linalg.{name}: {len(shape)}-dimensional array given (shape {shape}); the array must "
            "be at least two-dimensional (a matrix or a stack of matrices)")
    if square and shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError(
            f"numpy.linalg.{name}: the last two dimensions of the array must be square, got shape {shape}")
    return a


def mT(x):
    return swapaxes(x, -1, -2)


def _mH(x):
    return conj(mT(x)) if x.dtype.kind == "c" else mT(x)


def concrete(x):
    """x's value when it has one (eagerly, on a tape), None in a staged function."""
    if not isinstance(x, Tensor):
        return np.asarray(x)
    try:
        return x.numpy()
    except ConcretizationError:
        return None


@implements(np.linalg.solve)
@in_double(2, complex_ok=True)
def solve(a, b):
    """Solve `a @ x = b` for x (numpy.linalg.solve), differentiable in a and b.

    As NumPy 2: a 1-D `b` is one vector (for every matrix of a stack), any
    other `b` a (stack of) matrices of right-hand sides; batch axes broadcast.
    The derivatives are solves with a^T, never an inverse.

    Args:
      a: (..., n, n) Tensor or array-like.
      b: (n,) or (..., n, k).

    Returns:
      x, of b's shape (broadcast with a's batch).

    Raises:
      numpy.linalg.LinAlgError: a matrix is singular or not square.
      ValueError: b's shape does not fit a's.

    Example::

        >>> gradtape.linalg.solve(gradtape.constant([[2.0, 0.0], [0.0, 4.0]]), [1.0, 1.0]).numpy()
        array([0.5 , 0.25])
    """
    a, b = promote_float(a, b)
    a = matrices("solve", a, complex_ok=True)
    sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
    n = sa[-1]
    vector = len(sb) == 1
    if vector:
        b = reshape(b, (n, 1)) if sb[0] == n else b
    sb2 = tuple(shape_of(b))
    if len(sb2) < 2 or sb2[-2] != n:
        raise ValueError(f"numpy.linalg.solve: b of shape {sb} does not fit a of shape {sa}: b needs {n} rows "
                         f"(shape ({n},) or (..., {n}, k))")
    try:
        batch = np.broadcast_shapes(sa[:-2], sb2[:-2])
    except ValueError:
        raise ValueError(f"numpy.linalg.solve: the batch axes of a {sa} and b {sb} do not broadcast") from None
    a = broadcast_to(a, batch + sa[-2:]) if sa[:-2] != batch else a
    b = broadcast_to(b, batch + sb2[-2:]) if sb2[:-2] != batch else b
    x = bind(solve_p, a, b, name="solve")
    return x[..., 0] if vector else x


@implements(np.linalg.inv)
@in_double(1, complex_ok=True)
def inv(a):
    """The inverse of a matrix or of each matrix of a stack (numpy.linalg.inv).

    A solve against the identity, as NumPy computes it; its derivative
    `-inv(a)^T @ g @ inv(a)^T` is computed with solves.

    Args:
      a: (..., n, n) Tensor or array-like.

    Returns:
      A Tensor of a's shape.

    Raises:
      numpy.linalg.LinAlgError: a matrix is singular or not square.

    Example::

        >>> gradtape.linalg.inv(gradtape.constant([[2.0, 0.0], [0.0, 4.0]])).numpy()
        array([[0.5 , 0.  ],
               [0.  , 0.25]])
    """
    a = matrices("inv", a, complex_ok=True)
    shape = tuple(shape_of(a))
    eye = np.broadcast_to(np.eye(shape[-1], dtype=a.dtype), shape)
    return bind(solve_p, a, eye, name="inv")


@implements(np.linalg.slogdet)
@in_double(1, complex_ok=True)
def slogdet(a):
    """Sign and natural log of the absolute determinant (numpy.linalg.slogdet).

    The gradient of `logabsdet` is `inv(a)^T` (a solve against the identity);
    `sign` has none. At a singular matrix sign is 0 and logabsdet -inf, as in
    NumPy, and the gradient raises LinAlgError (it does not exist).

    Args:
      a: (..., n, n) Tensor or array-like.

    Returns:
      SlogdetResult(sign, logabsdet), each of shape ``a.shape[:-2]``.

    Raises:
      numpy.linalg.LinAlgError: a is not square.

    Example::

        >>> gradtape.linalg.slogdet(gradtape.constant([[2.0, 0.0], [0.0, -4.0]])).logabsdet.numpy()
        array(2.07944154)
    """
    a = matrices("slogdet", a, complex_ok=True)
    packed = bind(slogdet_p, a)
    logabsdet = packed[..., 1]
    return SlogdetResult(packed[..., 0], real(logabsdet) if a.dtype.kind == "c" else logabsdet)


@implements(np.linalg.det)
@in_double(1, complex_ok=True)
def det(a):
    """The determinant (numpy.linalg.det), as `sign * exp(logabsdet)`.

    Its gradient is `det(a) * inv(a)^T`; at a singular matrix the determinant
    is 0 and the gradient raises LinAlgError (see docs/numpy.md).

    Args:
      a: (..., n, n) Tensor or array-like.

    Returns:
      A Tensor of shape ``a.shape[:-2]``.

    Raises:
      numpy.linalg.LinAlgError: a is not square.

    Example::

        >>> gradtape.linalg.det(gradtape.constant([[2.0, 1.0], [1.0, 3.0]])).numpy()
        array(5.)
    """
    sign, logabsdet = slogdet(matrices("det", a, complex_ok=True))
    return sign * ew.exp(logabsdet)


@implements(np.linalg.cholesky)
@in_double(1, complex_ok=True)
def cholesky(a, /, *, upper=False):
    """The Cholesky factor of a symmetric positive-definite matrix (numpy.linalg.cholesky).

    Like NumPy it reads only the lower triangle of `a` (the upper one with
    `upper=True`), so the gradient is zero in the other triangle.

    Args:
      a: (..., n, n) Tensor or array-like.
      upper: return the upper factor U (a = U^T U) instead of L (a = L L^T).

    Returns:
      A Tensor of a's shape, triangular.

    Raises:
      numpy.linalg.LinAlgError: a matrix is not positive definite, or not square.

    Example::

        >>> gradtape.linalg.cholesky(gradtape.constant([[4.0, 2.0], [2.0, 5.0]])).numpy()
        array([[2., 0.],
               [1., 2.]])
    """
    a = matrices("cholesky", a, complex_ok=True)
    if upper:  # U = L^H of the Hermitian matrix read from the upper triangle
        return _mH(bind(cholesky_p, _mH(a)))
    return bind(cholesky_p, a)


def _pinv_rcond(a, rcond, rtol, default):
    if rcond is not None and rtol is not np._NoValue:
        raise ValueError("numpy.linalg.pinv: `rtol` and `rcond` can't be both set")
    if rcond is None:
        if rtol is np._NoValue:
            return default
        if rtol is None:
            return max(shape_of(a)[-2:]) * np.finfo(a.dtype).eps
        rcond = rtol
    if np.ndim(rcond) != 0:
        raise NotImplementedError(
            f"numpy.linalg.pinv: one rcond per matrix (got shape {np.shape(rcond)}) is not supported; "
            "pass one number")
    return float(rcond)


@implements(np.linalg.pinv)
@in_double(1, complex_ok=True)
def pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    """The Moore-Penrose pseudo-inverse (numpy.linalg.pinv).

    Singular values at or below `rcond * max(s)` count as zero, as in NumPy.
    The derivative (Golub and Pereyra's) holds where the rank is constant: at
    a rank-deficient matrix it is the derivative along perturbations that keep
    the rank, and pinv itself jumps when a perturbation changes the rank
    (docs/numpy.md).

    Args:
      a: (..., m, n) Tensor or array-like.
      rcond, rtol: the relative cutoff, as NumPy's (a single number).
      hermitian: accepted for compatibility; the SVD is used either way.

    Returns:
      A Tensor of shape (..., n, m).

    Raises:
      numpy.linalg.LinAlgError: a is not at least 2-D, or the SVD does not converge.

    Example::

        >>> gradtape.linalg.pinv(gradtape.constant([[2.0, 0.0]])).numpy()
        array([[0.5],
               [0. ]])
    """
    a = matrices("pinv", a, square=False, complex_ok=True)
    return bind(pinv_p, a, rcond=_pinv_rcond(a, rcond, rtol, 1e-15), name="pinv")


@implements(np.linalg.lstsq)
@in_double(2, complex_ok=True)
def lstsq(a, b, rcond=None):
    """The least-squares solution of `a @ x = b` (numpy.linalg.lstsq), as `pinv(a, rcond) @ b`.

    Returns what NumPy returns: the solution, the squared residuals (when a
    has full column rank and more rows than columns, else an empty array),
    the rank and the singular values of a. In a staged function the rank is
    not known while tracing, so the residuals are returned whenever m > n
    (the squared residuals of the minimum-norm solution) and the rank is an
    int64 tensor.

    Args:
      a: (m, n) Tensor or array-like.
      b: (m,) or (m, k).
      rcond: singular values at or below rcond * max(s) count as zero
        (None: machine epsilon times max(m, n), NumPy's default).

    Returns:
      LstsqResult(solution, residuals, rank, singular_values).

    Raises:
      numpy.linalg.LinAlgError: a or b has the wrong number of dimensions, or their rows differ,
        or a has a NaN or an infinity (NumPy: "SVD did not converge in Linear Least Squares").

    Example::

        >>> x, res, rank, s = gradtape.linalg.lstsq(gradtape.constant([[1.0], [1.0]]), [1.0, 3.0])
        >>> x.numpy(), res.numpy()
        (array([2.]), array([2.]))
    """
    a, b = promote_float(a, b)
    sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
    if len(sa) != 2 or len(sb) not in (1, 2) or sb[0] != sa[0]:
        raise np.linalg.LinAlgError(
            f"numpy.linalg.lstsq: needs a of shape (m, n) and b of shape (m,) or (m, k) with the same m, "
            f"got a {sa} and b {sb}")
    m, n = sa
    cutoff = np.finfo(a.dtype).eps * max(m, n) if rcond is None else float(rcond)
    x = matmul(bind(pinv_p, a, rcond=cutoff, name="lstsq"), b)
    # NumPy's ?gelsd scales b by its largest magnitude first: an infinity anywhere in b makes the
    # whole solution NaN (a NaN only its own column's, as the product gives)
    x = ew.where(predicates.any(predicates.isinf(b)), np.nan, x)
    s = _singular_values(a)
    rank = reductions.sum(ew.cast(ew.greater(s, cutoff * reductions.max(s, initial=0)), np.int64))
    known = concrete(rank)
    r = b - matmul(a, x)
    residual = reductions.sum(ew.square(ew.absolute(r) if r.dtype.kind == "c" else r), axis=0)
    if len(sb) == 1:
        residual = reshape(residual, (1,))
    if known is not None:
        rank = np.int32(known)
        if not (rank == n and m > n):
            residual = np.zeros((0,), a.dtype)
    elif m <= n:
        residual = np.zeros((0,), a.dtype)
    return LstsqResult(x, residual, rank, s)


@implements(np.linalg.matrix_power)
def matrix_power(a, n):
    """a raised to the integer power n (numpy.linalg.matrix_power), by repeated squaring.

    Negative powers invert first (a solve); n = 0 gives the identity (no gradient).

    Args:
      a: (..., m, m) Tensor or array-like.
      n: a Python or NumPy integer.

    Returns:
      A Tensor of a's shape.

    Raises:
      TypeError: n is not an integer.
      numpy.linalg.LinAlgError: a is not square, or singular with n < 0.

    Example::

        >>> gradtape.linalg.matrix_power(gradtape.constant([[1.0, 1.0], [0.0, 1.0]]), 3).numpy()
        array([[1., 3.],
               [0., 1.]])
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"numpy.linalg.matrix_power: the exponent must be an integer, got {n!r}")
    a = promote(a)[0]
    shape = tuple(shape_of(a))
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError(
            f"numpy.linalg.matrix_power: needs square matrices in the last two axes, got shape {shape}")
    n = int(n)
    if n == 0:
        return Tensor(np.broadcast_to(np.eye(shape[-1], dtype=a.dtype), shape).copy())
    if n < 0:
        a, n = inv(a), -n
    result, power = None, a
    while True:
        if n & 1:
            result = power if result is None else matmul(result, power)
        n >>= 1
        if not n:
            return result
        power = matmul(power, power)


def _chain_order(dims):
    """The cheapest parenthesization of a chain of matrices with these dimensions (dynamic programming)."""
    k = len(dims) - 1
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s
    return split


@implements(np.linalg.multi_dot)
def multi_dot(arrays, *, out=None):
    """The product of two or more matrices in the cheapest order (numpy.linalg.multi_dot).

    The first argument may be 1-D (a row vector) and the last 1-D (a column
    vector); the others must be 2-D.

    Args:
      arrays: a sequence of Tensors or array-likes.
      out: must be None.

    Returns:
      A Tensor: the product, with the axes of 1-D ends dropped.

    Raises:
      ValueError: fewer than two arrays, or an inner one is not 2-D.

    Example::

        >>> gradtape.linalg.multi_dot([np.ones(3), np.ones((3, 2)), gradtape.constant(np.ones(2))]).numpy()
        array(6.)
    """
    if out is not None:
        raise TypeError("numpy.linalg.multi_dot: out= is not supported with gradtape Tensors")
    arrays = list(promote(*arrays))
    if len(arrays) < 2:
        raise ValueError(f"numpy.linalg.multi_dot: needs at least two arrays, got {len(arrays)}")
    first, last = len(shape_of(arrays[0])) == 1, len(shape_of(arrays[-1])) == 1
    if first:
        arrays[0] = reshape(arrays[0], (1, -1))
    if last:
        arrays[-1] = reshape(arrays[-1], (-1, 1))
    for i, x in enumerate(arrays):
        if len(shape_of(x)) != 2:
            raise ValueError(f"numpy.linalg.multi_dot: array {i} has shape {tuple(shape_of(x))}; all but the "
                             "first and last must be 2-D (the ends may be 1-D)")
    dims = [shape_of(arrays[0])[0]] + [shape_of(x)[1] for x in arrays]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return arrays[i]
        return matmul(product(i, split[i][j]), product(split[i][j] + 1, j))

    result = product(0, len(arrays) - 1)
    if first and last:
        return result[0, 0]
    if first:
        return result[0]
    if last:
        return result[:, 0]
    return result
