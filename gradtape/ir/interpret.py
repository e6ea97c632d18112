"""The reference interpreter: evaluates any Function with NumPy.

It defines the semantics of the IR and is the oracle every compiled path is
tested against. With `bind` given, each equation is dispatched through it
instead of the NumPy reference (the tape uses this to replay a backward
pass on Tensors, so that an outer tape records it).
"""
from __future__ import annotations

import numpy as np

from .core import Function, Literal
from .errors import IRError
from .op import impls, rule
from .result_groups import all_results, evaluate


def eval_function(fn: Function, args, *, bind=None, check_types: bool = False) -> list:
    """Evaluate `fn` on `args` (one value per invar); returns one value per outvar.

    Example::

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
    groups: dict = {}  # a loop's results, computed once for all its equations (result_groups.py)
    for eqn in fn.eqns:
        vals = [read(a) for a in eqn.inputs]
        if bind is not None:
            out = bind(eqn.op, *vals, **eqn.params)
        elif eqn.op in all_results:
            out = np.asarray(evaluate(eqn, vals, groups))
            if check_types:
                _check_type(eqn, out)
        else:
            out = np.asarray(rule(impls, eqn.op, "reference")(*vals, **eqn.params))
            if check_types:
                _check_type(eqn, out)
        env[eqn.outvars[0]] = out
    return [read(a) for a in fn.outvars]


def _check_type(eqn, out):
    want = eqn.outvars[0].type
    if out.shape != want.shape or out.dtype != want.dtype:
        raise IRError(
            f"reference implementation of '{eqn.op.name}' returned "
            f"{out.dtype}{list(out.shape)}, but its shape rule says {want}: {eqn}"
        )
