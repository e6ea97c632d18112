"""Slices, reshapes, transposes and concatenates that only copy elements become one gather.

Code that builds a matrix from pieces of a vector, as ADBench's GMM builds each
component's lower-triangular factor from a row of `icf`, column by column:

    columns = [np.concatenate([np.zeros_like(q[:i + 1]), q[at:at + n]]) ...]
    L = np.stack(columns, axis=1)

traces to hundreds of small equations (the GMM gradient: 91 concatenates,
262 slices, 216 reshapes, then an unslice and an add per slice in the
adjoint). Each element of the result is a copy of one element of a single
source tensor, or a constant. This pass finds such a result, computes the
table of which source element (or constant) each of its elements copies, and
rewrites its definition as

    flat = reshape(source, (size,))            # and the constants appended:
    pool = concatenate(flat, <constants>)      # (only when there are any)
    result = gather(pool, <index table>, axis=0)

after which the pieces are dead code. Where row r of the result copies only from row r of the
source, the same pieces of every row (GMM's factors, one per row of icf; columns picked from a
batch of samples), the gather runs along axis 1 with one row's table, which does not depend on
the number of rows: programs at two batch sizes then differ only in sizes, and one dynamic
version serves both (runtime/dynamic_family.py). It runs before differentiation (on a
staged trace and on a tape's recording, after ir/reroll.py), so the adjoint
is one scatter_add instead of an unslice and an add per piece: the GMM
gradient's first call compiles 3-4x faster.

Values are unchanged: a gather copies, as the pieces did. So are
gradients, bit for bit, because only tables that copy each source element
at most once are rewritten: scatter_add then adds each cotangent element to
a zero, exactly as the unslice-and-add chain does. A table that reads an
element twice (its adjoint would sum, possibly in another order) is left as
it is, as are results built by fewer than MIN_EQUATIONS copies or that
involve no concatenate (a lone slice or reshape is cheaper as it is), and
tensors of more than MAX_ELEMENTS elements (the table is a constant of the
program). Sub-Functions (scan and cond bodies) are not searched.
"""
from __future__ import annotations

import numpy as np

from .core import Eqn, Function, Literal, Var
from .ops.indexing import _index, concatenate_p, gather_p, slice_p
from .ops.layout import broadcast_to_p, reshape_p, transpose_p
from .passes import dce, splice
from .types import TensorType

MIN_EQUATIONS = 4  # copies a result must be built from to be worth a gather
MAX_ELEMENTS = 1 << 16  # a result's (and its source's) elements at most: the table is a constant

_CONSTANT = -1  # in a table: the element is a constant (its value in the table's `constants`)


class _Copy:
    """How a Var's elements copy `source`'s: `index` (the Var's shape) holds a flat index into
    source for each element, or _CONSTANT where `constants` holds the element's value;
    `equations` counts the copies that built it, `joins` the concatenates among them."""

    __slots__ = ("source", "index", "constants", "equations", "joins")

    def __init__(self, source, index, constants, equations, joins):
        self.source, self.index, self.constants = source, index, constants
        self.equations, self.joins = equations, joins


def gather_copies(fn: Function) -> Function:
    """fn with each result worth it rewritten as one gather (see the module docstring)."""
    copies: dict = {}
    leaves: dict = {}  # Var -> its own table (or None: too large)
    replaced = {}
    for eqn in fn.eqns:
        copy = _copy_of(eqn, copies, leaves)
        if copy is not None:
            copies[eqn.outvars[0]] = copy
    if not copies:
        return fn
    for var in _results(fn, copies):
        copy = copies[var]
        if copy.source is not None and copy.joins and copy.equations >= MIN_EQUATIONS and _injective(copy):
            replaced[var] = _gather(var, copy)
    return dce(splice(fn, replaced, set())) if replaced else fn


def _leaf(var) -> _Copy | None:
    """A Var's own elements, as a table (a source of its own)."""
    if var.type.size > MAX_ELEMENTS:
        return None
    index = np.arange(var.type.size, dtype=np.int64).reshape(var.type.shape)
    return _Copy(var, index, np.zeros(var.type.shape, var.type.dtype), 0, 0)


def _operand(atom, copies, leaves) -> _Copy | None:
    if type(atom) is Literal:
        value = np.asarray(atom.value)
        if value.size > MAX_ELEMENTS:
            return None
        return _Copy(None, np.full(value.shape, _CONSTANT, np.int64), value.copy(), 0, 0)
    copy = copies.get(atom)
    if copy is not None:
        return copy
    if atom not in leaves:  # a source's own table, made once: a trace slices one tensor many times
        leaves[atom] = _leaf(atom)
    return leaves[atom]


