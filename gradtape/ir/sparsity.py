"""Sparsity patterns of Jacobians, read from the IR, and colouring their columns.

`jacobian_pattern(fn, wrt, out)` says which entries of d out / d invars[wrt]
can be nonzero, without evaluating any derivative: each Var gets the set of
input elements every one of its elements depends on, a boolean matrix
(Var elements x input elements, both in C order) propagated equation by
equation. For a banded residual:

    { a:f64[5] . b = slice[(1,)..(5,)] a ; c = slice[(0,)..(4,)] a ; d = sub b c -> d }
    pattern of d: row i = {i, i + 1}

The propagation is conservative (it never misses a structural nonzero) and
tight for the common structure:

  - elementwise ops, with broadcasting: row i of the output is the union of
    the rows its operands' elements at i broadcast from;
  - ops declared `data_movement` (broadcast_to, reshape, transpose, slice,
    unslice, pad, concatenate) and gather with known indices: the op's NumPy
    reference is run on arrays of element ids, which tells which operand
    element each output element reads (exact, whatever the op);
  - gather/scatter_add with traced indices: every element along the
    indexed axis; reductions: the union over each reduced group; contract:
    the union over the contracted letters;
  - a constant operand's exact zeros cut dependencies in `mul` and
    `contract` (so `A @ x` with a constant tridiagonal A is tridiagonal;
    like other sparse AD tools this takes 0 * inf to be 0), and a constant
    `where` condition selects one branch per element;
  - `call` recurses into its sub-Function; nondifferentiable ops (and
    stop_gradient), ops declared `zero_derivative` (sign, floor, ceil,
    round) and every non-float value cut dependencies; an op without a rule
    here (e.g. custom_gradient) makes each output element depend on
    everything its operands depend on.

Values computed from constants alone are evaluated (when small, and not
for ops declared `runs_code`) so that indices, masks and matrices built
inside the function count as constants.

`colour_columns(pattern)` colours the column intersection graph (columns
that share a row are adjacent) with networkx, so that columns of one colour
can be summed into one seed of a compressed Jacobian J @ S.
"""
from __future__ import annotations

import numpy as np

from .core import Function, Literal, Var
from .errors import IRError
from .op import impls
from .ops.call import call_p
from .ops.contract import contract_p, parse_spec
from .ops.elementwise import mul_p, where_p
from .ops.indexing import gather_p, pad_p, scatter_add_p
from .ops.reduce import reduce_max_p, reduce_min_p, reduce_prod_p, reduce_sum_p

__all__ = ["Pattern", "jacobian_pattern", "colour_columns", "column_intersection_graph"]

# Constants computed inside a Function are evaluated up to this many elements.
_CONST_LIMIT = 1 << 20
# A contraction with a constant operand looks at its zeros up to this grid size.
_GRID_LIMIT = 1 << 24


