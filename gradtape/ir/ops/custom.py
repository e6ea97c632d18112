"""`custom_vjp` and `custom_jvp`: equations whose derivative is the user's own Function.

A user-defined derivative is recorded as one equation per output of the
user's function. Its params hold traced Functions, so every rule below is an
IR-to-IR step like any op's, and what a rule emits can be differentiated,
vectorized and compiled again:

    custom_vjp[fn, fwd, bwd, wrt, index, name] xs
      fn   xs -> output `index` of the user's function: what the equation
           computes (the reference evaluates it; code generation inlines
           it like a `call`)
      fwd  xs -> the residuals (the user's fwd without its primal outputs)
      bwd  residuals, one cotangent per output -> one gradient per input in `wrt`
           (inputs not in `wrt` get no gradient: the user's bwd said None)

    custom_jvp[fn, jvp, index, name] xs
      jvp  xs, one tangent per float input -> the tangent of output `index`

e.g. `f(x) = log(1 + exp(x))` with the stable gradient `ct * sigmoid(x)`:

    b:f64[3] = custom_vjp[bwd={ a:f64[3] b:f64[3] . c = ... -> d },
                          fn={ a:f64[3] . ... -> d }, fwd={ a:f64[3] . -> a },
                          index=0, name='log1pexp', wrt=(0,)] a

Rules, side by side:
  - VJP of custom_vjp: inline fwd on the operands, then bwd on the residuals
    and the cotangent (zeros for the other outputs). The result is ordinary
    equations, so the adjoint or tangent pass can run on it again: the
    Hessian of a function with a custom VJP is the derivative of its bwd.
  - JVP of custom_vjp: bwd is linear in the cotangents (it is a VJP), so its
    VJP with respect to them is the Jacobian-vector product of the same rule
    (TensorFlow's forward accumulator uses this trick for ops that have only
    a gradient). Forward mode thus uses the user's rule too: both modes
    agree, and a forward-over-reverse Hessian is the rule's derivative.
  - JVP of custom_jvp: inline the user's jvp Function on operands and tangents.
  - VJP of custom_jvp: the jvp rule is linear in the tangents, so its VJP
    with respect to them (at zero tangents) is the transpose.
  - Batching: vectorize each Function (gradtape.ir.batching.vmap) and emit
    the same op; a gradient of an operand shared by the whole batch is the
    sum over the batch.
"""
from __future__ import annotations

import functools

from .. import config
from ..adjoint import vjp
from ..batching import vmap
from ..builder import Builder, Sym, bind
from ..core import Function
from ..errors import ShapeError
from ..inline import inline
from ..interpret import eval_function
from ..op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..passes import dce, select_outputs
from ..verify import verify
from .layout import broadcast_to, reduce_sum

__all__ = ["custom_vjp_p", "custom_jvp_p", "custom_vjp_call", "custom_jvp_call"]

# Each computes its primal sub-Function params["fn"]; the others are derivative rules.
custom_vjp_p = new_op("custom_vjp", elementwise=False, can_fail_on_values=False, runs_code=True,
                      applies_fn=True)
custom_jvp_p = new_op("custom_jvp", elementwise=False, can_fail_on_values=False, runs_code=True,
                      applies_fn=True)


# --- shared pieces ---------------------------------------------------------------

def _zeros(b: Builder, type) -> Sym:
    return broadcast_to(b.literal(0, type.dtype), type.shape)


def _check_operands(op, types, fn, name):
    want = fn.in_types
    if tuple(types) != want:
        got = ", ".join(map(str, types))
        raise ShapeError(
            f"{op.name} of '{name}': operands ({got}) do not match the traced inputs "
            f"{tuple(map(str, want))}; the function was traced for another signature"
        )
    return fn.outvars[0].type


def _eval_primal(*xs, fn, **_):
    return eval_function(fn, list(xs))[0]


