"""Contractions and linear algebra: matmul, dot, vdot, inner, outer, tensordot,
einsum, trace, diag and norm, plus Tensor's `@` and `.dot`.

Every contraction here becomes the one IR op `contract` (see
gradtape/ir/ops/contract.py) with a spec built from NumPy's conventions, so
`x @ w` traces to `contract[spec='ij,jk->ik'] x w`. Batch broadcasting never
materializes copies: a size-1 batch dim is squeezed away and its letter
left out of that operand, which `contract` then treats as a broadcast.
Diagonals ('ii->i', trace, diag) gather their elements and `diag` of a vector
scatters into zeros: never a product with an identity mask, which would turn
an inf or NaN off the diagonal into NaN (0 * inf).
"""
from __future__ import annotations

import functools

import numpy as np

from ..ir.ops.contract import contract_p
from ..ir.ops.linalg_decomp import svd_p, svd_sizes
from ..ir.ops.indexing import gather_p, scatter_add_p, slice_p
from ..ir.ops.layout import reshape_p, transpose_p
from ..ir.ops.reduce import reduce_sum_p
from ..tracer.dispatch import bind
from ..tracer.numpy_dispatch import implements
from ..tracer.tensor import Tensor
from . import reductions
from .einsum_forms import contraction_order, sublist_subscripts
from ._promote import convert, inexact_operand, normalize_axis, promote, shape_of
from .complex_numbers import conj, real
from .elementwise import absolute, cast, multiply, not_equal, power, sqrt
from .fresh import always_new

__all__ = [
    "matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum",
    "trace", "diag", "norm",
]

_ALPHABET = "abcdefghijklmnopqrstuvwxyz"


# --- small emitters over Tensors and arrays ------------------------------------------

def _contract(a, b, la, lb, lo):
    return bind(contract_p, a, b, spec=f"{''.join(la)},{''.join(lb)}->{''.join(lo)}")


def _sum(x, axes):
    axes = tuple(sorted(int(a) for a in axes))
    return bind(reduce_sum_p, x, axes=axes) if axes else x


def _reshape(x, shape):
    shape = tuple(int(d) for d in shape)
    return x if tuple(shape_of(x)) == shape else bind(reshape_p, x, shape=shape)


def _transpose(x, perm):
    perm = tuple(int(p) for p in perm)
    return x if perm == tuple(range(len(perm))) else bind(transpose_p, x, perm=perm)


def _diagonal(x, p, q, k=0):
    """The k-th diagonal of axes p and q of x, as x's last axis (the others keep their order).

    A gather of the diagonal's elements from those two axes flattened into one.
    """
    shape = tuple(shape_of(x))
    n, m = shape[p], shape[q]
    rest = [a for a in range(len(shape)) if a not in (p, q)]
    x = _reshape(_transpose(x, rest + [p, q]), [shape[a] for a in rest] + [n * m])
    rows = np.arange(max(0, min(n, m - k) if k >= 0 else min(m, n + k)), dtype=np.int64) + max(-k, 0)
    return bind(gather_p, x, rows * m + rows + k, axis=len(rest))


def _dtype(x):
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def _operands(name, *xs):
    """Promote to one dtype; contractions take numbers, not bools."""
    xs = promote(*xs)
    dtype = xs[0].dtype  # promote made them all NumPy values or Tensors
    if dtype.kind not in "fciu":
        raise TypeError(
            f"{name}: operands must be integer or floating point, got dtype {dtype}; "
            "cast them first (e.g. x.astype('float64'))"
        )
    return xs


def _letters(n, name, exclude=""):
    pool = [c for c in _ALPHABET if c not in exclude]
    if n > len(pool):
        raise ValueError(f"{name}: too many dimensions ({n}); at most {len(pool)} are supported")
    return pool[:n]


def _squeeze_batch(shape, batch, full, letters):
    """Letters of an operand's (right-aligned) batch dims, and the shape that
    drops its size-1 dims that broadcast (None if there are none)."""
    lead = len(full) - len(batch)
    kept, keep_dims = [], []
    for p, d in enumerate(batch):
        if d == full[lead + p]:
            kept.append(letters[lead + p])
            keep_dims.append(d)
    if len(kept) == len(batch):
        return None, kept
    return tuple(keep_dims) + shape[len(batch):], kept


