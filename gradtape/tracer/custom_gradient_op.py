"""The `custom_gradient` op: an eager call of a custom_gradient function, as a tape records it.

    b:f64[3] = custom_gradient[call=log1pexp,index=0] a

`call` (a RecordedCall) holds what the call's equations share: the trace of
f (custom_gradient.py traces it when it can) or, for an f that could not be
traced, f and grad_fn as Python callables. Every derivative rule is
custom_vjp's (gradtape/ir/ops/custom.py) on the params `call.vjp_params`
gives: with a trace, fwd recomputes the values grad_fn reads from the
recorded inputs, so outer tapes differentiate through them; without one,
grad_fn is traced alone and the values it closes over are constants.

Only this op runs Python (the reference implementation of an untraced
call), so it is the one op code generation does not lower.
"""
from __future__ import annotations

import inspect

import numpy as np

from .. import ir
from ..ir import ops
from ..ir.op import batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from ..ir.ops.custom import custom_vjp_p
from . import tree
from .custom_trace import CustomRuleError, build, free_vars, gradient_atom, paused_tapes, trace_piece
from .tensor import Tensor

# Runs the user's Python when f could not be traced.
custom_gradient_p = new_op("custom_gradient", elementwise=False, can_fail_on_values=False, runs_code=True)


class RecordedCall:
    """One eager call recorded on tapes: what its equations share.

    `forward` is f's trace (None when f could not be traced: then `f` and
    `grad_fn` are the Python callables, run eagerly)."""

    __slots__ = ("f", "grad_fn", "out_types", "in_types", "forward", "variables", "_untraced", "__name__")

    def __init__(self, f, grad_fn, out_types, in_types, forward=None, name=None, variables=()):
        self.f = f
        self.grad_fn = grad_fn
        self.out_types = out_types
        self.in_types = in_types  # f's arguments', then those of `variables`
        self.forward = forward
        self.variables = tuple(variables)  # the Variables f reads (operands after its arguments)
        self._untraced = None
        self.__name__ = name or getattr(f, "__name__", "custom_gradient")

    def vjp_params(self, index: int) -> dict:
        """custom_vjp's params for output `index`: its rules are this op's rules.

        For an untraced f there is no primal Function (fn=None: only the
        derivative rules, which never read it, receive these params), no
        residuals, and bwd is grad_fn traced on its own, the values it
        closes over being constants (they are this call's values).
        """
        if self.forward is not None:
            return self.forward.vjp_params(index)
        if self._untraced is None:
            self._untraced = _untraced_rules(self)
        fwd, bwd, wrt = self._untraced
        return dict(fn=None, fwd=fwd, bwd=bwd, wrt=wrt, index=index, name=self.__name__)


# --- the eager op's rules --------------------------------------------------------------
shape_rules[custom_gradient_p] = lambda *xs, call, index: call.out_types[index]


def _impl(*xs, call, index):
    if call.forward is not None:
        return ir.eval_function(call.forward.output(index), list(xs))[0]
    arguments = xs[:len(xs) - len(call.variables)]  # f reads the variables itself
    with paused_tapes():
        y, _ = call.f(*[Tensor(x) for x in arguments])
    return tree.flatten(y)[index].numpy()


def _vjp(ct, out, *ins, call, index):
    return vjp_rules[custom_vjp_p](ct, out, *ins, **call.vjp_params(index))


def _jvp(ts, out, *ins, call, index):
    return jvp_rules[custom_vjp_p](ts, out, *ins, **call.vjp_params(index))


def _untraced_rules(call):
    """(fwd, bwd, wrt) of a call whose f ran eagerly: grad_fn traced alone."""
    label = f"custom_gradient function '{call.__name__}'"
    piece = trace_piece(lambda *cts: grad_fn_gradients(call.grad_fn, cts, call.out_types, call.in_types,
                                                       call.variables, call.__name__),
                        call.out_types, f"the grad_fn of {label}")
    wrt, atoms = checked_gradients(piece.out, call.in_types, call.__name__)
    captured = free_vars(piece, atoms)
    if captured:
        raise CustomRuleError(
            f"{label}: grad_fn reads {len(captured)} traced value(s) of an enclosing function; "
            "pass them to the custom_gradient function as arguments"
        )
    fwd = ir.Function([ir.Var(t) for t in call.in_types], [], [])  # no residuals
    return fwd, build(piece, atoms), wrt


def _batch(axis_size, ins, batched, *, call, index):
    if call.forward is not None:
        return batching_rules[custom_vjp_p](axis_size, ins, batched, **call.vjp_params(index))
    return _batch_by_rows(axis_size, ins, batched, call, index)


