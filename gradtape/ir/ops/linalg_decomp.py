"""Decompositions with several results: eigh, svd, qr.

An op has one output, so each decomposition packs its results into one
tensor and the front ends (gradtape/functions/linalg_decomp.py) slice
them apart; the slices are views in native code and their derivatives
route each result's cotangent back into the packed one:

    eigh   (..., n + 1, n)            row 0: the eigenvalues (ascending), rows 1..n: the eigenvectors;
                                      param uplo ('L' or 'U'): the triangle read; with param
                                      vectors=False (eigvalsh) only the eigenvalues, (..., n)
    svd    (..., m*u + k + v*n)       U (m, u), s (k), Vh (v, n), flattened and joined
    qr     (..., m*q + q*n)           Q (m, q), R (q, n), flattened and joined

Derivatives (standard results; see docs/numpy.md for where they do not exist):

    eigh:  A_bar = V (diag(w_bar) + F o (V^T V_bar)) V^T,  F_ij = 1 / (w_j - w_i)
    svd:   A_bar = U [F o (U^T U_bar - U_bar^T U) S + diag(s_bar) + S F o (V^T V_bar - V_bar^T V)] V^T
                   + (I - U U^T) U_bar S^-1 V^T + U S^-1 V_bar^T (I - V V^T),  F_ij = 1 / (s_j^2 - s_i^2)
    qr:    A_bar = [Q_bar + Q copyltu(M)] R^-T,  M = R R_bar^T - Q_bar^T Q   (m >= n)
           m < n: A = [X | Y], R = [U | V]: X_bar by the rule above with (Q_bar + Y V_bar^T, U_bar),
           Y_bar = Q V_bar

Complex matrices (eigh: Hermitian; svd): the same rules with conjugate transposes where the
tangent is formed and A_bar = conj(U) core V^T under JAX's pairing, plus svd's phase term
(see the comments above each op's rules and docs/complex.md).

A zero gap (repeated eigenvalue or singular value) makes F infinite: the
derivative of the vectors does not exist there, and it is NaN, never a
silent finite number, exactly when the cotangent couples the repeated pair
(`_matrix.guarded_div`); losses of the values alone keep finite gradients.
numpy.linalg.eigh reads one triangle only (param uplo, NumPy's UPLO), so,
as for cholesky, its derivative sees only that triangle. 'U' is its own
LAPACK call, not 'L' on A^T: the symmetric matrix is the same, but the
tridiagonal reduction differs and so do the eigenvectors' signs. eigvalsh
is eigh with vectors=False, LAPACK's JOBZ='N' as NumPy calls it: its
iteration differs from JOBZ='V' (it fails on inf, where 'V' returns NaN),
and its derivatives compute the eigenvectors with a second eigh.
"""
from __future__ import annotations

import numpy as np

from ..builder import Sym, bind
from ..errors import ShapeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ._helpers import COMPLEX_OPS, require_float
from ..atoms import Literal
from .complex_parts import conj
from ._matrix import (conj_if_complex, diag_embed, diag_part, flat_part, guarded_div, hermitian_from_lower, mH, mm,
                      mT, pack_flat, real_part_as_complex, rows, to_lower, tril, zero_in)
from .indexing import concatenate, slice
from .layout import reshape
from .linalg import linalg_error, refuse_non_finite, solve, square_shape

__all__ = ["eigh_p", "svd_p", "qr_p", "eigh", "svd", "qr", "svd_sizes", "qr_sizes",
           "unpack_eigh", "unpack_svd", "unpack_qr"]


def _batch_rule(op_fn):
    return lambda n, ins, batched, **params: op_fn(ins[0], **params)


def _row(v: Sym) -> Sym:
    """A stack of vectors as a stack of 1-row matrices."""
    return reshape(v, v.shape[:-1] + (1, v.shape[-1]))


def _col(v: Sym) -> Sym:
    return reshape(v, v.shape + (1,))


def _symmetric(t: Sym, uplo: str) -> Sym:
    """The symmetric (Hermitian) matrix eigh reads from t: the upper triangle of t is the lower one of t^H."""
    return hermitian_from_lower(t if uplo == "L" else mH(t))