def _broadcast_batch(name, sa, sb, ba, bb):
    try:
        return tuple(np.broadcast_shapes(ba, bb))
    except ValueError:
        raise ValueError(
            f"{name}: shapes {sa} and {sb} have batch dimensions {ba} and {bb}, "
            "which cannot be broadcast together"
        ) from None


# --- matmul, dot, vdot, inner, outer, tensordot -------------------------------------

@implements(np.matmul)
@always_new  # ends in a bind
def matmul(a, b):
    """Matrix product with NumPy's semantics, as `a @ b` / numpy.matmul.

    1-D operands are promoted to a row (first) or column (second) vector and
    that axis is dropped from the result; leading batch dimensions broadcast.

    Args:
      a, b: Tensors or array-likes with at least one dimension.

    Returns:
      A Tensor of shape `batch + (n, m)` (without the axes of 1-D operands).

    Raises:
      ValueError: if an operand is 0-d, the inner dimensions differ or the
        batch dimensions do not broadcast.

    Example::

        >>> gradtape.matmul(gradtape.constant(np.ones((2, 3))), np.ones((3, 4))).shape
        (2, 4)
    """
    a, b = _operands("matmul", a, b)
    shape_a, shape_b, spec = _matmul_plan(a.shape, b.shape)  # promote made them arrays or Tensors
    if shape_a is not None:
        a = bind(reshape_p, a, shape=shape_a)
    if shape_b is not None:
        b = bind(reshape_p, b, shape=shape_b)
    return bind(contract_p, a, b, spec=spec)


@functools.lru_cache(maxsize=1024)
def _matmul_plan(sa, sb):
    """(reshape of a or None, reshape of b or None, contract spec) for matmul."""
    if not sa or not sb:
        raise ValueError(
            f"matmul: operands must have at least one dimension, got shapes {sa} and {sb}; "
            "use multiply (*) to scale by a scalar"
        )
    ia, ib = len(sa) - 1, (0 if len(sb) == 1 else len(sb) - 2)
    if sa[ia] != sb[ib]:
        raise ValueError(
            f"matmul: shapes {sa} and {sb} do not match: {sa[ia]} (dim {ia} of the first) "
            f"!= {sb[ib]} (dim {ib} of the second)"
        )
    ba, bb = sa[:-2], sb[:-2]
    batch = _broadcast_batch("matmul", sa, sb, ba, bb)
    letters = _letters(len(batch), "matmul", exclude="ijk")
    shape_a, la = _squeeze_batch(sa, ba, batch, letters)
    shape_b, lb = _squeeze_batch(sb, bb, batch, letters)
    la += ["i", "j"] if len(sa) >= 2 else ["j"]
    lb += ["j", "k"] if len(sb) >= 2 else ["j"]
    lo = list(letters) + (["i"] if len(sa) >= 2 else []) + (["k"] if len(sb) >= 2 else [])
    return shape_a, shape_b, f"{''.join(la)},{''.join(lb)}->{''.join(lo)}"


@implements(np.dot)
def dot(a, b, out=None):
    """Dot product with NumPy's semantics (numpy.dot).

    Scalars multiply; two 1-D operands give their inner product; otherwise the
    last axis of `a` is summed against `b`'s only axis (1-D) or second-to-last.

    Args:
      a, b: Tensors or array-likes.

    Returns:
      A Tensor of shape ``a.shape[:-1] + b.shape[:-2] + b.shape[-1:]``.

    Raises:
      ValueError: naming both shapes if the summed dimensions differ.

    Example::

        >>> gradtape.dot(gradtape.constant([1.0, 2.0]), [3.0, 4.0]).numpy()
        array(11.)
    """
    _no_out("dot", out)
    a, b = _operands("dot", a, b)
    sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
    if not sa or not sb:
        return multiply(a, b)
    ia, ib = len(sa) - 1, (0 if len(sb) == 1 else len(sb) - 2)
    if sa[ia] != sb[ib]:
        raise ValueError(
            f"dot: shapes {sa} and {sb} not aligned: {sa[ia]} (dim {ia} of the first) "
            f"!= {sb[ib]} (dim {ib} of the second)"
        )
    letters = _letters(len(sa) + len(sb) - 1, "dot")
    la = letters[: len(sa)]
    lb = letters[len(sa):]
    lb.insert(ib, la[-1])
    lo = la[:-1] + [c for c in lb if c != la[-1]]
    return _contract(a, b, la, lb, lo)


