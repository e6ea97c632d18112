"""contract: the one binary tensor contraction, einsum-style.

`contract[spec="bij,bjk->bik"] a b` multiplies `a` and `b` elementwise over
the letters they share and sums every letter the output lacks. One op covers
matmul, dot, tensordot, outer, batched matmul and pairwise einsum, so the
adjoint pass and the code generator have one contraction to know.

The spec is strict so that its meaning never depends on data: lowercase
letters, no letter repeated within one operand or in the output, every
output letter from an operand, equal sizes for a shared letter (no
broadcasting; front ends squeeze or broadcast first) and one dtype.

Derivatives are contractions again::

    ct_a = contract[spec="bik,bjk->bij"] ct b      (a's cotangent)

plus a broadcast_to for letters summed out of one operand alone.
"""
from __future__ import annotations

import functools

import numpy as np

from ..builder import Sym, bind
from ..errors import DTypeError, ShapeError
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..types import TensorType
from ._helpers import same_dtype
from .reduce import expand_reduced

__all__ = ["contract_p", "contract"]

_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")

contract_p = new_op("contract", elementwise=False, can_fail_on_values=False, runs_code=False)


@functools.lru_cache(maxsize=4096)
def parse_spec(spec: str) -> tuple:
    """`"ij,jk->ik"` -> `("ij", "jk", "ik")`, or ShapeError naming what is wrong."""
    if not isinstance(spec, str) or spec.count("->") != 1 or spec.count(",") != 1:
        raise ShapeError(
            f"contract: spec {spec!r} is not of the form 'ab,bc->ac' "
            "(two operands, one explicit output)"
        )
    ins, out = spec.split("->")
    a, b = ins.split(",")
    for part, what in ((a, "first operand"), (b, "second operand"), (out, "output")):
        bad = set(part) - _LETTERS
        if bad:
            raise ShapeError(
                f"contract: spec {spec!r} uses {''.join(sorted(bad))!r} in the {what}; "
                "only lowercase letters a-z are allowed"
            )
        if len(set(part)) != len(part):
            raise ShapeError(
                f"contract: spec {spec!r} repeats a letter in the {what} ({part!r}); "
                "take a diagonal with an identity mask first"
            )
    missing = set(out) - set(a) - set(b)
    if missing:
        raise ShapeError(
            f"contract: spec {spec!r} has output letters {''.join(sorted(missing))!r} "
            "that appear in no operand"
        )
    return a, b, out


def _contract_shape(a, b, *, spec):
    la, lb, lo = parse_spec(spec)
    for letters, t, which in ((la, a, "first"), (lb, b, "second")):
        if len(letters) != t.ndim:
            raise ShapeError(
                f"contract[spec={spec!r}]: the {which} operand has shape {t.shape} "
                f"(rank {t.ndim}) but the spec gives it {len(letters)} letters {letters!r}"
            )
    for i, letter in enumerate(la):
        j = lb.find(letter)
        if j >= 0 and a.shape[i] != b.shape[j]:
            raise ShapeError(
                f"contract[spec={spec!r}]: shapes {a.shape} and {b.shape} disagree on "
                f"{letter!r}: {a.shape[i]} (dim {i} of the first) != {b.shape[j]} "
                f"(dim {j} of the second); broadcast the operands first"
            )
    dtype = same_dtype(contract_p, (a, b))
    if dtype.kind not in "fciu":
        raise DTypeError(
            f"contract: operands must be floating point or integer, got {a} and {b}; "
            "cast them first"
        )
    size = dict(zip(la, a.shape))
    size.update(zip(lb, b.shape))
    return a.with_shape([size[c] for c in lo])


# --- the NumPy reference: one matmul after transposes ------------------------------
#
# Every binary contraction is a (batched) matmul: sum out the letters only one
# operand has, then order each operand as (batch, free, contracted) and
# (batch, contracted, free), collapse each group to one axis and call BLAS
# through np.matmul (np.dot drops NaN * 0 for some shapes, e.g. (2, 1) @ (1, 1)
# is [0, 0] for NaN rows: OpenBLAS's small-matrix path); with nothing contracted it is a
# broadcast multiply. Transposes of 2-D operands stay views that BLAS reads
# directly. This covers every spec, so np.einsum is never needed. The plan
# depends only on (spec, shapes) and is built once per signature.


