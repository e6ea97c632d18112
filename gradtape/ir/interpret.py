"""The reference interpreter: evaluates any Function with NumPy.

It defines the semantics of the IR and is the oracle every compiled path is
tested against. With `bind` given, each equation is dispatched through it
instead of the NumPy reference (the tape uses this to replay a backward
pass on Tensors, so that an outer tape records it).
"""
from __future__ import annotations

import numpy as np

from .core import Eqn, Function, Literal, Var
from .errors import IRError
from .op import all_ops, impls, multiple_results, rule


def eval_function(fn: Function, args, *, bind=None, check_types: bool = False) -> list:
    """Evaluate `fn` on `args` (one value per invar); returns one value per outvar.

    Example::

        >>> fn = gradtape.make_ir(lambda x: gradtape.sum(x * x), np.ones(3))   # { a:f64[3] . ... -> c }
        >>> eval_function(fn, [np.arange(3.0)])
        [array(5.)]
    """
    if len(args) != len(fn.invars):
        raise IRError(f"eval_function: the Function takes {len(fn.invars)} inputs, got {len(args)}")
    env = dict(zip(fn.invars, args))

    def read(a):
        return a.value if type(a) is Literal else env[a]

    with np.errstate(all="ignore"):  # IEEE semantics; masked branches may hit log(0)
        return _run(fn, env, read, bind, check_types)


def _run(fn, env, read, bind, check_types):
    for eqn in fn.eqns:
        vals = [read(a) for a in eqn.inputs]
        if eqn.op in multiple_results:
            outs = _several(eqn, vals, bind)
            if check_types and bind is None:
                for v, o in zip(eqn.outvars, outs):
                    _check_type(eqn, o, v)
            env.update(zip(eqn.outvars, outs))
            continue
        if bind is not None:
            out = bind(eqn.op, *vals, **eqn.params)
        else:
            out = np.asarray(rule(impls, eqn.op, "reference")(*vals, **eqn.params))
            if check_types:
                _check_type(eqn, out)
        env[eqn.outvars[0]] = out
    return [read(a) for a in fn.outvars]


def _several(eqn, vals, bind) -> list:
    """The values of an equation of several results (op.multiple_results), computed once; with
    `bind` (values are Tensors), each through a `call` of a Function holding just the equation
    (what a tape records has one output per equation)."""
    if bind is None:
        return [np.asarray(o) for o in rule(impls, eqn.op, "reference")(*vals, **eqn.params)]
    call_p = all_ops["call"]  # declared by ir/ops/call.py, which imports this module
    alone = [Var(a.type) for a in eqn.inputs]
    ins = list(alone)
    literal = [i for i, a in enumerate(eqn.inputs) if type(a) is Literal]
    for i in literal:
        ins[i] = eqn.inputs[i]
    keep = [v for i, v in enumerate(alone) if i not in literal]
    vals = [x for i, x in enumerate(vals) if i not in literal]
    outs = [Var(v.type) for v in eqn.outvars]
    inner = Eqn(eqn.op, ins, eqn.params, outs)
    return [bind(call_p, *vals, fn=Function(keep, [inner], [o])) for o in outs]


def _check_type(eqn, out, var=None):
    want = (var if var is not None else eqn.outvars[0]).type
    if out.shape != want.shape or out.dtype != want.dtype:
        raise IRError(
            f"reference implementation of '{eqn.op.name}' returned "
            f"{out.dtype}{list(out.shape)}, but its shape rule says {want}: {eqn}"
        )