class Pattern:
    """A boolean sparse matrix in CSR form: `indices[indptr[i]:indptr[i + 1]]`
    are the (sorted, unique) columns of row i.

    Rows index the elements of a value (output) in C order; columns the
    elements of the differentiated input in C order.

    Attributes:
      indptr: int64[rows + 1]; indices: int64[nnz]; shape: (rows, cols).
    """

    __slots__ = ("indptr", "indices", "shape")

    def __init__(self, indptr, indices, shape):
        self.indptr = indptr
        self.indices = indices
        self.shape = (int(shape[0]), int(shape[1]))

    @classmethod
    def identity(cls, n: int) -> "Pattern":
        ids = np.arange(n, dtype=np.int64)
        return cls(np.arange(n + 1, dtype=np.int64), ids, (n, n))

    @classmethod
    def empty(cls, rows: int, cols: int) -> "Pattern":
        return cls(np.zeros(rows + 1, np.int64), np.zeros(0, np.int64), (rows, cols))

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def row_ids(self) -> np.ndarray:
        """The row of each stored entry (the COO row array)."""
        return np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))

    def coo(self) -> tuple:
        """`(rows, cols)` of the nonzeros, row-major."""
        return self.row_ids(), self.indices

    def toarray(self) -> np.ndarray:
        dense = np.zeros(self.shape, np.bool_)
        dense[self.coo()] = True
        return dense

    def to_scipy(self):
        """The pattern as a `scipy.sparse.csr_array` of bools (needs scipy)."""
        import scipy.sparse

        data = np.ones(self.nnz, np.bool_)
        return scipy.sparse.csr_array((data, self.indices, self.indptr), shape=self.shape)

    def same_as(self, other: "Pattern") -> bool:
        return self is other or (
            self.shape == other.shape
            and np.array_equal(self.indptr, other.indptr)
            and np.array_equal(self.indices, other.indices)
        )

    def gather_rows(self, src) -> "Pattern":
        """Row i of the result is row src[i] of this pattern (empty where src[i] < 0)."""
        src = np.asarray(src, np.int64).ravel()
        valid = src >= 0
        at = np.where(valid, src, 0)
        starts = self.indptr[at]
        lengths = np.where(valid, self.indptr[at + 1] - starts, 0)
        indptr = np.zeros(len(src) + 1, np.int64)
        np.cumsum(lengths, out=indptr[1:])
        offsets = np.repeat(starts - indptr[:-1], lengths)
        indices = self.indices[offsets + np.arange(indptr[-1], dtype=np.int64)]
        return Pattern(indptr, indices, (len(src), self.shape[1]))

    def compose(self, r, k, rows: int) -> "Pattern":
        """The result's row r[e] holds row k[e] of this pattern, for every pair e
        (a boolean product S @ self with S given by its nonzeros (r, k))."""
        r = np.asarray(r, np.int64).ravel()
        part = self.gather_rows(k)
        return from_coo(np.repeat(r, np.diff(part.indptr)), part.indices, (rows, self.shape[1]))

    def __repr__(self):
        return f"Pattern(shape={self.shape}, nnz={self.nnz})"


def from_coo(rows, cols, shape) -> Pattern:
    """The Pattern with nonzeros at (rows, cols); duplicates are merged."""
    n_rows, n_cols = shape
    if n_cols == 0 or len(rows) == 0:
        return Pattern.empty(n_rows, n_cols)
    keys = _sorted_unique(rows * n_cols + cols)
    rows, cols = np.divmod(keys, n_cols)
    indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    return Pattern(indptr, cols, shape)


def _sorted_unique(a) -> np.ndarray:
    # np.unique hashes first (slower here than a plain sort, by ~10x on 1e5 ints).
    a = np.sort(a)
    if a.size:
        a = a[np.concatenate(([True], a[1:] != a[:-1]))]
    return a


def union(patterns) -> Pattern | None:
    """Row-wise union of patterns of one shape (None entries are empty)."""
    parts = [p for p in patterns if p is not None and p.nnz]
    if not parts:
        return None
    first = parts[0]
    if all(first.same_as(p) for p in parts[1:]):
        return first
    rows = np.concatenate([p.row_ids() for p in parts])
    cols = np.concatenate([p.indices for p in parts])
    return from_coo(rows, cols, first.shape)


def _vstack(patterns) -> Pattern:
    if len(patterns) == 1:
        return patterns[0]
    offsets = np.cumsum([0] + [p.nnz for p in patterns[:-1]])
    indptr = np.concatenate([[0]] + [p.indptr[1:] + o for p, o in zip(patterns, offsets)])
    indices = np.concatenate([p.indices for p in patterns])
    return Pattern(indptr, indices, (len(indptr) - 1, patterns[0].shape[1]))


def _ids(shape) -> np.ndarray:
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)


# --- the rules: (eqn, operand patterns, operand constants) -> output pattern ----------

def _broadcast_src(shape, out_shape) -> np.ndarray | None:
    """Which operand element each output element reads under broadcasting (None: itself)."""
    if tuple(shape) == tuple(out_shape):
        return None
    return np.broadcast_to(_ids(shape), out_shape).ravel()


def _masked(p: Pattern, shape, out_shape, keep) -> Pattern:
    """p broadcast to the output, emptied where `keep` (an output-shaped bool) is False."""
    src = _broadcast_src(shape, out_shape)
    if keep is None:
        return p if src is None else p.gather_rows(src)
    keep = np.broadcast_to(keep, out_shape).ravel()
    if keep.all():
        return p if src is None else p.gather_rows(src)
    src = _ids(out_shape).ravel() if src is None else src
    return p.gather_rows(np.where(keep, src, -1))


def _elementwise(eqn, pats, consts):
    out_shape = eqn.out.type.shape
    return union(
        _masked(p, a.type.shape, out_shape, None) for a, p in zip(eqn.inputs, pats) if p is not None
    )


