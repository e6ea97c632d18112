"""Linear-algebra ops on stacks of matrices: solve, slogdet, cholesky, pinv.

Each op works on the last two axes and maps over any leading (batch) axes,
like numpy.linalg. The decompositions with several results (eigh, svd, qr)
are in linalg_decomp.py; every other numpy.linalg function is a composition
(gradtape/functions/linalg_*.py): inv is a solve against the identity, det
is sign * exp(logabsdet), lstsq goes through pinv.

Derivatives follow the standard matrix-calculus rules, written with solves
(never an explicit inverse times something): for X = solve(A, B),

    B_bar = solve(A^T, X_bar),    A_bar = -B_bar X^T,    dX = solve(A, dB - dA X).

numpy.linalg.cholesky reads the lower triangle of its input only (the
upper one is never looked at), so its derivative with respect to an
element above the diagonal is 0; the rules here differentiate exactly that
function, which is what finite differences see.

Failures are numpy's: np.linalg.LinAlgError for a singular matrix (solve)
or one that is not positive definite (cholesky), with a message naming
the numpy function, the shape and, in a stack, which matrix. Native code
reports LAPACK's info through the same messages (codegen/lapack.py).
"""
from __future__ import annotations

import numpy as np

from ..atoms import Literal
from ..builder import Sym, bind
from ..errors import ShapeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ._helpers import COMPLEX_OPS, require_float, same_dtype
from ._matrix import batch_eye, diag_part, hermitian_from_lower, mH, mm, mT, to_lower, tril
from .complex_parts import conj, imag, real
from .elementwise import cast
from .indexing import concatenate, pad, slice as slice_
from .layout import broadcast_to, reduce_sum, reshape

__all__ = ["solve_p", "slogdet_p", "cholesky_p", "pinv_p", "solve", "slogdet", "cholesky", "pinv",
           "linalg_error", "square_shape"]


# --- errors, shared with native code (codegen/lapack.py) ------------------------------

_PROBLEMS = {
    "singular": "singular matrix (no inverse)",
    "not_pd": "matrix not positive definite (its Cholesky factor does not exist)",
    "no_convergence": "the LAPACK iteration did not converge",
}
# NumPy's own words for a failed iteration, kept so that code matching NumPy's message still matches
_NO_CONVERGENCE = {
    "svd": "SVD did not converge", "pinv": "SVD did not converge",
    "lstsq": "SVD did not converge in Linear Least Squares",
    "eigh": "Eigenvalues did not converge", "eigvalsh": "Eigenvalues did not converge",
    "eig": "Eigenvalues did not converge", "eigvals": "Eigenvalues did not converge",
}
_FIXES = {
    "singular": "use numpy.linalg.pinv or numpy.linalg.lstsq for a singular or rank-deficient system",
    "not_pd": "cholesky needs a symmetric positive-definite matrix: check the input, or add a "
              "small multiple of the identity",
    "no_convergence": "check the input for NaN or inf",
}


def linalg_error(function: str, problem: str, shape, index=None) -> np.linalg.LinAlgError:
    """The LinAlgError raised when `function` fails on a matrix of the stack of `shape`.

    Args:
      function: the numpy.linalg function the user called ("inv", "solve", ...).
      problem: "singular", "not_pd" or "no_convergence".
      shape: the shape of the whole operand (the stack).
      index: the batch index of the failing matrix, for a stack.
    """
    where = f"input of shape {tuple(shape)}"
    if index is not None and len(shape) > 2:
        where += f", matrix {tuple(int(i) for i in index)} of the stack"
    text = _NO_CONVERGENCE.get(function, _PROBLEMS[problem]) if problem == "no_convergence" else _PROBLEMS[problem]
    return np.linalg.LinAlgError(f"numpy.linalg.{function}: {text} ({where}); {_FIXES[problem]}")


def square_shape(op_name: str, t):
    """Check that `t` is a float stack of square matrices; returns n."""
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise ShapeError(f"{op_name}: needs square matrices in the last two axes, got {t}")
    return t.shape[-1]


