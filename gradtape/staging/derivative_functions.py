"""Derivatives of a traced Function, built as Functions: the IR behind the transforms.

Each builder takes a Function and the indices of the inputs to
differentiate (`wrt`) and returns a Function of the same inputs, so the
result can be optimized, compiled, or differentiated again:

    gradient_function(f, wrt)      scalar f -> its gradients (the seed folded in)
    jacfwd_function(f, wrt)        JVPs over the standard basis, batched (ir/jacobians.py)
    jacrev_function(f, wrt)        VJPs over the standard basis, batched (ir/jacobians.py)

A Jacobian block d out_j / d in_k has shape out_j.shape + in_k.shape (JAX's
layout); ir/jacobians.py builds the Jacobians and says how.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ir.inline import inline
from ..ir.jacobians import basis_block, jacfwd_function, jacrev_function  # noqa: F401  (this module's API)


def gradient_function(fn: ir.Function, wrt, out_index: int = 0) -> ir.Function:
    """The gradient of output `out_index` (a float scalar) w.r.t. the inputs `wrt`.

    Returns a Function of fn's inputs returning one gradient per `wrt`
    input (zeros where unconnected).
    """
    loss = ir.select_outputs(fn, [out_index])
    joint, _ = ir.vjp(loss, list(wrt))
    b = ir.Builder()
    invars = [ir.Var(v.type) for v in joint.invars[:-1]]
    seed = ir.Literal(np.array(1, dtype=loss.outvars[0].type.dtype))
    outs = inline(joint, b, invars + [seed])
    return ir.dce(ir.Function(invars, b.eqns, outs[1:]))