@implements(np.vdot)
def vdot(a, b):
    """Dot product of the flattened operands, conjugating a if it is complex (numpy.vdot).

    Example::

        >>> gradtape.vdot(gradtape.constant(np.ones((2, 2))), np.ones(4)).numpy()
        array(4.)
    """
    a, b = _operands("vdot", a, b)
    sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
    na, nb = int(np.prod(sa, dtype=np.int64)), int(np.prod(sb, dtype=np.int64))
    if na != nb:
        raise ValueError(f"vdot: shapes {sa} and {sb} have different sizes {na} and {nb}")
    if _dtype(a).kind == "c":
        a = conj(a)
    return _contract(_reshape(a, (na,)), _reshape(b, (nb,)), "i", "i", "")


@implements(np.inner)
def inner(a, b):
    """Inner product over the last axes (numpy.inner); scalars multiply.

    Returns:
      A Tensor of shape ``a.shape[:-1] + b.shape[:-1]``.

    Example::

        >>> gradtape.inner(gradtape.constant(np.ones((2, 3))), np.ones((4, 3))).shape
        (2, 4)
    """
    a, b = _operands("inner", a, b)
    sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
    if not sa or not sb:
        return multiply(a, b)
    if sa[-1] != sb[-1]:
        raise ValueError(
            f"inner: shapes {sa} and {sb} do not match: {sa[-1]} (last dim of the first) "
            f"!= {sb[-1]} (last dim of the second)"
        )
    letters = _letters(len(sa) + len(sb) - 1, "inner")
    la = letters[: len(sa)]
    lb = letters[len(sa):] + [la[-1]]
    return _contract(a, b, la, lb, la[:-1] + lb[:-1])


@implements(np.outer)
def outer(a, b, out=None):
    """Outer product of the flattened operands (numpy.outer).

    Example::

        >>> gradtape.outer(gradtape.constant([1.0, 2.0]), [1.0, 2.0, 3.0]).shape
        (2, 3)
    """
    _no_out("outer", out)
    a, b = _operands("outer", a, b)
    na = int(np.prod(shape_of(a), dtype=np.int64))
    nb = int(np.prod(shape_of(b), dtype=np.int64))
    return _contract(_reshape(a, (na,)), _reshape(b, (nb,)), "i", "j", "ij")