def _inline(fn: Function, b: Builder, syms) -> list:
    return [Sym(a, b) for a in inline(fn, b, [s.atom for s in syms])]


def _tangents_or_zeros(ts, xs, positions, b) -> list:
    return [ts[i] if ts[i] is not None else _zeros(b, xs[i].type) for i in positions]


def _with_zero_inputs(fn: Function, zero_positions) -> Function:
    """fn with the inputs at `zero_positions` fixed to zeros (broadcast scalars,
    not array constants) and dropped from its inputs; the others keep their order."""
    b = Builder()
    zero_positions = set(zero_positions)
    kept = [b.input(v.type) for i, v in enumerate(fn.invars) if i not in zero_positions]
    given = iter(kept)
    args = [_zeros(b, v.type) if i in zero_positions else next(given) for i, v in enumerate(fn.invars)]
    out = dce(b.build(kept, _inline(fn, b, args)))
    if config.checks:
        verify(out)
    return out


def _batch_axes(batched) -> list:
    return [0 if bd else None for bd in batched]


# --- custom_vjp ----------------------------------------------------------------------

def _custom_vjp_shape(*types, fn, fwd, bwd, wrt, index, name):
    return _check_operands(custom_vjp_p, types, fn, name)


def _vjp_of_custom_vjp(ct, out, *xs, fn, fwd, bwd, wrt, index, name):
    b = ct.builder
    residuals = _inline(fwd, b, xs)
    cts = []
    for j, v in enumerate(bwd.invars[len(residuals):]):
        cts.append(ct if j == index else _zeros(b, v.type))
    grads = _inline(bwd, b, residuals + cts)
    result = [None] * len(xs)
    for i, g in zip(wrt, grads):
        result[i] = g
    return tuple(result)


@functools.lru_cache(maxsize=1024)
def _transposed_bwd(bwd: Function, n_res: int, index: int):
    """bwd transposed in its cotangent of output `index`: (residuals..., one tangent per
    `wrt` input) -> the tangent of that output, and whether it depends on them at all.

    bwd is linear in the cotangents (it is a VJP), so its VJP with respect to
    them, at zero cotangents, is the Jacobian-vector product of the same rule.
    """
    joint, connected = vjp(bwd, [n_res + index])
    tangent = select_outputs(joint, [len(bwd.outvars)])  # invars: residuals, cotangents, tangents
    return _with_zero_inputs(tangent, range(n_res, len(bwd.invars))), connected[0]


def _jvp_of_custom_vjp(ts, out, *xs, fn, fwd, bwd, wrt, index, name):
    """Forward mode through the user's rule: bwd transposed (TensorFlow's forward
    accumulator does the same for ops with only a gradient), so that forward and
    reverse mode agree and forward-over-reverse Hessians are the rule's derivative."""
    b = out.builder
    transposed, connected = _transposed_bwd(bwd, len(fwd.outvars), index)
    if not connected or all(ts[i] is None for i in wrt):
        return None
    residuals = _inline(fwd, b, xs)
    return _inline(transposed, b, residuals + _tangents_or_zeros(ts, xs, wrt, b))[0]


@functools.lru_cache(maxsize=256)
def _batched_vjp_params(fn, fwd, bwd, wrt, batched, axis_size):
    axes = _batch_axes(batched)
    fn_b = vmap(fn, axes, axis_size, 0)
    fwd_b = vmap(fwd, axes, axis_size, 0)  # every residual gets the batch axis
    per_example = vmap(bwd, 0, axis_size, 0)
    # A gradient of an operand shared by the batch sums its per-example gradients.
    b = Builder()
    ins = [b.input(t) for t in per_example.in_types]
    grads = _inline(per_example, b, ins)
    outs = [g if batched[i] else reduce_sum(g, (0,)) for i, g in zip(wrt, grads)]
    bwd_b = b.build(ins, outs)
    return fn_b, fwd_b, bwd_b


