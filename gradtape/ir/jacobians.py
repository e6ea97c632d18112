"""Jacobians of a Function, built as Functions: JVPs or VJPs over the standard basis, batched.

    jacfwd_function(f, wrt)        JVPs over the standard basis, batched (vmap)
    jacrev_function(f, wrt)        VJPs over the standard basis, batched (vmap)
    optimize_jacobian(fn)          the optimizer, then the passes for batched tangents
    jacobian_mode(n_in, n_out)     "fwd" or "rev": the mode with fewer directions
    choose_jacobian(fn, wrt)       the mode whose optimized program costs less (ir/program_cost.py)

Both return a Function of f's inputs giving every block d out_j / d in_k,
of shape out_j.shape + in_k.shape (JAX's layout), j-major: (out 0, in 0),
(out 0, in 1), ..., (out 1, in 0), ... Staged transforms
(staging/derivative_functions.py) and a tape's Jacobians
(tracer/backward_jacobian.py) build theirs here.

The basis is built by equations, `cast(eq(i[:, None], j))` of two index
Literals, never as an n x n constant (which would be compiled into the
code). jacfwd feeds it as the batched tangent, so the first equation
touching it is a product with the identity, which the optimizer folds away
(`contract` with an identity operand is a relabeling).
"""
from __future__ import annotations

import math

import numpy as np

from . import ops
from .adjoint import vjp
from .batching import vmap
from .builder import Builder, Sym
from .contract_chains import reorder_contractions
from .core import Function, Literal, Var
from .errors import MissingRuleError
from .diagonal_seed import fold_diagonal_seeds
from .gather_layout import gather_before_transpose
from .inline import inline
from .optimize import optimize
from .passes import dce, select_outputs
from .program_cost import program_cost
from .tangent import jvp


def jacobian_mode(n_inputs: int, n_outputs: int) -> str:
    """The mode `jacobian(f)` (mode "auto") and a tape's `jacobian` use: "fwd" or "rev".

    Forward mode computes one JVP per input element and reverse mode one VJP
    per output element, all batched in one call, so the cheaper mode is the
    one with fewer directions: forward mode when the differentiated inputs
    have no more elements than the outputs (ties go forward: a JVP keeps no
    residuals), else reverse mode.

    Example::

        >>> jacobian_mode(26, 3 * 12800)   # 26 parameters, 38,400 residuals
        'fwd'
        >>> jacobian_mode(1000, 10)
        'rev'
    """
    return "fwd" if n_inputs <= n_outputs else "rev"


MODE_BAND = 32  # estimate both modes only when the directions differ by less than this factor
MODE_MARGIN = 1.1  # an estimate must beat the rule's mode by this factor to overturn it


class ModeChoice:
    """What `choose_jacobian` decided: `mode` ("fwd" or "rev"), each mode's estimated cost
    (None when not estimated: a shape ratio outside the band, or a program the cost model
    cannot tell), and `program`, the chosen mode's optimized Jacobian when it was built."""

    def __init__(self, mode, fwd_cost=None, rev_cost=None, program=None):
        self.mode, self.fwd_cost, self.rev_cost, self.program = mode, fwd_cost, rev_cost, program

    def describe(self) -> str:
        if self.fwd_cost is None or self.rev_cost is None:
            return "by the number of directions"
        return f"estimated cost forward {self.fwd_cost:,.0f}, reverse {self.rev_cost:,.0f}"


def choose_jacobian(fn: Function, wrt, band: int = MODE_BAND) -> ModeChoice:
    """The mode of fn's Jacobian w.r.t. `wrt` (invar positions) that costs less to run.

    When the directions of the two modes (input elements for forward, output
    elements for reverse) differ by less than a factor `band`, both programs
    are built and optimized and their costs estimated (ir/program_cost.py):
    the cheaper one is chosen when it costs less than the other by a factor
    MODE_MARGIN; nearer estimates (within the model's error) and programs
    the model cannot tell go by `jacobian_mode`. Outside the band the rule's
    choice stands unestimated (building a program of a thousand times more
    directions only to reject it would cost trace time for nothing).

    Example::

        >>> import numpy as np, gradtape as gt
        >>> i, j = np.arange(100) * 7 % 1000, np.arange(100) * 3   # 100 outputs, 2 inputs each
        >>> fn = gt.make_ir(lambda x: gt.tanh(x[i] * 2.0 + x[j]), np.ones(1000))
        >>> choice = choose_jacobian(fn, [0])   # reverse mode would scatter-add into 1,000 columns
        >>> jacobian_mode(1000, 100), choice.mode, choice.fwd_cost < choice.rev_cost / 2
        ('rev', 'fwd', True)
    """
    wrt = list(wrt)
    n_in = sum(_size(fn.invars[i].type) for i in wrt)
    n_out = sum(_size(v.type) for v in fn.outvars)
    rule = jacobian_mode(n_in, n_out)
    if not (n_in * band > n_out and n_out * band > n_in) or any(_keeps_code(e.op) for e in fn.eqns):
        return ModeChoice(rule)
    other = "rev" if rule == "fwd" else "fwd"
    builders = {"fwd": jacfwd_function, "rev": jacrev_function}
    programs = {rule: optimize_jacobian(builders[rule](fn, wrt))}
    try:
        programs[other] = optimize_jacobian(builders[other](fn, wrt))
    except (MissingRuleError, NotImplementedError):  # an op without the other mode's rule
        return ModeChoice(rule, program=programs[rule])
    costs = {mode: program_cost(p) for mode, p in programs.items()}
    mode = rule
    if None not in costs.values() and costs[other] * MODE_MARGIN < costs[rule]:
        mode = other
    return ModeChoice(mode, costs["fwd"], costs["rev"], programs[mode])