def _mul(eqn, pats, consts):
    # d(x * c)/dx = c: exactly zero where a constant factor is zero.
    out_shape = eqn.out.type.shape
    parts = []
    for i in (0, 1):
        if pats[i] is not None:
            other = consts[1 - i]
            keep = None if other is None else (other != 0)
            parts.append(_masked(pats[i], eqn.inputs[i].type.shape, out_shape, keep))
    return union(parts)


def _where(eqn, pats, consts):
    out_shape = eqn.out.type.shape
    cond = consts[0]
    keeps = (None, None) if cond is None else (cond, np.logical_not(cond))
    return union(
        _masked(pats[i], eqn.inputs[i].type.shape, out_shape, keeps[i - 1])
        for i in (1, 2) if pats[i] is not None
    )


def _index_map(eqn, pats, consts, index_operands=()):
    """Run the op's NumPy reference on element ids (1-based; 0 reads nothing)
    to learn which operand element each output element reads."""
    ids, stacked, offset = [], [], 0
    for i, (a, p) in enumerate(zip(eqn.inputs, pats)):
        if i in index_operands:
            ids.append(consts[i])
        elif p is None:
            ids.append(np.zeros(a.type.shape, np.int64))
        else:
            ids.append(_ids(a.type.shape) + (offset + 1))
            stacked.append(p)
            offset += a.type.size
    params = dict(eqn.params)
    if eqn.op is pad_p:
        params["value"] = 0
    read = np.asarray(impls[eqn.op](*ids, **params), np.int64).ravel() - 1
    return _vstack(stacked).gather_rows(read)


def _along_axis(p, out_ids, in_ids, rows):
    """Every output element reads every operand element of its (pre, post) slice:
    `out_ids` is (pre, J, post), `in_ids` is (pre, D, post)."""
    pre, j, post = out_ids.shape
    d = in_ids.shape[1]
    out_ids = out_ids.transpose(0, 2, 1).reshape(pre * post, j, 1)
    in_ids = in_ids.transpose(0, 2, 1).reshape(pre * post, 1, d)
    grid = (pre * post, j, d)
    return p.compose(np.broadcast_to(out_ids, grid), np.broadcast_to(in_ids, grid), rows)


def _split3(shape, axis, count):
    size = lambda s: int(np.prod(s, dtype=np.int64))  # noqa: E731
    return size(shape[:axis]), size(shape[axis:axis + count]), size(shape[axis + count:])


def _gather(eqn, pats, consts):
    if pats[0] is None:
        return None
    if consts[1] is not None:
        return _index_map(eqn, pats, consts, index_operands=(1,))
    x, idx, out = eqn.inputs[0].type, eqn.inputs[1].type, eqn.out.type
    axis = eqn.params["axis"]
    out_ids = _ids(_split3(out.shape, axis, idx.ndim))
    in_ids = _ids(_split3(x.shape, axis, 1))
    return _along_axis(pats[0], out_ids, in_ids, out.size)


def _scatter_add(eqn, pats, consts):
    if pats[0] is None:
        return None
    x, idx, out = eqn.inputs[0].type, eqn.inputs[1].type, eqn.out.type
    axis = eqn.params["axis"]
    if consts[1] is not None:  # x's element j is added into output row idx[j]
        r = np.take(_ids(out.shape), consts[1], axis=axis)
        return pats[0].compose(r, _ids(x.shape), out.size)
    out_ids = _ids(_split3(out.shape, axis, 1))
    in_ids = _ids(_split3(x.shape, axis, idx.ndim))
    return _along_axis(pats[0], out_ids, in_ids, out.size)


def _reduce(eqn, pats, consts):
    x = eqn.inputs[0].type
    axes = eqn.params["axes"]
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    r = np.broadcast_to(_ids(eqn.out.type.shape).reshape(kept), x.shape)
    return pats[0].compose(r, _ids(x.shape), eqn.out.type.size)


def _on_grid(ids, letters, grid):
    """`ids` (axes named by `letters`) laid out on the axes `grid`, size 1 elsewhere."""
    order = [c for c in grid if c in letters]
    ids = ids.transpose([letters.index(c) for c in order])
    shape, it = [], iter(ids.shape)
    for c in grid:
        shape.append(next(it) if c in letters else 1)
    return ids.reshape(shape)