def _first_failure(a, fails):
    """The batch index of the first matrix of `a` on which `fails(matrix)` is true."""
    for index in np.ndindex(*a.shape[:-2]):
        if fails(a[index]):
            return index
    return None


def refuse_non_finite(name: str, a):
    """Raise LinAlgError ("did not converge") when a matrix of `a` holds a NaN or an infinity.

    The SVD-based functions (svd, pinv, lstsq, the 2-norms) refuse both, as NumPy 2.5 does on
    every LAPACK; older NumPy and OpenBLAS gave NaN for an infinity, so gradtape checks itself
    rather than follow whichever LAPACK is installed."""
    if not np.isfinite(a).all():
        raise linalg_error(name, "no_convergence", a.shape, _first_failure(a, lambda m: not np.isfinite(m).all()))


def _is_singular(m) -> bool:
    try:
        np.linalg.solve(m, np.zeros(m.shape[-1], m.dtype))
        return False
    except np.linalg.LinAlgError:
        return True


def _is_not_pd(m) -> bool:
    try:
        np.linalg.cholesky(m)
        return False
    except np.linalg.LinAlgError:
        return True


def _matrix_batch_rule(op_fn):
    """Batching for ops of one stack operand: the batch axis is one more leading axis."""
    return lambda n, ins, batched, **params: op_fn(ins[0], **params)


# --- solve: X = A^{-1} B ------------------------------------------------------------------

solve_p = new_op("solve", elementwise=False, can_fail_on_values=True, runs_code=False)


def _solve_shape(a, b, *, name):
    require_float(solve_p, a)
    same_dtype(solve_p, (a, b))
    n = square_shape("solve", a)
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != n:
        raise ShapeError(f"solve: the right-hand side {b} does not match the matrices {a}: it must have "
                         f"the same batch axes and {n} rows (front ends broadcast first)")
    return b


def _solve_impl(a, b, *, name):
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise linalg_error(name, "singular", a.shape, _first_failure(a, _is_singular)) from None


def _is_identity(b: Sym) -> bool:
    """Whether b is a constant stack of identity matrices (inv's right-hand side)."""
    atom = b.atom
    if not isinstance(atom, Literal):
        return False
    n = b.shape[-1]
    return b.shape[-2] == n and bool(np.array_equal(np.broadcast_to(np.eye(n, dtype=b.dtype), b.shape), atom.value))


def _solve_vjp(ct, x, a, b, *, name):
    if _is_identity(b):
        # x = inv(a): solve(a^T, ct) is x^T ct, so the adjoint is two products with the result
        # the user asked for (no second factorization), and b is a constant.
        return -mm(mm(mT(x), ct), mT(x)), None
    ct_b = solve(mT(a), ct)
    return -mm(ct_b, mT(x)), ct_b


def _solve_jvp(ts, x, a, b, *, name):
    ta, tb = ts
    if tb is None and _is_identity(b):
        return -mm(mm(x, ta), x)                  # d inv(a) = -inv(a) da inv(a)
    rhs = tb
    if ta is not None:
        rhs = -mm(ta, x) if rhs is None else rhs - mm(ta, x)
    return solve(a, rhs)


def _solve_batch(n, ins, batched, *, name):
    a, b = (x if bd else broadcast_to(x, (n,) + x.shape) for x, bd in zip(ins, batched))
    return solve(a, b, name=name)


shape_rules[solve_p] = _solve_shape
impls[solve_p] = _solve_impl
vjp_rules[solve_p] = _solve_vjp
jvp_rules[solve_p] = _solve_jvp
batching_rules[solve_p] = _solve_batch


def solve(a: Sym, b: Sym, name: str = "solve") -> Sym:
    """solve(a, b) for stacks a (..., n, n) and b (..., n, k); `name` is what errors name."""
    return bind(solve_p, a, b, name=name)


# --- slogdet: (sign, log|det|) packed in a last axis of 2 ----------------------------------

slogdet_p = new_op("slogdet", elementwise=False, can_fail_on_values=False, runs_code=False)


def _slogdet_shape(a):
    require_float(slogdet_p, a)
    square_shape("slogdet", a)
    return a.with_shape(a.shape[:-2] + (2,))