def _batch_by_rows(axis_size, ins, batched, call, index):
    """An untraced f can only run on one batch element at a time: one equation per row."""
    out_type = call.out_types[index]
    b = next(x for x in ins).builder
    if axis_size == 0:
        return ops.broadcast_to(b.literal(0, out_type.dtype), (0,) + out_type.shape)
    rows = []
    for r in range(axis_size):
        args = []
        for x, bd in zip(ins, batched):
            if bd:
                row = ops.slice(x, (r,) + (0,) * (x.ndim - 1), (r + 1,) + x.shape[1:])
                x = ops.reshape(row, x.shape[1:])
            args.append(x)
        y = ir.bind(custom_gradient_p, *args, call=call, index=index)
        rows.append(ops.reshape(y, (1,) + y.shape))
    return rows[0] if len(rows) == 1 else ops.concatenate(rows, 0)


impls[custom_gradient_p] = _impl
vjp_rules[custom_gradient_p] = _vjp
jvp_rules[custom_gradient_p] = _jvp
batching_rules[custom_gradient_p] = _batch


def check_takes_variables(grad_fn, variables, name: str):
    """Raise TypeError, as tf.custom_gradient does, when the function read Variables but
    grad_fn cannot receive them (it has no `variables` keyword nor **kwargs)."""
    if not variables:
        return
    try:
        params = inspect.signature(grad_fn).parameters.values()
    except (TypeError, ValueError):  # a builtin: it will say so when called
        return
    if any(p.kind is p.VAR_KEYWORD or (p.name == "variables" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
           for p in params):
        return
    raise TypeError(
        f"custom_gradient function '{name}' reads the Variables {_names(variables)}, so its grad_fn must accept "
        "the keyword argument 'variables' and return (input_grads, variable_grads), one gradient per variable; "
        f"define it as grad_fn(*upstream, variables=None)"
    )


def grad_fn_gradients(grad_fn, cts, out_types, in_types, variables, name: str) -> list:
    """grad_fn called on the cotangents `cts`: one gradient per input of f, then (with
    `variables`, TF's form `grad_fn(*upstream, variables=...) -> (input_grads, variable_grads)`)
    one per variable, to be checked by `checked_gradients` against `in_types`.

    Raises:
      CustomRuleError: grad_fn's result is not of that form, or the counts are wrong.
    """
    upstream = upstream_arguments(cts, out_types)
    if not variables:
        return grad_fn(*upstream)
    label = f"custom_gradient function '{name}'"
    result = grad_fn(*upstream, variables=list(variables))
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise CustomRuleError(
            f"{label}: grad_fn was given variables={_names(variables)} and must return (input_grads, "
            f"variable_grads), got a {type(result).__name__}"
        )
    input_grads, variable_grads = result
    input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
    n_inputs = len(in_types) - len(variables)
    if len(input_grads) != n_inputs:
        raise CustomRuleError(
            f"{label}: grad_fn returned {len(input_grads)} input gradients for {n_inputs} inputs; return one per "
            "input (None for no gradient), then the variables' gradients"
        )
    if not isinstance(variable_grads, (list, tuple)) or len(variable_grads) != len(variables):
        got = len(variable_grads) if isinstance(variable_grads, (list, tuple)) else type(variable_grads).__name__
        raise CustomRuleError(
            f"{label}: grad_fn must return one gradient per variable in variable_grads: {len(variables)} for "
            f"{_names(variables)}, got {got}"
        )
    return input_grads + list(variable_grads)


def _names(variables) -> str:
    return "[" + ", ".join(repr(v.name) for v in variables) + "]"


def upstream_arguments(cts, types) -> list:
    """grad_fn's arguments: the cotangents, zeros for outputs that carry none (integers)."""
    return [c if t.is_float else Tensor(np.zeros(t.shape, t.dtype)) for c, t in zip(cts, types)]


def checked_gradients(grads, in_types, name):
    """(positions of float inputs with a gradient, their atoms), checked against the inputs.

    Raises:
      CustomRuleError: the wrong number of gradients, or one of the wrong shape or dtype.
    """
    label = f"custom_gradient function '{name}'"
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    if len(grads) != len(in_types):
        raise CustomRuleError(
            f"{label}: grad_fn returned {len(grads)} gradients for {len(in_types)} inputs; "
            "return one per input (None for no gradient)"
        )
    wrt, atoms = [], []
    for k, (g, t) in enumerate(zip(grads, in_types)):
        atom = gradient_atom(g, t, label, f"gradient {k}", f"input {k}")
        if atom is not None and t.is_float:
            wrt.append(k)
            atoms.append(atom)
    return tuple(wrt), atoms