def _contract(eqn, pats, consts):
    la, lb, lo = parse_spec(eqn.params["spec"])
    a, b, out = eqn.inputs[0].type, eqn.inputs[1].type, eqn.out.type
    size = dict(zip(la, a.shape))
    size.update(zip(lb, b.shape))
    out_ids = _ids(out.shape)
    parts = []
    for p, mine, theirs, t, other in ((pats[0], la, lb, a, consts[1]), (pats[1], lb, la, b, consts[0])):
        if p is None:
            continue
        grid = lo + "".join(c for c in mine if c not in lo)
        mask = None
        if other is not None:  # exploit the constant operand's zeros
            full = grid + "".join(c for c in theirs if c not in grid)
            if int(np.prod([size[c] for c in full], dtype=np.int64)) <= _GRID_LIMIT:
                grid, mask = full, _on_grid(other != 0, theirs, full)
        shape = tuple(size[c] for c in grid)
        r = np.broadcast_to(_on_grid(out_ids, lo, grid), shape)
        k = np.broadcast_to(_on_grid(_ids(t.shape), mine, grid), shape)
        if mask is not None:
            mask = np.broadcast_to(mask, shape)
            r, k = r[mask], k[mask]
        parts.append(p.compose(r, k, out.size))
    return union(parts)


def _call(eqn, pats, consts):
    return _propagate(eqn.params["fn"], pats, consts)[0]


def _dense(eqn, pats, consts):
    """No rule: every output element depends on everything its operands depend on."""
    return _dense_of(eqn.out.type.size, pats)


def _dense_of(m: int, pats):
    """An m-element output depending on every column the operand patterns `pats` hold."""
    cols = _sorted_unique(np.concatenate([p.indices for p in pats if p is not None]))
    n_cols = next(p for p in pats if p is not None).shape[1]
    return Pattern(np.arange(m + 1, dtype=np.int64) * len(cols), np.tile(cols, m), (m, n_cols))


# Rules tighter than what the op's facts give (`_rule_of`).
_rules = {
    mul_p: _mul, where_p: _where, gather_p: _gather, scatter_add_p: _scatter_add,
    reduce_sum_p: _reduce, reduce_max_p: _reduce, reduce_min_p: _reduce, reduce_prod_p: _reduce,
    contract_p: _contract, call_p: _call,
}


def _rule_of(op):
    rule = _rules.get(op)
    if rule is not None:
        return rule
    if op.elementwise:
        return _elementwise
    if op.data_movement:
        return _index_map
    return _dense


def _propagate(fn: Function, pats, consts) -> list:
    """Output patterns of fn, given each input's pattern (or None) and constant value (or None)."""
    pattern = {v: p for v, p in zip(fn.invars, pats) if p is not None}
    const = {v: c for v, c in zip(fn.invars, consts) if c is not None}
    for eqn in fn.eqns:
        if len(eqn.outvars) > 1:  # several results (a cond): each dense in what the operands depend on
            ins_p = [pattern.get(a) if isinstance(a, Var) else None for a in eqn.inputs]
            if any(p is not None for p in ins_p) and eqn.op.differentiable:
                for v in eqn.outvars:
                    if v.type.is_float:
                        pattern[v] = _dense_of(v.type.size, ins_p)
            continue
        out = eqn.outvars[0]
        ins_c = [a.value if type(a) is Literal else const.get(a) for a in eqn.inputs]
        if all(c is not None for c in ins_c):
            if out.type.size <= _CONST_LIMIT and not eqn.op.runs_code:
                _evaluate(eqn, ins_c, const)
            continue
        if not out.type.is_float or not eqn.op.differentiable or eqn.op.zero_derivative:
            continue
        ins_p = [pattern.get(a) if isinstance(a, Var) else None for a in eqn.inputs]
        if all(p is None for p in ins_p):
            continue
        p = _rule_of(eqn.op)(eqn, ins_p, ins_c)
        if p is not None and p.nnz:
            pattern[out] = p
    return [pattern.get(v) if isinstance(v, Var) else None for v in fn.outvars]


def _evaluate(eqn, values, const):
    try:
        with np.errstate(all="ignore"):
            const[eqn.outvars[0]] = np.asarray(impls[eqn.op](*values, **eqn.params))
    except Exception:  # noqa: BLE001  (a constant we cannot evaluate is just not known)
        pass