def _to_triangle(g: Sym, uplo: str) -> Sym:
    """The gradient with respect to A of a function of _symmetric(A, uplo), given the symmetric matrix's.

    Under JAX's pairing the adjoint of X -> X^H is G -> G^H (of X -> X^T, G -> G^T)."""
    return to_lower(g) if uplo == "L" else mH(to_lower(g))


# --- eigh ------------------------------------------------------------------------------------
# Complex (Hermitian) A: the real rules with V^T -> V^H where the tangent is formed
# (M = V^H dA V) and, under JAX's pairing Re(sum(ct * t)), A_bar = conj(V) G V^T for the
# inner matrix G of the real rule (its Hermitian part: F o (X - X^H) / 2, X = V^T V_bar).
# The eigenvalues are real: only the real part of their cotangent counts.

eigh_p = new_op("eigh", elementwise=False, can_fail_on_values=True, runs_code=False)


def _eigh_shape(a, *, uplo, vectors):
    if uplo not in ("L", "U"):
        raise ValueError(f"eigh: uplo must be 'L' or 'U', got {uplo!r}")
    require_float(eigh_p, a)
    n = square_shape("eigh", a)
    return a.with_shape(a.shape[:-2] + ((n + 1, n) if vectors else (n,)))


def _eigh_impl(a, *, uplo, vectors):
    try:
        if not vectors:
            return np.linalg.eigvalsh(a, UPLO=uplo).astype(a.dtype)
        w, v = np.linalg.eigh(a, UPLO=uplo)
    except np.linalg.LinAlgError:
        raise linalg_error("eigh" if vectors else "eigvalsh", "no_convergence", a.shape) from None
    return np.concatenate([w[..., None, :].astype(a.dtype), v], axis=-2)


def unpack_eigh(packed: Sym):
    """(w, V) of a packed eigh result: w (..., n), V (..., n, n)."""
    n = packed.shape[-1]
    return reshape(rows(packed, 0, 1), packed.shape[:-2] + (n,)), rows(packed, 1, n + 1)


def _gaps(w: Sym) -> Sym:
    """D_ij = w_j - w_i."""
    return _row(w) - _col(w)


def _eigh_vjp(ct, out, a, *, uplo, vectors):
    if not vectors:
        _, v = unpack_eigh(eigh(a, uplo))
        return (_to_triangle(mm(conj_if_complex(v) * _row(real_part_as_complex(ct)), mT(v)), uplo),)
    w, v = unpack_eigh(out)
    n = w.shape[-1]
    w_bar, v_bar = unpack_eigh(ct)
    w_bar = real_part_as_complex(w_bar)
    if zero_in(ct, ((1, n + 1), (0, n))):   # a loss of the eigenvalues alone: V diag(w_bar) V^T
        return (_to_triangle(mm(conj_if_complex(v) * _row(w_bar), mT(v)), uplo),)
    x = mm(mT(v), v_bar)
    # Only the symmetric part of the inner matrix matters (A is read as symmetric), and the
    # symmetric part of F o X is F o (X - X^T) / 2 since F is antisymmetric.
    inner = diag_embed(w_bar) + guarded_div(0.5 * (x - mH(x)), _gaps(w))
    return (_to_triangle(mm(mm(conj_if_complex(v), inner), mT(v)), uplo),)


def _eigh_jvp(ts, out, a, *, uplo, vectors):
    w, v = unpack_eigh(out if vectors else eigh(a, uplo))
    m = mm(mm(mH(v), _symmetric(ts[0], uplo)), v)        # symmetric (Hermitian)
    dw = real_part_as_complex(diag_part(m))
    if not vectors:
        return dw
    dv = mm(v, guarded_div(m, _gaps(w)))
    return concatenate([_row(dw), dv], dv.ndim - 2)


shape_rules[eigh_p] = _eigh_shape
impls[eigh_p] = _eigh_impl
vjp_rules[eigh_p] = _eigh_vjp
jvp_rules[eigh_p] = _eigh_jvp


def eigh(a: Sym, uplo: str = "L", vectors: bool = True) -> Sym:
    return bind(eigh_p, a, uplo=uplo, vectors=bool(vectors))


batching_rules[eigh_p] = _batch_rule(eigh)
COMPLEX_OPS.add(eigh_p)   # Hermitian matrices (the rules above)


