"""A contraction with a diagonal matrix `I * v` becomes a product with v: no O(n^3) matmul.

    { x:f64[100] . c:f64[100,100] = <identity> ; g:f64[100] = cos x ; h = mul c g ;
      i:f64[100,1000] = contract[spec='ij,aj->ai'] A h -> i }
 -> { ... t:f64[100,1000] = transpose[perm=(1, 0)] A ; w:f64[100,1] = reshape g ;
      i:f64[100,1000] = mul t w -> i }

Forward mode seeds the identity as the tangent of the inputs (built by
equations: ir/jacobians.py), and the first elementwise op's JVP multiplies
it by a vector: the seed becomes diag(cos x), and the next contraction
(A @ that, for `A @ sin(x)`) a matrix product of n^2 m multiply-adds where
a scaling of A's columns (n m) is the same. The optimizer already folds a
contraction with the identity itself (a transpose); this is the same for a
diagonal. Values are unchanged: each element is one product, as the matrix
product's only nonzero term (plus zeros).
"""
from __future__ import annotations

from .core import Eqn, Function, Var
from .ops.contract import contract_p, parse_spec
from .ops.elementwise import mul_p
from .ops.layout import reshape_p, transpose_p
from .optimize import _is_identity_matrix
from .passes import splice
from .types import TensorType


def fold_diagonal_seeds(fn: Function) -> Function:
    """Rewrite each `contract(x, mul(I, v))` that sums one of the diagonal's letters against x
    and keeps the other as a product of x (relabeled) with v."""
    defining = {v: eqn for eqn in fn.eqns for v in eqn.outvars}
    replaced = {}
    for eqn in fn.eqns:
        if eqn.op is contract_p:
            new = _folded(eqn, defining)
            if new is not None:
                replaced[eqn.outvars[0]] = new
    return splice(fn, replaced, set()) if replaced else fn


def _diagonal(a, defining):
    """The (n,) vector v when `a` is mul(I, v) of an n x n identity I (v of shape (n,), (1, n)
    or (n, 1)), else None."""
    eqn = defining.get(a) if type(a) is Var else None
    if eqn is None or eqn.op is not mul_p or len(a.type.shape) != 2:
        return None
    n = a.type.shape[0]
    for eye, v in (eqn.inputs, eqn.inputs[::-1]):
        if _is_identity_matrix(eye, defining) and eye.type.shape == (n, n) and v.type.shape in ((n,), (1, n), (n, 1)):
            return v
    return None


def _folded(eqn, defining):
    la, lb, lo = parse_spec(eqn.params["spec"])
    for x, lx, d, ld in ((eqn.inputs[0], la, eqn.inputs[1], lb), (eqn.inputs[1], lb, eqn.inputs[0], la)):
        v = _diagonal(d, defining)
        if v is None:
            continue
        for p, q in ((ld[0], ld[1]), (ld[1], ld[0])):  # q summed against x, p kept
            if q in lx and q not in lo and p not in lx and p in lo:
                renamed = lx.replace(q, p)
                if sorted(renamed) != sorted(lo):
                    continue  # x has other letters summed away: not a scaling
                return _scaled(eqn, x, renamed, lo, v, p)
    return None


def _scaled(eqn, x, renamed, lo, v, p):
    out = eqn.outvars[0]
    dtype = out.type.dtype
    perm = tuple(renamed.index(c) for c in lo)
    eqns = []
    if perm != tuple(range(len(perm))):
        moved = Var(TensorType(out.type.shape, dtype))
        eqns.append(Eqn(transpose_p, (x,), {"perm": perm}, (moved,)))
        x = moved
    shape = tuple(out.type.shape[k] if c == p else 1 for k, c in enumerate(lo))
    column = Var(TensorType(shape, v.type.dtype))
    eqns.append(Eqn(reshape_p, (v,), {"shape": shape}, (column,)))
    eqns.append(Eqn(mul_p, (x, column), {}, (out,)))
    return eqns


__all__ = ["fold_diagonal_seeds"]