def jacobian_pattern(fn: Function, wrt: int, out: int = 0) -> Pattern:
    """The structural nonzeros of d fn.outvars[out] / d fn.invars[wrt].

    Computed from the equations alone (no derivative is evaluated), so it
    holds for every input value: entries outside it are exactly zero.

    Args:
      fn: the Function.
      wrt: index of the input to differentiate with respect to.
      out: index of the output.

    Returns:
      A Pattern of shape (outvars[out].size, invars[wrt].size), rows and
      columns indexing the flattened (C order) output and input.

    Raises:
      IRError: `wrt` or `out` out of range.

    Example::

        >>> fn = gradtape.make_ir(lambda x: x[1:] * x[:-1], np.ones(4))
        >>> jacobian_pattern(fn, 0).toarray().astype(int)
        array([[1, 1, 0, 0],
               [0, 1, 1, 0],
               [0, 0, 1, 1]])
    """
    if not 0 <= wrt < len(fn.invars):
        raise IRError(f"jacobian_pattern: wrt={wrt} is not an input of a Function with {len(fn.invars)} inputs")
    if not 0 <= out < len(fn.outvars):
        raise IRError(f"jacobian_pattern: out={out} is not an output of a Function with {len(fn.outvars)} outputs")
    x = fn.invars[wrt]
    shape = (fn.outvars[out].type.size, x.type.size)
    pats = [None] * len(fn.invars)
    if x.type.is_float and x.type.size:
        pats[wrt] = Pattern.identity(x.type.size)
    result = _propagate(fn, pats, [None] * len(fn.invars))[out]
    return result if result is not None else Pattern.empty(*shape)


# --- colouring ---------------------------------------------------------------------

def column_intersection_graph(pattern: Pattern):
    """The networkx Graph on columns where two columns are adjacent iff they share a row."""
    import networkx as nx  # loaded by the first colouring, not by `import gradtape` (200 ms)

    n = pattern.shape[1]
    indptr, indices = pattern.indptr, pattern.indices
    # Each entry pairs with the entries after it in its row.
    after = np.repeat(indptr[1:], np.diff(indptr)) - np.arange(pattern.nnz) - 1
    first = np.repeat(np.arange(pattern.nnz), after)
    base = np.repeat(np.cumsum(after) - after, after)
    second = first + 1 + np.arange(len(first)) - base
    keys = _sorted_unique(indices[first] * n + indices[second])
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(*(a.tolist() for a in np.divmod(keys, n))))
    return g


def _natural_order(g, colors):
    return sorted(g)


# Greedy colouring in column order is optimal for banded matrices (an interval
# graph ordered by left end); largest_first and smallest_last do better on
# irregular patterns. The fewest colours of the three wins.
_STRATEGIES = (_natural_order, "largest_first", "smallest_last")


def colour_columns(pattern: Pattern) -> tuple[np.ndarray, int]:
    """Colour the columns so that no two columns of one colour share a row.

    Columns of one colour can then be summed into one seed vector: the
    compressed Jacobian J @ S has one column per colour, and J[i, j] is
    its entry (i, colour[j]).

    Args:
      pattern: the Jacobian's sparsity pattern.

    Returns:
      `(colours, n_colours)`: an int64 colour per column, in 0..n_colours-1
      (0 for a column without nonzeros), and the number of colours (0 for a
      pattern without nonzeros).

    Example::

        >>> colour_columns(tridiagonal_pattern)      # n = 10000
        (array([0, 1, 2, 0, 1, 2, ...]), 3)
    """
    n = pattern.shape[1]
    if pattern.nnz == 0:
        return np.zeros(n, np.int64), 0
    import networkx as nx

    g = column_intersection_graph(pattern)
    best = None
    for strategy in _STRATEGIES:
        colouring = nx.greedy_color(g, strategy=strategy)
        count = max(colouring.values()) + 1
        if best is None or count < best[1]:
            best = (colouring, count)
        if count <= _max_row_length(pattern):
            break  # a row's columns need distinct colours: no strategy does better
    colouring, count = best
    colours = np.fromiter((colouring[j] for j in range(n)), np.int64, n)
    return colours, count


def _max_row_length(pattern: Pattern) -> int:
    return int(np.diff(pattern.indptr).max())