def _slogdet_impl(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.stack([sign, logabs.astype(a.dtype)], axis=-1).astype(a.dtype)


def _logabs(x: Sym) -> Sym:
    """The log|det| part of a packed slogdet (or of its cotangent)."""
    nd = x.ndim
    return reshape(slice_(x, (0,) * (nd - 1) + (1,), x.shape), x.shape[:-1])


def _sign(x: Sym) -> Sym:
    """The sign part of a packed slogdet (or of its cotangent)."""
    nd = x.ndim
    return reshape(slice_(x, (0,) * nd, x.shape[:-1] + (1,)), x.shape[:-1])


def _last(x: Sym) -> Sym:
    return reshape(x, x.shape + (1,))


# For complex A, with t = d log det A = tr(A^-1 dA): d log|det A| = Re(t) and the sign
# det A / |det A| = exp(i Im log det A) moves by i Im(t) sign. Under JAX's pairing the
# cotangent of t is then Re(ct_logabs) + i Im(ct_sign sign), and A_bar = that times A^-T;
# for real A the sign is piecewise constant (no derivative) and A_bar = ct_logabs A^-T.

def _slogdet_vjp(ct, out, a):
    ct_t = _logabs(ct)
    if a.dtype.kind == "c":
        ct_t = (cast(real(ct_t), a.dtype)
                + cast(imag(_sign(ct) * _sign(out)), a.dtype) * a.builder.literal(1j, a.dtype))
    ct_t = reshape(ct_t, ct.shape[:-1] + (1, 1))
    return (ct_t * solve(mT(a), batch_eye(a, a.shape[-1]), name="slogdet"),)


def _slogdet_jvp(ts, out, a):
    t = reduce_sum(diag_part(solve(a, ts[0], name="slogdet")), (a.ndim - 2,))
    if a.dtype.kind == "c":
        t_sign = cast(imag(t), a.dtype) * a.builder.literal(1j, a.dtype) * _sign(out)
        return concatenate([_last(t_sign), _last(cast(real(t), a.dtype))], t.ndim)
    return pad(_last(t), ((0, 0),) * t.ndim + ((1, 0),))


shape_rules[slogdet_p] = _slogdet_shape
impls[slogdet_p] = _slogdet_impl
vjp_rules[slogdet_p] = _slogdet_vjp
jvp_rules[slogdet_p] = _slogdet_jvp


def slogdet(a: Sym) -> Sym:
    """(sign, log|det a|) of each matrix, packed as a last axis of length 2."""
    return bind(slogdet_p, a)


batching_rules[slogdet_p] = _matrix_batch_rule(slogdet)


# --- cholesky: the lower factor L of A = L L^T, from A's lower triangle ---------------------

cholesky_p = new_op("cholesky", elementwise=False, can_fail_on_values=True, runs_code=False)


def _cholesky_shape(a):
    require_float(cholesky_p, a)
    square_shape("cholesky", a)
    return a


def _cholesky_impl(a):
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise linalg_error("cholesky", "not_pd", a.shape, _first_failure(a, _is_not_pd)) from None


def _phi(x: Sym) -> Sym:
    """The lower triangle with the diagonal halved."""
    n = x.shape[-1]
    return tril(x) * x.builder.sym(Literal(np.tril(np.ones((n, n), x.dtype), -1) + 0.5 * np.eye(n, dtype=x.dtype)))


# Complex (Hermitian positive-definite) A = L L^H: the same rules with L^T -> L^H where
# the Hermitian tangent is formed, the Hermitian matrix read from the lower triangle and
# the real part of the diagonal (_matrix.hermitian_from_lower, as zpotrf reads it).

def _cholesky_vjp(ct, lower, a):
    # dL = L Phi(L^{-1} dS L^{-H}) with dS the Hermitian matrix of dA's lower triangle, so
    # S = L^{-T} Phi(L^T L_bar) conj(L)^{-1} pairs with dS (JAX's pairing), and A_bar is
    # to_lower(S) (for real A: tril(S) + tril(S^T, -1)).
    p = _phi(mm(mT(lower), ct))
    x = solve(mT(lower), p, name="cholesky")           # L^{-T} P
    s = mT(solve(mH(lower), mT(x), name="cholesky"))   # (L^{-T} P) conj(L)^{-1}
    return (to_lower(s),)


def _cholesky_jvp(ts, lower, a):
    ds = hermitian_from_lower(ts[0])
    z = solve(lower, ds, name="cholesky")               # L^{-1} dS
    y = solve(lower, mH(z), name="cholesky")            # L^{-1} dS L^{-H} (dS Hermitian)
    return mm(lower, _phi(y))


shape_rules[cholesky_p] = _cholesky_shape
impls[cholesky_p] = _cholesky_impl
vjp_rules[cholesky_p] = _cholesky_vjp
jvp_rules[cholesky_p] = _cholesky_jvp


def cholesky(a: Sym) -> Sym:
    return bind(cholesky_p, a)


batching_rules[cholesky_p] = _matrix_batch_rule(cholesky)


# --- pinv: the Moore-Penrose pseudo-inverse ------------------------------------------------

# Param name: the numpy.linalg function reported, "pinv" or "lstsq". Both fail on any non-finite
# entry of a, as NumPy's lstsq (?gelsd) does and, from NumPy 2.5, its pinv (svd_p's rule).
pinv_p = new_op("pinv", elementwise=False, can_fail_on_values=True, runs_code=False)


def _pinv_shape(a, *, rcond, name):
    if name not in ("pinv", "lstsq"):
        raise ValueError(f"pinv: name must be 'pinv' or 'lstsq', got {name!r}")
    require_float(pinv_p, a)
    if a.ndim < 2:
        raise ShapeError(f"pinv: needs matrices in the last two axes, got {a}")
    return a.with_shape(a.shape[:-2] + (a.shape[-1], a.shape[-2]))


def _pinv_impl(a, *, rcond, name):
    refuse_non_finite(name, a)
    try:
        return np.linalg.pinv(a, rcond=rcond)
    except np.linalg.LinAlgError:
        raise linalg_error(name, "no_convergence", a.shape) from None


def _pinv_projections(a, p):
    """(I - A P, I - P A): the projections onto the complements of A's range and row space."""
    m, n = a.shape[-2:]
    return batch_eye(a, m) - mm(a, p), batch_eye(a, n) - mm(p, a)


def _pinv_vjp(ct, p, a, *, rcond, name):
    # Golub and Pereyra's derivative of the pseudo-inverse, valid where the rank is constant:
    # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P, transposed under JAX's pairing
    # (a term K dA^H pairs as conj(K) with dA; for real A, the real rule with transposes).
    left, right = _pinv_projections(a, p)
    pt, cth = mT(p), mH(ct)
    cp = conj(p) if p.dtype.kind == "c" else p
    cl, cr = (conj(left), conj(right)) if p.dtype.kind == "c" else (left, right)
    return (-mm(mm(pt, ct), pt) + mm(mm(cl, cth), mm(cp, pt)) + mm(mm(pt, cp), mm(cth, cr)),)


def _pinv_jvp(ts, p, a, *, rcond, name):
    left, right = _pinv_projections(a, p)
    da, ph = ts[0], mH(p)
    dah = mH(da)
    return -mm(mm(p, da), p) + mm(mm(p, ph), mm(dah, left)) + mm(mm(right, dah), mm(ph, p))


shape_rules[pinv_p] = _pinv_shape
impls[pinv_p] = _pinv_impl
vjp_rules[pinv_p] = _pinv_vjp
jvp_rules[pinv_p] = _pinv_jvp


def pinv(a: Sym, rcond: float, name: str = "pinv") -> Sym:
    return bind(pinv_p, a, rcond=float(rcond), name=name)


batching_rules[pinv_p] = _matrix_batch_rule(pinv)


# Complex matrices (docs/complex.md): solve and inv are holomorphic, so their real rules hold
# with plain transposes under JAX's pairing; slogdet and cholesky have their complex rules above.
COMPLEX_OPS.update((solve_p, slogdet_p, cholesky_p, pinv_p))