def _keeps_code(op) -> bool:
    """A loop or conditional (its body stays a sub-Function: the cost model cannot tell
    its cost, so neither program is estimated, and the second is not built)."""
    return op.runs_code and not op.applies_fn


def optimize_jacobian(fn: Function) -> Function:
    """`optimize`, then the passes for what batching a Jacobian's tangents makes: products
    with the seed scaled by an elementwise derivative, diag(v), made products with v
    (diagonal_seed.py); chains of contractions in their cheapest order (batching the JVP of
    einsum(einsum(a, b), c) puts the basis through both products, where contracting a with c
    first is often far cheaper: contract_chains.py); and a large gather whose result is
    transposed to put the basis last made from the transposed operand (gather_layout.py).
    Only the rounding of re-associated sums changes."""
    return dce(gather_before_transpose(reorder_contractions(fold_diagonal_seeds(optimize(fn)))))


def _size(ty) -> int:
    return math.prod(ty.shape)


def jacfwd_function(fn: Function, wrt) -> Function:
    """Every block of fn's Jacobian w.r.t. `wrt`, by forward mode over the standard basis."""

    wrt = list(wrt)
    n_in, n_out = len(fn.invars), len(fn.outvars)
    joint, _ = jvp(fn, wrt)
    tangents_out = select_outputs(joint, range(n_out, 2 * n_out))
    sizes = [_size(fn.invars[i].type) for i in wrt]
    total = sum(sizes)
    # The output tangents with the basis index last: out_j.shape + (total,).
    out_axes = [len(v.type.shape) for v in fn.outvars]
    batched = vmap(tangents_out, [None] * n_in + [0] * len(wrt), total, out_axes)
    b = Builder()
    invars = [Var(v.type) for v in fn.invars]
    basis, offset = [], 0
    for i, size in zip(wrt, sizes):
        ty = fn.invars[i].type
        basis.append(basis_block(b, total, offset, size, ty.dtype, (total,) + ty.shape))
        offset += size
    outs = inline(batched, b, invars + basis)
    blocks = []
    for out, v in zip(outs, fn.outvars):
        sym, offset = Sym(out, b), 0
        for i, size in zip(wrt, sizes):
            part = sym if len(wrt) == 1 else _take_last(sym, offset, size)
            blocks.append(ops.reshape(part, v.type.shape + fn.invars[i].type.shape).atom)
            offset += size
    return dce(Function(invars, b.eqns, blocks))


def basis_block(b: Builder, total: int, start: int, size: int, dtype, shape):
    """Columns start..start+size of the identity of order `total`, reshaped to `shape`, as an atom."""
    rows = b.literal(np.arange(total).reshape(total, 1))
    cols = b.literal(np.arange(start, start + size))
    eye = ops.cast(ops.eq(rows, cols), np.dtype(dtype))
    return ops.reshape(eye, shape).atom


def _take_last(sym, start: int, size: int):
    """sym[..., start:start + size]."""
    shape = sym.shape
    starts = (0,) * (len(shape) - 1) + (start,)
    limits = shape[:-1] + (start + size,)
    return ops.slice(sym, starts, limits)


def jacrev_function(fn: Function, wrt) -> Function:
    """Every block of fn's Jacobian w.r.t. `wrt`, by reverse mode over the standard basis."""

    wrt = list(wrt)
    n_in, n_out = len(fn.invars), len(fn.outvars)
    joint, _ = vjp(fn, wrt)
    grads = select_outputs(joint, range(n_out, n_out + len(wrt)))
    b = Builder()
    invars = [Var(v.type) for v in fn.invars]
    blocks = []
    for j, v in enumerate(fn.outvars):
        size = _size(v.type)
        batched = vmap(grads, [None] * n_in + [0 if k == j else None for k in range(n_out)], size, 0)
        cts = []
        for k, w in enumerate(fn.outvars):
            if k == j:
                cts.append(basis_block(b, size, 0, size, w.type.dtype, (size,) + w.type.shape))
            else:
                cts.append(Literal(np.zeros(w.type.shape, w.type.dtype)))
        outs = inline(batched, b, invars + cts)
        for i, g in zip(wrt, outs):
            blocks.append(ops.reshape(Sym(g, b), v.type.shape + fn.invars[i].type.shape).atom)
    return dce(Function(invars, b.eqns, blocks))
