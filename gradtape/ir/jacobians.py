"""Jacobians of a Function, built as Functions: JVPs or VJPs over the standard basis, batched.

    jacfwd_function(f, wrt)        JVPs over the standard basis, batched (vmap)
    jacrev_function(f, wrt)        VJPs over the standard basis, batched (vmap)
    optimize_jacobian(fn)          the optimizer, then the passes for batched tangents
    jacobian_mode(n_in, n_out)     "fwd" or "rev": the mode with fewer directions

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
from .diagonal_seed import fold_diagonal_seeds
from .gather_layout import gather_before_transpose
from .inline import inline
from .optimize import optimize
from .passes import dce, select_outputs
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
