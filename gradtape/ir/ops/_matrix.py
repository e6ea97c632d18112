"""Matrix helpers on Syms for the linear-algebra rules (ir/ops/linalg*.py).

Every value here is a stack of matrices: the last two axes are the matrix,
the leading ones a batch shared by all operands of one rule. Nothing here
declares an op; each helper emits existing ones (contract, transpose,
where, gather, slice, ...), so rules written with them differentiate again.
"""
from __future__ import annotations

import numpy as np

from ..atoms import Literal, Var
from ..builder import Sym
from .complex_parts import conj, real
from .contract import contract
from .elementwise import cast, eq, ne, where
from .indexing import concatenate, gather, scatter_add, slice as slice_, unslice_p
from .layout import broadcast_to, reshape, transpose

_BATCH = "abcdefghijklmnopqrst"  # batch letters; x, y, z are the matrix's


def mT(x: Sym) -> Sym:
    """The transpose of each matrix (the last two axes swapped)."""
    n = x.ndim
    return transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def mm(a: Sym, b: Sym) -> Sym:
    """a @ b for stacks with the same batch axes (or b without any)."""
    ba, bb = a.ndim - 2, b.ndim - 2
    if ba > len(_BATCH) or bb > ba:
        raise ValueError(f"mm: batches of ranks {ba} and {bb} are not supported")
    la, lb = _BATCH[:ba], _BATCH[ba - bb:ba]
    return contract(a, b, f"{la}xy,{lb}yz->{la}xz")


def eye(n: int, dtype) -> Literal:
    return Literal(np.eye(n, dtype=dtype))


def batch_eye(x: Sym, n: int) -> Sym:
    """The identity of size n for each matrix of x's batch (x's dtype)."""
    return broadcast_to(x.builder.sym(eye(n, x.dtype)), x.shape[:-2] + (n, n))


def tril(x: Sym, k: int = 0) -> Sym:
    """The lower triangle (below diagonal k) of each matrix; zeros elsewhere.

    A where with a constant mask, never a product, so an inf or NaN above the
    triangle does not leak into the result.
    """
    n, m = x.shape[-2:]
    mask = Literal(np.tril(np.ones((n, m), dtype=bool), k))
    return where(mask, x, 0.0)


def diag_part(x: Sym) -> Sym:
    """The diagonal of each square matrix, as the last axis (a gather: NaNs stay put)."""
    n = x.shape[-1]
    flat = reshape(x, x.shape[:-2] + (n * n,))
    return gather(flat, Literal(np.arange(n, dtype=np.int64) * (n + 1)), x.ndim - 2)


def diag_embed(v: Sym) -> Sym:
    """Square matrices with v's last axis on the diagonal and zeros elsewhere."""
    n = v.shape[-1]
    flat = scatter_add(v, Literal(np.arange(n, dtype=np.int64) * (n + 1)), v.ndim - 1, n * n)
    return reshape(flat, v.shape[:-1] + (n, n))


def rows(x: Sym, start: int, stop: int) -> Sym:
    """x[..., start:stop, :]."""
    return slice_(x, (0,) * (x.ndim - 2) + (start, 0), x.shape[:-2] + (stop, x.shape[-1]))


def flat_part(x: Sym, start: int, stop: int, shape) -> Sym:
    """x[..., start:stop] reshaped to x's batch + `shape` (unpacking a packed output)."""
    nd = x.ndim
    part = slice_(x, (0,) * (nd - 1) + (start,), x.shape[:-1] + (stop,))
    return reshape(part, x.shape[:-1] + tuple(shape))


def pack_flat(parts) -> Sym:
    """The stacks in `parts`, each flattened past the batch, joined along one last axis."""
    flats = []
    for p, nd in parts:  # nd: how many trailing axes of p are its own (not batch)
        batch = p.shape[:p.ndim - nd]
        flats.append(reshape(p, batch + (int(np.prod(p.shape[p.ndim - nd:], dtype=np.int64)),)))
    return concatenate(flats, flats[0].ndim - 1)


def guarded_div(num: Sym, den: Sym, off_diagonal_only: bool = True) -> Sym:
    """num / den where den != 0; where den == 0: 0 if num == 0, else NaN.

    The derivatives of eigenvectors and singular vectors divide by the gaps
    between eigenvalues (singular values). A zero gap with a zero numerator
    is a term that does not contribute (a loss that does not see the
    rotation within a repeated eigenspace); a zero gap with a nonzero
    numerator is a derivative that does not exist, reported as NaN
    (documented in docs/numpy.md) rather than a silent finite number.
    With `off_diagonal_only`, the diagonal of the (square) result is 0.
    """
    zero_gap = eq(den, 0.0)
    safe = where(zero_gap, 1.0, den)
    nan, zero = (Literal(np.asarray(v, num.dtype)) for v in (np.nan, 0.0))
    undefined = where(ne(num, 0.0), nan, zero)
    out = where(zero_gap, undefined, num / safe)
    if off_diagonal_only:
        n = out.shape[-1]
        out = where(Literal(~np.eye(n, dtype=bool)), out, 0.0)
    return out


def zero_in(ct: Sym, region) -> bool:
    """Whether `ct` is known to be zero in `region`, ((lo, hi) per trailing axis): it is an
    `unslice` (a cotangent the adjoint pass built from one slice of a packed result) whose
    slice lies outside the region.

    Rules of the packed decompositions use it to skip the terms of results the loss never
    read (the eigenvectors of an eigenvalue loss), which are otherwise computed as products
    with zeros. Anything else (a sum of cotangents, an input) answers False: the general path.
    """
    atom = ct.atom
    if not isinstance(atom, Var):
        return False
    for eqn in reversed(ct.builder.eqns):
        if eqn.outvars[0] is atom:
            if eqn.op is not unslice_p:
                return False
            starts, stops = eqn.params["starts"], eqn.params["stops"]
            lead = len(starts) - len(region)
            return any(stops[lead + i] <= lo or starts[lead + i] >= hi for i, (lo, hi) in enumerate(region))
    return False


# --- Hermitian matrices from one triangle (cholesky, eigh of complex matrices) ----------------
# LAPACK's zpotrf and zheevd read the strictly lower triangle and the real part of the
# diagonal: the imaginary part of the diagonal is ignored, so its derivative is 0.

def mH(x: Sym) -> Sym:
    """The conjugate transpose of each matrix (the transpose for real x)."""
    return conj(mT(x)) if x.dtype.kind == "c" else mT(x)


def conj_if_complex(x: Sym) -> Sym:
    return conj(x) if x.dtype.kind == "c" else x


def real_part_as_complex(x: Sym) -> Sym:
    """Re(x) in x's complex dtype (x itself when real)."""
    return cast(real(x), x.dtype) if x.dtype.kind == "c" else x


def hermitian_from_lower(t: Sym) -> Sym:
    """The symmetric (Hermitian, for complex t) matrix whose lower triangle is t's."""
    if t.dtype.kind == "c":
        below = tril(t, -1)
        return below + mH(below) + diag_embed(real_part_as_complex(diag_part(t)))
    return tril(t) + mT(tril(t, -1))


def to_lower(g: Sym) -> Sym:
    """The gradient with respect to t of a function of hermitian_from_lower(t), given the one of
    the Hermitian matrix (JAX's pairing: the adjoint of X -> X^H is G -> G^H)."""
    if g.dtype.kind == "c":
        return tril(g, -1) + tril(mH(g), -1) + diag_embed(real_part_as_complex(diag_part(g)))
    return tril(g) + tril(mT(g), -1)