def _batch_custom_vjp(axis_size, ins, batched, *, fn, fwd, bwd, wrt, index, name):
    fn_b, fwd_b, bwd_b = _batched_vjp_params(fn, fwd, bwd, wrt, tuple(batched), axis_size)
    return custom_vjp_call(ins, fn=fn_b, fwd=fwd_b, bwd=bwd_b, wrt=wrt, index=index, name=name)


shape_rules[custom_vjp_p] = _custom_vjp_shape
impls[custom_vjp_p] = _eval_primal
vjp_rules[custom_vjp_p] = _vjp_of_custom_vjp
jvp_rules[custom_vjp_p] = _jvp_of_custom_vjp
batching_rules[custom_vjp_p] = _batch_custom_vjp


def custom_vjp_call(xs, *, fn, fwd, bwd, wrt, index, name) -> Sym:
    """Emit `custom_vjp[...] xs` (see the module docstring for the params)."""
    return bind(custom_vjp_p, *xs, fn=fn, fwd=fwd, bwd=bwd, wrt=tuple(wrt), index=index, name=name)


# --- custom_jvp ----------------------------------------------------------------------

def _custom_jvp_shape(*types, fn, jvp, index, name):
    return _check_operands(custom_jvp_p, types, fn, name)


def _jvp_of_custom_jvp(ts, out, *xs, fn, jvp, index, name):
    b = out.builder
    floats = [i for i, x in enumerate(xs) if x.type.is_float]
    return _inline(jvp, b, list(xs) + _tangents_or_zeros(ts, xs, floats, b))[0]


@functools.lru_cache(maxsize=1024)
def _transposed_jvp(jvp: Function, n_in: int):
    """The VJP of the jvp rule w.r.t. its tangents: (xs..., ct) -> one gradient per float input.

    The rule is linear in the tangents, so the tangents are fixed to zero
    (the transpose does not depend on them, and the primal-only part of
    the rule is all that remains of the forward half).
    """
    tangent_pos = list(range(n_in, len(jvp.invars)))
    joint, connected = vjp(jvp, tangent_pos)
    grads = select_outputs(joint, range(1, 1 + len(tangent_pos)))
    return _with_zero_inputs(grads, tangent_pos), connected


def _vjp_of_custom_jvp(ct, out, *xs, fn, jvp, index, name):
    b = ct.builder
    transposed, connected = _transposed_jvp(jvp, len(xs))
    grads = _inline(transposed, b, list(xs) + [ct])
    floats = [i for i, x in enumerate(xs) if x.type.is_float]
    result = [None] * len(xs)
    for i, g, c in zip(floats, grads, connected):
        result[i] = g if c else None
    return tuple(result)


@functools.lru_cache(maxsize=256)
def _batched_jvp_params(fn, jvp, batched, axis_size):
    axes = _batch_axes(batched)
    tangent_axes = [a for a, v in zip(axes, fn.invars) if v.type.is_float]
    return vmap(fn, axes, axis_size, 0), vmap(jvp, axes + tangent_axes, axis_size, 0)


def _batch_custom_jvp(axis_size, ins, batched, *, fn, jvp, index, name):
    fn_b, jvp_b = _batched_jvp_params(fn, jvp, tuple(batched), axis_size)
    return custom_jvp_call(ins, fn=fn_b, jvp=jvp_b, index=index, name=name)


shape_rules[custom_jvp_p] = _custom_jvp_shape
impls[custom_jvp_p] = _eval_primal
vjp_rules[custom_jvp_p] = _vjp_of_custom_jvp
jvp_rules[custom_jvp_p] = _jvp_of_custom_jvp
batching_rules[custom_jvp_p] = _batch_custom_jvp


def custom_jvp_call(xs, *, fn, jvp, index, name) -> Sym:
    """Emit `custom_jvp[...] xs` (see the module docstring for the params)."""
    return bind(custom_jvp_p, *xs, fn=fn, jvp=jvp, index=index, name=name)
