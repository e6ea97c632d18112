"""An estimate of what a Function costs to run once compiled, from its equations alone.

    program_cost(fn) -> float | None      None: a cost this model cannot tell

Written to choose between two programs computing the same thing (a
Jacobian by forward or by reverse mode: ir/jacobians.py), so only ratios
mean anything. The unit is one element written to memory (about 0.3 ns for
a float64 in cache on a 2020s x86-64 core); the weights below were measured
on compiled programs (`bench/jacobian_shapes.py` and the kernels it is made
of), and what dominates them is memory traffic, not arithmetic:

    written element (a stored value, a scatter's zeroed output)     1
    element read from memory (an input, a stored value), once:      0.25
      re-reads (a broadcast row, a second reader) hit the cache     0
      read across its rows (through a transpose), past 4,096       2.5
    cheap elementwise op (add, mul, eq, cast, ...) per element      0.1
    other elementwise ops (tanh, sin, exp, div, ...) per element    4
    gathered / moved element (gather, pad, concatenate)             0.25
    transposed, reshaped, broadcast or sliced element               0
    the same in a scalar loop: cheap op, other op, gathered        1, 6, 1
    update added by a scatter_add (a scalar read-modify-write)      5
    multiply-add of a contraction (BLAS)                            0.15
    element reduced                                                 0.25

Storage follows the code generator's fusion rule (codegen/fusion.py, read,
not imported: ir/ stands below codegen): a value is stored when it is an
output, the result of a non-fusable op (contraction, reduction, scatter),
an operand of a contraction, or read more often than its size allows
(cheap values may be recomputed up to 4 times); every other value is
computed inside its readers, once per element they read (a gather of 100
columns of an inlined 1,000 x 1,000 identity evaluates 100,000 of its
elements, not a million).

A kernel runs as a scalar loop when its innermost loop walks gathered
positions (a gather along its operand's last axis, read along the
kernel's rows: codegen cannot vectorize the indexed loads) or inside a
scatter_add; the gather (the scatter) and every op computed for its
operands then cost the scalar weights.

Loops, conditionals, calls and sizes known only at run time make the
estimate None.
"""
from __future__ import annotations

import math

from . import ops
from .core import Function, Var
from .ops.contract import parse_spec

WRITE = 1.0
LOAD = 0.25
STRIDED = 2.5
CHEAP = 0.1
COSTLY = 4.0
MOVE = 0.25
SCALAR_CHEAP = 1.0
SCALAR_COSTLY = 6.0
SCATTER_UPDATE = 5.0
MULTIPLY_ADD = 0.15
REDUCED = 0.25
CACHED = 4096  # elements of a value read across its rows without a miss each (32 KB of f64)
MAX_RECOMPUTE = 4  # as codegen/fusion.py: a cheap value read up to 4x its size is recomputed

_REDUCTIONS = (ops.reduce_sum_p, ops.reduce_prod_p, ops.reduce_max_p, ops.reduce_min_p,
               ops.argmax_p, ops.argmin_p)
_MOVES = (ops.gather_p, ops.pad_p, ops.unslice_p, ops.concatenate_p)
_LAYOUT = (ops.reshape_p, ops.broadcast_to_p, ops.slice_p, ops.transpose_p, ops.stop_gradient_p)


class _Unknown(Exception):
    """An equation whose cost the model cannot tell (a loop, a run-time size)."""


class _Use:
    """How kernels read a value: `reads` elements in all, with the value's last axis as the
    kernel's innermost loop or not (`inner`: contiguous, else strided), in vector code or
    in a scalar loop (`scalar`: the kernel's inner loop walks gathered or scattered
    positions, so nothing in it is vectorized). A value's uses are summed by kind, so that
    values read by several readers through long inlined chains stay four entries at most."""

    __slots__ = ("reads", "inner", "scalar")

    def __init__(self, reads, inner, scalar):
        self.reads, self.inner, self.scalar = reads, inner, scalar


def program_cost(fn: Function):
    """fn's estimated run time in units of one element written (see the module docstring),
    or None for a program with loops, conditionals, calls or run-time sizes.

    Example::

        >>> import numpy as np, gradtape as gt
        >>> x = np.ones(1000)
        >>> program_cost(gt.make_ir(lambda x: gt.tanh(x) + x, x))   # tanh, add, write; read x once
        5350.0
    """
    try:
        return _cost(fn)
    except _Unknown:
        return None


def _size(atom) -> int:
    size = atom.type.size
    if type(size) is not int:
        raise _Unknown
    return size


