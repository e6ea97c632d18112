"""The general eigendecomposition: numpy.linalg.eig and eigvals (LAPACK's geev).

One op, packed like eigh (linalg_decomp.py): `eig` of a (..., n, n) real or
complex stack is complex, (..., n + 1, n) with the eigenvalues in row 0 and
the unit-norm eigenvectors (columns) in rows 1..n; with param vectors=False
only the eigenvalues, (..., n). Real input gives the complex dtype of its
precision (float64 -> complex128), as NumPy's geev does; NumPy's cast of an
all-real result back to a real dtype is the front end's
(gradtape/functions/linalg_eig.py), as it depends on the values.

eigvals is computed as eig's eigenvalues (JOBVR='V', not NumPy's JOBVR='N'),
so that the eigenvectors its derivatives recompute are paired with the
same eigenvalues in the same order; the values agree with
numpy.linalg.eigvals to rounding.

Derivatives, where the eigenvalues are distinct (JAX's formulas, JAX's
pairing Re(sum(ct * t)), docs/complex.md):

    M = V^-1 dA V,  dw = diag(M),  dV = W - V diag(Re(diag(V^H W))),  W = V (F o M)
    A_bar = V^-T (diag(w_bar) + F o (V^T X)) V^T,  X = V_bar - conj(V) diag(Re(diag(V^T V_bar)))
    F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it

(for real A, A_bar is the real part: the transpose of the embedding of the
reals). The second term of dV keeps each column at unit norm; the phase of
each eigenvector is a gauge (LAPACK makes its largest component real), and
dV is the derivative with Im(v_i^H dv_i) = 0, which is LAPACK's only by
chance: only losses invariant under v_i -> exp(i t) v_i (|V|, the projectors
v_i v_i^H / ..., V diag(w) V^-1) have the derivative computed here. A zero
gap between two eigenvalues makes F infinite: NaN exactly where the
cotangent couples the repeated pair (`_matrix.guarded_div`), as for eigh.
"""
from __future__ import annotations

import numpy as np

from ..builder import Sym, bind
from ..errors import DTypeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..types import complex_dtype
from . import elementwise as ew
from ._matrix import diag_embed, diag_part, guarded_div, mm, mT, zero_in
from .complex_parts import conj, real
from .indexing import concatenate
from .layout import reduce_sum
from .linalg_decomp import _gaps, _row, unpack_eigh
from .linalg import linalg_error, solve, square_shape

__all__ = ["eig_p", "eig", "unpack_eig"]

eig_p = new_op("eig", elementwise=False, can_fail_on_values=True, runs_code=False)


def _eig_shape(a, *, vectors):
    if a.dtype.kind not in "fc":
        raise DTypeError(f"eig: expected a floating-point or complex operand, got {a}")
    n = square_shape("eig", a)
    return a.with_shape(a.shape[:-2] + ((n + 1, n) if vectors else (n,))).with_dtype(complex_dtype(a.dtype))


def _eig_impl(a, *, vectors):
    name = "eig" if vectors else "eigvals"
    if not np.isfinite(a).all():   # NumPy refuses them too ("Array must not contain infs or NaNs")
        raise linalg_error(name, "no_convergence", a.shape)
    try:
        w, v = np.linalg.eig(a)
    except np.linalg.LinAlgError:
        raise linalg_error(name, "no_convergence", a.shape) from None
    dtype = complex_dtype(a.dtype)
    if not vectors:
        return w.astype(dtype)
    return np.concatenate([w[..., None, :], v], axis=-2).astype(dtype)


# eig's packing is eigh's: (w, V) = unpack_eigh(packed)
unpack_eig = unpack_eigh


def _real_diag_row(x: Sym, dtype) -> Sym:
    """Re(sum over rows of x), as a row of the complex dtype: Re(diag(V^H W)) for x = conj(V) W."""
    return _row(ew.cast(real(reduce_sum(x, (x.ndim - 2,))), dtype))


def _eig_vjp(ct, out, a, *, vectors):
    w, v = unpack_eig(out if vectors else eig(a, True))
    n = w.shape[-1]
    if not vectors:
        inner = diag_embed(ct)
    else:
        w_bar, v_bar = unpack_eig(ct)
        inner = diag_embed(w_bar)
        if not zero_in(ct, ((1, n + 1), (0, n))):   # the eigenvectors are read
            x = v_bar - conj(v) * _real_diag_row(v_bar * v, v.dtype)
            inner = inner + guarded_div(mm(mT(v), x), _gaps(w))
    a_bar = solve(mT(v), mm(inner, mT(v)), name="eig")
    return (ew.cast(real(a_bar), a.dtype) if a.dtype.kind == "f" else a_bar,)


def _eig_jvp(ts, out, a, *, vectors):
    w, v = unpack_eig(out if vectors else eig(a, True))
    da = ts[0] if ts[0].dtype == v.dtype else ew.cast(ts[0], v.dtype)
    m = solve(v, mm(da, v), name="eig")
    dw = diag_part(m)
    if not vectors:
        return dw
    dv = mm(v, guarded_div(m, _gaps(w)))
    dv = dv - v * _real_diag_row(conj(v) * dv, v.dtype)
    return concatenate([_row(dw), dv], dv.ndim - 2)


shape_rules[eig_p] = _eig_shape
impls[eig_p] = _eig_impl
vjp_rules[eig_p] = _eig_vjp
jvp_rules[eig_p] = _eig_jvp


def eig(a: Sym, vectors: bool = True) -> Sym:
    return bind(eig_p, a, vectors=bool(vectors))


batching_rules[eig_p] = lambda n, ins, batched, **params: eig(ins[0], **params)