def _copy_of(eqn, copies, leaves) -> _Copy | None:
    """The table of eqn's result when eqn copies (a slice, reshape, transpose, concatenate, or a
    broadcast of a scalar constant), or None."""
    op = eqn.op
    if op not in (slice_p, reshape_p, transpose_p, concatenate_p, broadcast_to_p) or len(eqn.outvars) != 1:
        return None
    out = eqn.outvars[0]
    if out.type.size > MAX_ELEMENTS:
        return None
    if op is broadcast_to_p:  # a splat of a constant (a Var broadcast would copy elements twice)
        atom = eqn.inputs[0]
        if type(atom) is not Literal or np.asarray(atom.value).ndim != 0:
            return None
        value = np.broadcast_to(np.asarray(atom.value, out.type.dtype), out.type.shape).copy()
        return _Copy(None, np.full(out.type.shape, _CONSTANT, np.int64), value, 1, 0)
    parts = [_operand(a, copies, leaves) for a in eqn.inputs]
    if any(p is None for p in parts):
        return None
    sources = {p.source for p in parts if p.source is not None}
    if len(sources) > 1:
        return None
    source = next(iter(sources), None)
    equations = 1 + sum(p.equations for p in parts)
    joins = sum(p.joins for p in parts)
    if op is concatenate_p:
        axis = eqn.params["axis"]
        index = np.concatenate([p.index for p in parts], axis=axis)
        constants = np.concatenate([p.constants.astype(out.type.dtype, copy=False) for p in parts], axis=axis)
        return _Copy(source, index, constants, equations, joins + 1)
    (part,) = parts
    if op is slice_p:
        at = _index(eqn.params["starts"], eqn.params["stops"], eqn.params["steps"])
        return _Copy(source, part.index[at], part.constants[at], equations, joins)
    if op is reshape_p:
        shape = out.type.shape
        return _Copy(source, part.index.reshape(shape), part.constants.reshape(shape), equations, joins)
    perm = eqn.params["perm"]
    return _Copy(source, part.index.transpose(perm), part.constants.transpose(perm), equations, joins)


def _results(fn, copies) -> list:
    """The Vars with a table that something other than a copy reads (or that fn returns): where a
    gather stands in for the copies."""
    read = []
    seen = set()
    for eqn in fn.eqns:
        if eqn.outvars[0] in copies and len(eqn.outvars) == 1:
            continue  # a copy reads its operands into its own table
        for atom in eqn.inputs:
            if type(atom) is Var and atom in copies and atom not in seen:
                seen.add(atom)
                read.append(atom)
    for atom in fn.outvars:
        if type(atom) is Var and atom in copies and atom not in seen:
            seen.add(atom)
            read.append(atom)
    return read


def _injective(copy) -> bool:
    """Whether no source element is copied twice (so the adjoint sums nothing)."""
    read = copy.index[copy.index != _CONSTANT]
    return read.size == np.unique(read).size


def _gather(var, copy) -> list:
    """Equations defining `var` as one gather from its source (and its constants)."""
    rows = _per_row(var, copy)
    if rows is not None:
        return rows
    source, index = copy.source, copy.index.copy()
    dtype = var.type.dtype
    size = source.type.size
    flat = Var(TensorType((size,), dtype))
    eqns = [Eqn(reshape_p, (source,), {"shape": (size,)}, (flat,))]
    pool = flat
    is_constant = index == _CONSTANT
    if is_constant.any():
        values = copy.constants[is_constant]
        # One pool entry per distinct bit pattern (so -0.0 and NaN payloads stay what they were).
        bits = np.ascontiguousarray(values).view(np.dtype(f"V{values.dtype.itemsize}"))
        _, first, position = np.unique(bits, return_index=True, return_inverse=True)
        index[is_constant] = size + position.reshape(-1)
        pool = Var(TensorType((size + first.size,), dtype))
        eqns.append(Eqn(concatenate_p, (flat, Literal(values[first].astype(dtype))), {"axis": 0}, (pool,)))
    eqns.append(Eqn(gather_p, (pool, Literal(index)), {"axis": 0}, (var,)))
    return eqns


def _per_row(var, copy) -> list | None:
    """`var` as a gather along axis 1 of its source's rows, when row r of var copies only from
    row r of the source, with the same table in every row (GMM's factors, one per row of icf;
    columns picked from a batch of samples). The table then does not depend on how many rows
    there are, so the programs at two batch sizes differ only in sizes and a dynamic version
    (runtime/dynamic_family.py) still covers them; None otherwise."""
    source, index, constants = copy.source, copy.index, copy.constants
    shape = source.type.shape
    if len(shape) < 2 or not var.type.shape or var.type.shape[0] != shape[0] or shape[0] == 0:
        return None
    n_rows, row_size = shape[0], source.type.size // shape[0]
    flat = index.reshape(n_rows, -1)
    is_constant = flat == _CONSTANT
    row_of = np.arange(n_rows)[:, None]
    if (not (is_constant == is_constant[0]).all() or not ((flat // row_size == row_of) | is_constant).all()
            or not (np.where(is_constant, 0, flat % row_size) == np.where(is_constant, 0, flat[0] % row_size)).all()):
        return None
    values = constants.reshape(n_rows, -1)
    bits = np.ascontiguousarray(values).view(np.dtype(f"V{values.dtype.itemsize}"))
    if not (bits == bits[0]).all():
        return None
    table = np.where(is_constant[0], 0, flat[0] % row_size)
    dtype = var.type.dtype
    pool = Var(TensorType((n_rows, row_size), dtype))
    eqns = [Eqn(reshape_p, (source,), {"shape": (n_rows, row_size)}, (pool,))]
    if is_constant[0].any():
        row_constants = values[0][is_constant[0]]
        table[is_constant[0]] = row_size + np.arange(row_constants.size)
        splat = Var(TensorType((n_rows, row_constants.size), dtype))
        joined = Var(TensorType((n_rows, row_size + row_constants.size), dtype))
        eqns += [Eqn(broadcast_to_p, (Literal(row_constants[None, :].astype(dtype)),),
                     {"shape": (n_rows, row_constants.size)}, (splat,)),
                 Eqn(concatenate_p, (pool, splat), {"axis": 1}, (joined,))]
        pool = joined
    eqns.append(Eqn(gather_p, (pool, Literal(table.reshape(var.type.shape[1:]))), {"axis": 1}, (var,)))
    return eqns


__all__ = ["gather_copies", "MIN_EQUATIONS", "MAX_ELEMENTS"]