def _axes_list(name, axes, ndim, which):
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    out = []
    for ax in axes:
        ax = int(ax)
        if not -ndim <= ax < ndim:
            raise np.exceptions.AxisError(
                f"{name}: axis {ax} is out of bounds for the {which} operand of dimension {ndim}"
            )
        out.append(ax % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {axes} of the {which} operand")
    return out


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    """Sum products over chosen axes (numpy.tensordot).

    Args:
      a, b: Tensors or array-likes.
      axes: an int N (the last N axes of `a` against the first N of `b`) or a
        pair of sequences `(axes_a, axes_b)` of equal length.

    Returns:
      A Tensor whose axes are `a`'s free axes followed by `b`'s.

    Raises:
      ValueError: naming both shapes if summed dimensions differ.

    Example::

        >>> gradtape.tensordot(gradtape.constant(np.ones((2, 3, 4))), np.ones((3, 4, 5))).shape
        (2, 5)
    """
    a, b = _operands("tensordot", a, b)
    sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > len(sa) or n > len(sb):
            raise ValueError(
                f"tensordot: axes={n} needs {n} axes in each operand, got shapes {sa} and {sb}"
            )
        axes_a, axes_b = list(range(len(sa) - n, len(sa))), list(range(n))
    else:
        try:
            xa, xb = axes
        except (TypeError, ValueError):
            raise ValueError(
                f"tensordot: axes must be an int or a pair of sequences, got {axes!r}"
            ) from None
        axes_a = _axes_list("tensordot", xa, len(sa), "first")
        axes_b = _axes_list("tensordot", xb, len(sb), "second")
        if len(axes_a) != len(axes_b):
            raise ValueError(
                f"tensordot: axes {axes!r} name {len(axes_a)} axes of the first operand "
                f"but {len(axes_b)} of the second"
            )
    for i, j in zip(axes_a, axes_b):
        if sa[i] != sb[j]:
            raise ValueError(
                f"tensordot: shapes {sa} and {sb} do not match along the summed axes: "
                f"{sa[i]} (dim {i} of the first) != {sb[j]} (dim {j} of the second)"
            )
    letters = _letters(len(sa) + len(sb) - len(axes_a), "tensordot")
    la = letters[: len(sa)]
    it = iter(letters[len(sa):])  # b's summed axes reuse a's letters
    lb = [la[axes_a[axes_b.index(j)]] if j in axes_b else next(it) for j in range(len(sb))]
    lo = [c for i, c in enumerate(la) if i not in axes_a]
    lo += [c for j, c in enumerate(lb) if j not in axes_b]
    return _contract(a, b, la, lb, lo)


def _no_out(name, out):
    if out is not None:
        raise TypeError(
            f"{name}: the out= argument is not supported (gradtape tensors are immutable)"
        )


# --- einsum ---------------------------------------------------------------------------
#
# Labels are the user's letters, or ("...", k) for the ellipsis dim k places
# from the end (ellipsis dims align from the right, like broadcasting), or
# ("diag", n) for the fresh label of a diagonal. Each pairwise contraction
# maps its labels to lowercase letters for the `contract` spec.

def _label_text(label):
    return "'...'" if isinstance(label, tuple) else repr(label)


def _term_labels(subscripts, term, shape, i):
    head, ell, tail = term.partition("...")
    if "." in head + tail:
        raise ValueError(f"einsum: subscripts {subscripts!r} have a '.' that is not part of '...'")
    for c in head + tail:
        if not (c.isascii() and c.isalpha()):
            raise ValueError(
                f"einsum: invalid subscript {c!r} in {subscripts!r}; use letters and '...'"
            )
    named = len(head) + len(tail)
    n_ell = len(shape) - named
    if n_ell < 0 or (not ell and n_ell != 0):
        raise ValueError(
            f"einsum: operand {i} has shape {shape} (rank {len(shape)}) but its subscripts "
            f"{term!r} give it {named} indices" + ("" if ell else "; add '...' to broadcast")
        )
    return list(head) + [("...", n_ell - 1 - p) for p in range(n_ell)] + list(tail), n_ell


@functools.lru_cache(maxsize=1024)
def _parse_einsum(subscripts, shapes):
    """(labels of each operand, output labels, size of each label)."""
    s = subscripts.replace(" ", "")
    if s.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} have more than one '->'")
    explicit = "->" in s
    ins, out = s.split("->") if explicit else (s, None)
    terms = ins.split(",")
    if len(terms) != len(shapes):
        raise ValueError(
            f"einsum: subscripts {subscripts!r} name {len(terms)} operands, got {len(shapes)}"
        )
    parsed = [_term_labels(subscripts, t, sh, i) for i, (t, sh) in enumerate(zip(terms, shapes))]
    labels = [p[0] for p in parsed]
    n_ell = max(p[1] for p in parsed)
    ell = [("...", n_ell - 1 - p) for p in range(n_ell)]
    if explicit:
        head, dots, tail = out.partition("...")
        if "." in head + tail or any(not (c.isascii() and c.isalpha()) for c in head + tail):
            raise ValueError(f"einsum: invalid output subscripts {out!r} in {subscripts!r}")
        if n_ell and not dots:
            raise ValueError(
                f"einsum: output subscripts {out!r} have no '...', but the operands' '...' "
                f"spans {n_ell} dimensions; add '...' to the output"
            )
        out_labels = list(head) + (ell if dots else []) + list(tail)
        seen = {c for labs in labels for c in labs}
        for c in head + tail:
            if c not in seen:
                raise ValueError(
                    f"einsum: output subscript {c!r} of {subscripts!r} appears in no operand"
                )
            if (head + tail).count(c) > 1:
                raise ValueError(f"einsum: output subscript {c!r} of {subscripts!r} is repeated")
    else:
        chars = [c for labs in labels for c in labs if isinstance(c, str)]
        out_labels = ell + sorted(c for c in set(chars) if chars.count(c) == 1)
    size, where = {}, {}
    for i, (labs, shape) in enumerate(zip(labels, shapes)):
        for p, (label, d) in enumerate(zip(labs, shape)):
            if label not in size or size[label] == 1:
                if label in size and d == 1:
                    continue
                size[label], where[label] = d, (i, p)
            elif d != 1 and d != size[label]:
                i0, p0 = where[label]
                raise ValueError(
                    f"einsum: operands disagree on the size of index {_label_text(label)} in "
                    f"{subscripts!r}: {size[label]} (operand {i0}, dim {p0}, shape {shapes[i0]}) "
                    f"!= {d} (operand {i}, dim {p}, shape {shape})"
                )
    return labels, out_labels, size