# --- svd -------------------------------------------------------------------------------------

svd_p = new_op("svd", elementwise=False, can_fail_on_values=True, runs_code=False)


def svd_sizes(m: int, n: int, full_matrices: bool):
    """(u, k, v): U is (m, u), s has k values, Vh is (v, n)."""
    k = min(m, n)
    return (m, k, n) if full_matrices else (k, k, k)


def _svd_shape(a, *, full_matrices):
    require_float(svd_p, a)
    if a.ndim < 2:
        raise ShapeError(f"svd: needs matrices in the last two axes, got {a}")
    m, n = a.shape[-2:]
    u, k, v = svd_sizes(m, n, full_matrices)
    return a.with_shape(a.shape[:-2] + (m * u + k + v * n,))


def _svd_impl(a, *, full_matrices):
    refuse_non_finite("svd", a)
    try:
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    except np.linalg.LinAlgError:
        raise linalg_error("svd", "no_convergence", a.shape) from None
    batch = a.shape[:-2]
    return np.concatenate([u.reshape(batch + (-1,)), s, vh.reshape(batch + (-1,))], axis=-1)


def unpack_svd(packed: Sym, m: int, n: int, full_matrices: bool):
    """(U, s, Vh) of a packed svd result of (m, n) matrices."""
    u, k, v = svd_sizes(m, n, full_matrices)
    return (flat_part(packed, 0, m * u, (m, u)),
            flat_part(packed, m * u, m * u + k, (k,)),
            flat_part(packed, m * u + k, m * u + k + v * n, (v, n)))


def _reduced_only(what, a, full_matrices):
    m, n = a.shape[-2:]
    if full_matrices and m != n:
        raise NotImplementedError(
            f"svd: the {what} of svd(full_matrices=True) of a non-square {m}x{n} matrix is not defined "
            "(its extra singular vectors are any basis of a null space); pass full_matrices=False"
        )


def _svd_parts(out, a, full_matrices):
    m, n = a.shape[-2:]
    u, s, vh = unpack_svd(out, m, n, full_matrices)
    return u, s, mH(vh)


def _sq_gaps(s: Sym) -> Sym:
    """s_j^2 - s_i^2."""
    return _row(s) * _row(s) - _col(s) * _col(s)


def _over_s(x: Sym, s: Sym) -> Sym:
    """x S^{-1} (column j divided by s_j): NaN where s_j = 0 meets a nonzero x, else 0 there."""
    return guarded_div(x, _row(s), off_diagonal_only=False)


def _phase_term(x_u: Sym, s: Sym) -> Sym:
    """diag(i Im(diag(x)) / s): the phase of each pair (u_i, v_i) is free for complex A; JAX's
    gauge puts its derivative on U (dU's diagonal term (dS - dS^H) / 2 S^-1), whose adjoint this is."""
    d = diag_part(x_u)
    return diag_embed(guarded_div(d - conj(d), s + s, off_diagonal_only=False))


# Complex A = U S V^H (JAX's rules): dS = U^H dA V, ds = Re(diag(dS)), the real rules with
# transposes of the tangents' matrices made conjugate transposes, and dU's extra diagonal
# (dS - dS^H) / 2 S^-1 (the phase gauge: Im(u_i^H du_i) = Im(dS_ii) / s_i). Under JAX's
# pairing, A_bar = conj(U) core V^T, the singular values' cotangent counts by its real part.

def _svd_vjp(ct, out, a, *, full_matrices):
    _reduced_only("derivative", a, full_matrices)
    m, n = a.shape[-2:]
    u, s, v = _svd_parts(out, a, full_matrices)
    u_bar, s_bar, vh_bar = unpack_svd(ct, m, n, full_matrices)
    s_bar = real_part_as_complex(s_bar)
    cu = conj_if_complex(u)
    nu, k, _ = svd_sizes(m, n, full_matrices)
    if zero_in(ct, ((0, m * nu),)) and zero_in(ct, ((m * nu + k, ct.shape[-1]),)):
        return (mm(cu * _row(s_bar), mT(v)),)   # a loss of the singular values alone: U diag(s_bar) V^T
    v_bar = mH(vh_bar)
    x_u, x_v = mm(mT(u), u_bar), mm(mT(v), v_bar)
    gaps = _sq_gaps(s)
    core = (guarded_div(x_u - mH(x_u), gaps) * _row(s) + diag_embed(s_bar)
            + _col(s) * guarded_div(x_v - mH(x_v), gaps))
    if a.dtype.kind == "c":
        core = core + _phase_term(x_u, s)
    a_bar = mm(mm(cu, core), mT(v))
    if m > n:
        a_bar = a_bar + mm(_over_s(u_bar - mm(cu, x_u), s), mT(v))
    if n > m:
        a_bar = a_bar + mm(_over_s(cu, s), mH(v_bar - mm(conj_if_complex(v), x_v)))
    return (a_bar,)