@functools.lru_cache(maxsize=1024)
def _plan(spec: str, a_shape: tuple, b_shape: tuple):
    """The kernel computing `spec` for these shapes (checked by the shape rule)."""
    float64 = np.dtype(np.float64)
    _contract_shape(TensorType(a_shape, float64), TensorType(b_shape, float64), spec=spec)
    la, lb, lo = parse_spec(spec)
    size = dict(zip(la, a_shape))
    size.update(zip(lb, b_shape))
    sum_a = tuple(i for i, c in enumerate(la) if c not in lb and c not in lo)
    sum_b = tuple(i for i, c in enumerate(lb) if c not in la and c not in lo)
    la, lb = (
        "".join(c for c in la if c in lb or c in lo),
        "".join(c for c in lb if c in la or c in lo),
    )
    batch = [c for c in lo if c in la and c in lb]
    free_a = [c for c in la if c in lo and c not in lb]
    free_b = [c for c in lb if c in lo and c not in la]
    summed = [c for c in la if c in lb and c not in lo]

    def prod(letters):
        return int(np.prod([size[c] for c in letters], dtype=np.int64))

    def perm(letters, order):
        p = tuple(letters.index(c) for c in order)
        return None if p == tuple(range(len(p))) else p

    nb, m, k, n = prod(batch), prod(free_a), prod(summed), prod(free_b)
    lead = (nb,) if batch else ()
    if not summed:
        kernel = np.multiply  # a broadcast product: no sum, no BLAS
        form_a, form_b = lead + (m, 1), lead + (1, n)
    else:
        kernel = np.matmul
        form_a, form_b = lead + (m, k), lead + (k, n)
    perm_a = perm(la, batch + free_a + summed)
    perm_b = perm(lb, batch + summed + free_b)
    mid = batch + free_a + free_b
    out_shape = tuple(size[c] for c in mid)
    out_perm = perm("".join(mid), lo)

    def run(a, b):
        dtype = a.dtype
        if sum_a:
            a = np.sum(a, axis=sum_a, dtype=dtype)
        if sum_b:
            b = np.sum(b, axis=sum_b, dtype=dtype)
        if perm_a is not None:
            a = a.transpose(perm_a)
        if perm_b is not None:
            b = b.transpose(perm_b)
        if a.shape != form_a:
            a = a.reshape(form_a)
        if b.shape != form_b:
            b = b.reshape(form_b)
        out = kernel(a, b)
        if out.shape != out_shape:
            out = out.reshape(out_shape)
        if out_perm is not None:
            out = out.transpose(out_perm)
        return out if out.dtype == dtype else out.astype(dtype)

    run.kernel = kernel.__name__
    return run


def _contract_impl(a, b, *, spec):
    a, b = np.asarray(a), np.asarray(b)
    return _plan(spec, a.shape, b.shape)(a, b)


# --- derivatives: contractions of the cotangent with the other operand -------------

def _operand_ct(ct: Sym, other: Sym, lo: str, l_other: str, l_self: str, shape) -> Sym:
    """Cotangent of the operand with letters `l_self`, given the other operand."""
    kept = "".join(c for c in l_self if c in lo or c in l_other)
    r = contract(ct, other, f"{lo},{l_other}->{kept}")
    alone = tuple(i for i, c in enumerate(l_self) if c not in kept)
    return expand_reduced(r, shape, alone) if alone else r


def _contract_vjp(ct, out, a, b, *, spec):
    la, lb, lo = parse_spec(spec)
    return (
        _operand_ct(ct, b, lo, lb, la, a.shape),
        _operand_ct(ct, a, lo, la, lb, b.shape),
    )


def _contract_jvp(ts, out, a, b, *, spec):
    ta, tb = ts
    t_out = None if ta is None else contract(ta, b, spec)
    if tb is not None:
        t_b = contract(a, tb, spec)
        t_out = t_b if t_out is None else t_out + t_b
    return t_out


# --- batching: the batch axis is one more letter -------------------------------------

def batched_spec(spec: str, batched) -> str:
    """The spec with a fresh letter for the leading batch axis of the batched operands.

    The letter is the first one the spec does not use (`a` unless taken).
    With one operand batched it is one more free letter of that operand, so
    the product stays one GEMM (`ij,j->i` becomes `ij,aj->ai`: M = i,
    N = a); with both batched it is a batch letter of both and the output
    (`ij,jk->ik` becomes `aij,ajk->aik`: one GEMM per batch element).
    """
    la, lb, lo = parse_spec(spec)
    free = sorted(_LETTERS - set(la + lb))
    if not free:
        raise ShapeError(f"contract: spec {spec!r} uses every letter; none is left for a batch axis")
    z = free[0]
    return f"{z + la if batched[0] else la},{z + lb if batched[1] else lb}->{z + lo}"


shape_rules[contract_p] = _contract_shape
impls[contract_p] = _contract_impl
vjp_rules[contract_p] = _contract_vjp
jvp_rules[contract_p] = _contract_jvp
batching_rules[contract_p] = lambda n, ins, batched, *, spec: contract(
    ins[0], ins[1], batched_spec(spec, batched)
)


def contract(a, b, spec: str) -> Sym:
    """Emit `contract[spec] a b`, e.g. `contract(x, w, "ij,jk->ik")` for x @ w."""
    return bind(contract_p, a, b, spec=spec)