def _contract_labels(a, b, la, lb, lo):
    """contract with arbitrary labels, renamed to letters (lowercase letters stay)."""
    names = {}
    taken = {c for c in la + lb if isinstance(c, str) and c in _ALPHABET}
    start = _ALPHABET.index(max(taken)) + 1 if taken else 0  # 'ii' -> 'ij,ij->i'
    free = iter(c for c in _ALPHABET[start:] + _ALPHABET[:start] if c not in taken)
    for label in la + lb:
        if label not in names:
            if isinstance(label, str) and label in _ALPHABET:
                names[label] = label
            else:
                names[label] = next(free, None)
                if names[label] is None:
                    raise ValueError(
                        "einsum: a pairwise contraction needs more than 26 distinct indices"
                    )
    return _contract(a, b, [names[c] for c in la], [names[c] for c in lb], [names[c] for c in lo])


def _prepare_operand(x, labs, size):
    """Squeeze dims that broadcast, then take the diagonal of each repeated label."""
    shape = tuple(shape_of(x))
    keep = [p for p, label in enumerate(labs) if not (shape[p] == 1 and size[label] != 1)]
    if len(keep) != len(labs):
        x = _reshape(x, [shape[p] for p in keep])
        labs = [labs[p] for p in keep]
    while len(set(labs)) != len(labs):
        q = next(q for q, label in enumerate(labs) if label in labs[:q])
        label = labs[q]
        p = labs.index(label)
        x = _diagonal(x, p, q)
        labs = [c for a, c in enumerate(labs) if a not in (p, q)] + [label]
    return x, labs


@implements(np.einsum)
def einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """Einstein summation (numpy.einsum), differentiable.

    Supports explicit ('ij,jk->ik') and implicit ('ij,jk') output, '...'
    broadcasting, any number of operands (contracted pairwise: left to
    right, or in the order numpy.einsum_path picks when `optimize` is True,
    'greedy', 'optimal' or an explicit path), repeated indices within an
    operand ('ii->i' diagonal, 'ii' trace), and NumPy's sublist form
    einsum(a, [0, 1], b, [1, 2], [0, 2]) (ints 0-51 and Ellipsis).

    Args:
      subscripts: the subscripts string (or, in the sublist form, the first operand).
      *operands: Tensors or array-likes, one per comma-separated term (in the
        sublist form: sublist, operand, sublist, ..., optionally the output sublist).
      dtype: optional dtype to cast the operands to first.
      optimize: False (left to right) or anything numpy.einsum_path accepts.

    Returns:
      A Tensor with the output subscripts' shape.

    Raises:
      ValueError: naming the subscripts and shapes on a mismatch.

    Example::

        >>> x, y = gradtape.constant(np.ones((5, 2, 3))), np.ones((5, 3, 4))
        >>> gradtape.einsum("bij,bjk->bik", x, y).shape   # batched matmul
        (5, 2, 4)
    """
    _no_out("einsum", out)
    if not isinstance(subscripts, str):
        subscripts, operands = sublist_subscripts((subscripts,) + operands)
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    if dtype is not None:
        operands = [convert(x, dtype) for x in operands]
    operands = _operands("einsum", *operands)
    labels, out_labels, size = _parse_einsum(
        subscripts, tuple(tuple(shape_of(x)) for x in operands)
    )
    prepared = [_prepare_operand(x, labs, size) for x, labs in zip(operands, labels)]
    shapes = [tuple(shape_of(x)) for x in operands]
    for i, j in contraction_order(subscripts, shapes, optimize):
        (b, lb), (a, la) = prepared.pop(max(i, j)), prepared.pop(min(i, j))
        if not prepared:
            lo = out_labels
        else:
            later = {c for _, labs in prepared for c in labs} | set(out_labels)
            lo = [c for c in dict.fromkeys(la + lb) if c in later]
        prepared.append((_contract_labels(a, b, la, lb, lo), list(lo)))
    (cur, cur_labs), = prepared
    if len(operands) == 1:
        cur = _sum(cur, [p for p, c in enumerate(cur_labs) if c not in out_labels])
        cur_labs = [c for c in cur_labs if c in out_labels]
        cur = _transpose(cur, [cur_labs.index(c) for c in out_labels])
    return cur