def _cost(fn: Function) -> float:
    uses: dict = {}  # Var -> {(inner, scalar): _Use} by the kernels that compute its readers
    forced: set = {v for v in fn.outvars if type(v) is Var}  # stored whatever its reads
    total = 0.0
    for eqn in reversed(fn.eqns):
        op = eqn.op
        if op.runs_code or op.applies_fn or len(eqn.outvars) != 1:
            raise _Unknown
        out = eqn.outvars[0]
        size = _size(out)
        out_uses = list(uses.pop(out, {}).values())
        fusable = op.elementwise or op in _MOVES or op in _LAYOUT
        if not fusable:
            total += WRITE * size + _memory_reads(out_uses, size) + _work(eqn, size)
            scalar = op is ops.scatter_add_p  # its body is a read-modify-write at an index
            for a in eqn.inputs:
                _use(uses, a, _Use(_operand_reads(eqn, a), True, scalar))
                if op is ops.contract_p and type(a) is Var:
                    forced.add(a)  # BLAS reads memory (codegen/fusion.py)
            continue
        if not out_uses and out not in forced:
            continue  # dead: never computed
        cheap = op.cheap or op in _LAYOUT or (op in _MOVES and op is not ops.gather_p)
        read = sum(u.reads for u in out_uses)
        if out in forced or read > size * (MAX_RECOMPUTE if cheap else 1):
            total += WRITE * size + _memory_reads(out_uses, size)
            out_uses = [_Use(size, True, False)]  # its own kernel, in its own layout
        for u in out_uses:
            scalar = u.scalar or _gathers_inner(eqn, u)
            total += _per_element(op, scalar) * u.reads
            for a in eqn.inputs:
                _use(uses, a, _Use(u.reads, _operand_inner(eqn, a, u.inner), scalar))
    for v in fn.invars:
        total += _memory_reads(uses.pop(v, {}).values(), _size(v))
    return total


def _use(uses: dict, atom, use: _Use):
    if type(atom) is Var:
        kinds = uses.setdefault(atom, {})
        known = kinds.get((use.inner, use.scalar))
        if known is None:
            kinds[(use.inner, use.scalar)] = use
        else:
            known.reads += use.reads


def _memory_reads(value_uses, size: int) -> float:
    """Reading a stored value: each element once from memory (more reads hit the cache), at
    LOAD along its rows, at STRIDED across them (through a transpose: a cache line per element)
    unless the value is small enough to stay in the L1 cache."""
    along = sum(u.reads for u in value_uses if u.inner)
    across = sum(u.reads for u in value_uses if not u.inner)
    strided = STRIDED if size > CACHED else LOAD
    return LOAD * min(along, size) + strided * min(across, size)


def _gathers_inner(eqn, use: _Use) -> bool:
    """A gather along its operand's last axis, in a kernel whose inner loop is that axis."""
    return eqn.op is ops.gather_p and use.inner and eqn.params["axis"] == eqn.inputs[0].type.ndim - 1


def _operand_inner(eqn, atom, inner: bool) -> bool:
    """Whether operand `atom`'s last axis is the kernel's inner loop when eqn's is (`inner`)."""
    op = eqn.op
    if op is ops.transpose_p:
        perm = eqn.params["perm"]
        return inner and (not perm or perm[-1] == len(perm) - 1)
    if op is ops.gather_p and atom is eqn.inputs[0]:
        return inner and eqn.params["axis"] != atom.type.ndim - 1
    return inner


def _operand_reads(eqn, atom) -> int:
    """Elements a non-fusable op reads of an operand: all of it, once (a scatter's indices once
    per update)."""
    if eqn.op is ops.scatter_add_p:
        return _size(eqn.inputs[0])
    return _size(atom)


def _per_element(op, scalar: bool) -> float:
    if op.elementwise:
        if scalar:
            return SCALAR_CHEAP if op.cheap else SCALAR_COSTLY
        return CHEAP if op.cheap else COSTLY
    if op in _MOVES:
        return SCALAR_CHEAP if scalar else MOVE
    return 0.0


def _work(eqn, size: int) -> float:
    """The arithmetic of a non-fusable equation, beyond writing its `size` elements."""
    op = eqn.op
    if op is ops.contract_p:
        return MULTIPLY_ADD * _multiply_adds(eqn)
    if op is ops.scatter_add_p:
        return SCATTER_UPDATE * _size(eqn.inputs[0])
    if op in _REDUCTIONS:
        return REDUCED * _size(eqn.inputs[0])
    # sorts, factorizations, FFTs: a few passes over their operands and result
    return COSTLY * (sum(_size(a) for a in eqn.inputs) + size)


def _multiply_adds(eqn) -> int:
    la, lb, _ = parse_spec(eqn.params["spec"])
    extent = {}
    for a, letters in zip(eqn.inputs, (la, lb)):
        for c, d in zip(letters, a.type.shape):
            if type(d) is not int:
                raise _Unknown
            extent[c] = d
    return math.prod(extent.values())