def _svd_jvp(ts, out, a, *, full_matrices):
    _reduced_only("derivative", a, full_matrices)
    m, n = a.shape[-2:]
    u, s, v = _svd_parts(out, a, full_matrices)
    da = ts[0]
    ds_mat = mm(mm(mH(u), da), v)
    gaps = _sq_gaps(s)
    dss = ds_mat * _row(s)          # dS_ij s_j
    sds = _col(s) * ds_mat          # s_i dS_ij
    inner_u = guarded_div(dss + mH(dss), gaps)
    if a.dtype.kind == "c":
        inner_u = inner_u + _over_s(0.5 * (ds_mat - mH(ds_mat)) * _eye_like(ds_mat), s)
    du = mm(u, inner_u)
    dv = mm(v, guarded_div(sds + mH(sds), gaps))
    if m > n:
        dav = mm(da, v)
        du = du + _over_s(dav - mm(u, mm(mH(u), dav)), s)
    if n > m:
        dau = mm(mH(da), u)
        dv = dv + _over_s(dau - mm(v, mm(mH(v), dau)), s)
    return pack_flat([(du, 2), (real_part_as_complex(diag_part(ds_mat)), 1), (mH(dv), 2)])


def _eye_like(x: Sym) -> Sym:
    n = x.shape[-1]
    return x.builder.sym(Literal(np.eye(n, dtype=x.dtype)))


shape_rules[svd_p] = _svd_shape
impls[svd_p] = _svd_impl
vjp_rules[svd_p] = _svd_vjp
jvp_rules[svd_p] = _svd_jvp


def svd(a: Sym, full_matrices: bool = False) -> Sym:
    return bind(svd_p, a, full_matrices=bool(full_matrices))


batching_rules[svd_p] = _batch_rule(svd)
COMPLEX_OPS.add(svd_p)   # the complex rules above


# --- qr --------------------------------------------------------------------------------------

qr_p = new_op("qr", elementwise=False, can_fail_on_values=False, runs_code=False)


def qr_sizes(m: int, n: int, complete: bool) -> int:
    """q: Q is (m, q) and R is (q, n)."""
    return m if complete else min(m, n)


def _qr_shape(a, *, complete):
    require_float(qr_p, a)
    if a.ndim < 2:
        raise ShapeError(f"qr: needs matrices in the last two axes, got {a}")
    m, n = a.shape[-2:]
    q = qr_sizes(m, n, complete)
    return a.with_shape(a.shape[:-2] + (m * q + q * n,))


def _qr_impl(a, *, complete):
    q, r = np.linalg.qr(a, mode="complete" if complete else "reduced")
    batch = a.shape[:-2]
    return np.concatenate([q.reshape(batch + (-1,)), r.reshape(batch + (-1,))], axis=-1)


def unpack_qr(packed: Sym, m: int, n: int, complete: bool):
    q = qr_sizes(m, n, complete)
    return flat_part(packed, 0, m * q, (m, q)), flat_part(packed, m * q, m * q + q * n, (q, n))


def _no_complete_tall(a, complete):
    m, n = a.shape[-2:]
    if complete and m != n:
        raise NotImplementedError(
            f"qr: derivatives are implemented for mode='reduced' (and 'r'); got a {m}x{n} matrix with "
            "mode='complete', whose last m - n columns of Q are not determined by A. Use mode='reduced'"
        )


def _right_solve_upper(x: Sym, r: Sym) -> Sym:
    """x R^{-1} (a solve with R^T, never an inverse)."""
    return mT(solve(mT(r), mT(x), name="qr"))