# --- trace, diag ----------------------------------------------------------------------

@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal (numpy.trace): `sum_i a[i, i + offset]`.

    Args:
      a: a Tensor or array-like with at least two dimensions.
      offset: which diagonal (positive: above the main one).
      axis1, axis2: the axes whose diagonal is summed; the others remain.
      dtype: optional dtype of the result (integers widen as in numpy.trace).

    Returns:
      A Tensor of `a`'s shape without `axis1` and `axis2`.

    Example::

        >>> gradtape.trace(gradtape.constant(np.eye(3))).numpy()
        array(3.)
    """
    _no_out("trace", out)
    (a,) = _operands("trace", a)
    shape = tuple(shape_of(a))
    if len(shape) < 2:
        raise ValueError(f"trace: needs an operand with at least 2 dimensions, got shape {shape}")
    ax1, ax2 = _axes_list("trace", [axis1, axis2], len(shape), "first")
    want = np.dtype(dtype) if dtype is not None else np.sum(np.zeros(0, _dtype(a))).dtype
    a = convert(a, want)
    return _sum(_diagonal(a, ax1, ax2, int(offset)), [len(shape) - 2])


@implements(np.diag)
def diag(v, k=0):
    """The k-th diagonal of a matrix, or a matrix with `v` on its k-th diagonal (numpy.diag).

    Args:
      v: a 1-D or 2-D Tensor or array-like.
      k: the diagonal (positive: above the main one).

    Returns:
      For 1-D `v` of length n, a Tensor of shape (n + abs(k), n + abs(k)); for 2-D
      `v`, the 1-D Tensor of its k-th diagonal.

    Example::

        >>> gradtape.diag(gradtape.constant([1.0, 2.0])).numpy()
        array([[1., 0.],
               [0., 2.]])
    """
    (v,) = _operands("diag", v)
    shape, k = tuple(shape_of(v)), int(k)
    dtype = _dtype(v)
    if len(shape) == 1:
        n = shape[0]
        size = n + abs(k)
        rows = np.arange(n, dtype=np.int64) + max(-k, 0)
        flat = bind(scatter_add_p, v, rows * size + rows + k, axis=0, size=size * size)
        return _reshape(flat, (size, size))
    if len(shape) == 2:
        return _diagonal(v, 0, 1, k)
    raise ValueError(f"diag: input must be 1-D or 2-D, got shape {shape}")


# --- norm -------------------------------------------------------------------------------

def _max(x, axis, neg=False):
    # NumPy's norms take their maxima with initial=0 (an empty matrix's norm is 0); minima have none
    return reductions.extreme(x, axis, False, largest=not neg, initial=np._NoValue if neg else 0, name="norm")


def _vector_norm(x, ord, ax):
    if ord is None or ord == 2:
        return sqrt(_sum(multiply(x, x), (ax,)))
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    if ord == np.inf:
        return _max(absolute(x), ax)
    if ord == -np.inf:
        return _max(absolute(x), ax, neg=True)
    if ord == 0:
        return _sum(cast(not_equal(x, 0), _dtype(x)), (ax,))
    if ord == 1:
        return _sum(absolute(x), (ax,))
    return power(_sum(power(absolute(x), ord), (ax,)), 1.0 / ord)


def _matrix_norm(x, ord, row, col):
    if ord is None or ord == "fro":
        return sqrt(_sum(multiply(x, x), (row, col)))
    if ord in (1, -1):
        summed = _sum(absolute(x), (row,))
        return _max(summed, col - (col > row), neg=ord == -1)
    if ord in (np.inf, -np.inf):
        summed = _sum(absolute(x), (col,))
        return _max(summed, row - (row > col), neg=ord == -np.inf)
    if ord in (2, -2, "nuc"):
        ndim = len(shape_of(x))
        rest = [a for a in range(ndim) if a not in (row, col)]
        s = _singular_values(_transpose(x, rest + [row, col]))
        last = len(rest)
        if ord == "nuc":
            return _sum(s, (last,))
        return _max(s, last, neg=ord == -2)
    raise ValueError(f"norm: invalid norm order {ord!r} for matrices")


def _singular_values(x):
    """The singular values of each matrix (last two axes), computed in float64 (complex128) as
    numpy.linalg does, in x's real dtype."""
    dtype = _dtype(x)
    shape = tuple(shape_of(x))
    m, n = shape[-2:]
    u, k, _ = svd_sizes(m, n, False)
    double = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    packed = bind(svd_p, convert(x, double), full_matrices=False)
    s = bind(slice_p, packed, starts=(0,) * (len(shape) - 2) + (m * u,),
             stops=shape[:-2] + (m * u + k,), steps=(1,) * (len(shape) - 1))
    if np.dtype(dtype).kind == "c":
        return convert(real(s), np.finfo(dtype).dtype)
    return convert(s, dtype)