def _columns(x: Sym, start: int, stop: int) -> Sym:
    """x[..., :, start:stop]."""
    return slice(x, (0,) * (x.ndim - 1) + (start,), x.shape[:-1] + (stop,))


# Complex A (JAX's rules): Q^H replaces Q^T where the tangent is formed, and Omega = Q^H dQ,
# antihermitian, gets the imaginary part of C's diagonal (the phase of each column of Q is
# fixed by R's real diagonal). Transposed under JAX's pairing, with H = Q^T Q_bar - R_bar R^T:
# A_bar = (Q_bar + conj(Q) B) R^-T, B = tril(H - H^H, -1) + i Im(diag(H)) - H; for real A
# this is the copyltu form below.

def _imag_diagonal(x: Sym) -> Sym:
    """i Im(diag(x)) as a diagonal matrix."""
    d = diag_part(x)
    return diag_embed(0.5 * (d - conj(d)))


def _square_vjp(q, r, q_bar, r_bar):
    """A_bar of A = Q R with R square and invertible."""
    if q.dtype.kind == "c":
        h = mm(mT(q), q_bar) - mm(r_bar, mT(r))
        b = tril(h - mH(h), -1) + _imag_diagonal(h) - h
        return mT(solve(r, mT(q_bar + mm(conj(q), b)), name="qr"))
    mmat = mm(r, mT(r_bar)) - mm(mT(q_bar), q)
    copyltu = tril(mmat) + mT(tril(mmat, -1))
    return mT(solve(r, mT(q_bar + mm(q, copyltu)), name="qr"))   # (...) R^{-T}


def _square_jvp(q, r, dx):
    """(dQ, dR) of A = Q R with R square and invertible, for dA = dx."""
    dx_rinv = _right_solve_upper(dx, r)
    c = mm(mH(q), dx_rinv)
    low = tril(c, -1)
    omega = low - mH(low)
    if c.dtype.kind == "c":
        omega = omega + _imag_diagonal(c)
    return mm(q, omega - c) + dx_rinv, mm(c - omega, r)


# A wide A (m < n) splits as [X | Y] with X square: Q U = X is X's QR, and R = [U | V]
# with V = Q^H Y. So Y = Q V, and the square rules apply to X with Q's cotangent
# taking V's share (Q_bar + conj(Y) V_bar^H); Y's cotangent is conj(Q) V_bar.

def _qr_vjp(ct, out, a, *, complete):
    _no_complete_tall(a, complete)
    m, n = a.shape[-2:]
    q, r = unpack_qr(out, m, n, complete)
    q_bar, r_bar = unpack_qr(ct, m, n, complete)
    if m >= n:
        return (_square_vjp(q, r, q_bar, r_bar),)
    y, v_bar = _columns(a, m, n), _columns(r_bar, m, n)
    x_bar = _square_vjp(q, _columns(r, 0, m), q_bar + mm(conj_if_complex(y), mH(v_bar)), _columns(r_bar, 0, m))
    return (concatenate([x_bar, mm(conj_if_complex(q), v_bar)], axis=a.ndim - 1),)


def _qr_jvp(ts, out, a, *, complete):
    _no_complete_tall(a, complete)
    m, n = a.shape[-2:]
    q, r = unpack_qr(out, m, n, complete)
    if m >= n:
        dq, dr = _square_jvp(q, r, ts[0])
        return pack_flat([(dq, 2), (dr, 2)])
    dq, du = _square_jvp(q, _columns(r, 0, m), _columns(ts[0], 0, m))
    dv = mm(mH(dq), _columns(a, m, n)) + mm(mH(q), _columns(ts[0], m, n))
    return pack_flat([(dq, 2), (concatenate([du, dv], axis=a.ndim - 1), 2)])


shape_rules[qr_p] = _qr_shape
impls[qr_p] = _qr_impl
vjp_rules[qr_p] = _qr_vjp
jvp_rules[qr_p] = _qr_jvp


def qr(a: Sym, complete: bool = False) -> Sym:
    return bind(qr_p, a, complete=bool(complete))


batching_rules[qr_p] = _batch_rule(qr)
COMPLEX_OPS.add(qr_p)   # the complex rules above