def _real_norm_operand(x, ord, axis):
    """|x| for complex x, except for the singular-value norms (2, -2, 'nuc' of matrices): every
    other norm is a norm of the absolute values, as NumPy computes it."""
    if x.dtype.kind != "c":
        return x
    matrix = (axis is None and len(shape_of(x)) == 2) or (axis is not None and np.ndim(axis) == 1 and len(axis) == 2)
    return x if matrix and ord in (2, -2, "nuc") else absolute(x)


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm (numpy.linalg.norm).

    Vector norms (one axis): ord None or 2 (Euclidean), 1, inf, -inf, 0 and
    any other number p (`sum(|x|**p)**(1/p)`). Matrix norms (two axes): None
    or 'fro', 1, -1, inf, -inf, and through the singular values 2 (the
    largest), -2 (the smallest) and 'nuc' (their sum). With `axis=None`, a 1-D input gets a vector
    norm, a 2-D input a matrix norm, and `ord=None` is the 2-norm of all
    elements whatever the rank. Integer inputs become float64.

    The Euclidean norm's gradient `x / norm(x)` is undefined at x = 0.

    Args:
      x: a Tensor or array-like.
      ord: the order of the norm.
      axis: None, an int (vector norm) or a pair of ints (matrix norm).
      keepdims: keep the normed axes as size-1 dimensions.

    Returns:
      A Tensor of x's floating dtype.

    Example::

        >>> gradtape.norm(gradtape.constant([3.0, 4.0])).numpy()
        array(5.)
    """
    x = _real_norm_operand(inexact_operand(x), ord, axis)
    ndim = len(shape_of(x))
    if axis is None:
        if ord is None:
            axes = tuple(range(ndim))
            out = sqrt(_sum(multiply(x, x), axes))
            return _reshape(out, (1,) * ndim) if keepdims else out
        if ndim not in (1, 2):
            raise ValueError(
                f"norm: ord={ord!r} with axis=None needs a 1-D or 2-D input, got shape "
                f"{tuple(shape_of(x))}; pass axis"
            )
        axes = tuple(range(ndim))
    else:
        axes = normalize_axis("norm", axis, ndim, sort=False)
    if len(axes) == 1:
        out = _vector_norm(x, ord, axes[0])
    elif len(axes) == 2:
        out = _matrix_norm(x, ord, *axes)
    else:
        raise ValueError(f"norm: axis must name one or two axes, got {axis!r}")
    if keepdims:
        shape = tuple(1 if p in axes else d for p, d in enumerate(shape_of(x)))
        out = _reshape(out, shape)
    return out


# --- Tensor methods ---------------------------------------------------------------------

Tensor.__matmul__ = matmul
Tensor.__rmatmul__ = lambda self, other: matmul(other, self)
Tensor.dot = dot
