"""Inline `call` equations (an IR-to-IR pass): code generation, and the
optimizer of tape backward plans, see one flat Function.

Every op declared `applies_fn` (call, and `custom_vjp` and `custom_jvp`,
which compute their primal sub-Function params["fn"]) is inlined; the
derivative rules of the custom ops matter only to the IR passes, which ran
before.

    { a . b = call[fn={ x . y = sin x -> y }] a ; c = mul b a -> c }
    ==  { a . y' = sin a ; c = mul y' a -> c }

Each inlined equation gets fresh output Vars (a sub-Function may be called
twice), and uses of a call's output are renamed to the sub-Function's
result, which may be one of the call's operands or a Literal.
"""
from __future__ import annotations

from .core import Eqn, Function, Literal, Var


def inline_calls(fn: Function) -> Function:
    """`fn` with every call, custom_vjp and custom_jvp equation replaced by
    the equations of its (primal) sub-Function, recursively.

    Args:
        fn: any Function.

    Returns:
        An equivalent Function without those ops (`fn` itself when it has none).

    Example:
        >>> [e.op.name for e in inline_calls(gt.make_ir(f, x)).eqns]  # f a custom_vjp of sin(x) * 2
        ['sin', 'mul']
    """
    if not any(e.op.applies_fn for e in fn.eqns):
        return fn
    eqns: list = []
    env: dict = {}
    _copy(fn.eqns, env, eqns)
    return Function(fn.invars, eqns, [_get(env, v) for v in fn.outvars])


def _get(env, a):
    return a if isinstance(a, Literal) else env.get(a, a)


def _copy(src_eqns, env, out):
    for eqn in src_eqns:
        inputs = [_get(env, a) for a in eqn.inputs]
        if eqn.op.applies_fn:
            sub = eqn.params["fn"]
            sub_env = dict(zip(sub.invars, inputs))
            _copy(sub.eqns, sub_env, out)
            env[eqn.out] = _get(sub_env, sub.outvars[0])
            continue
        outvars = [Var(v.type) for v in eqn.outvars]
        env.update(zip(eqn.outvars, outvars))
        out.append(Eqn(eqn.op, inputs, eqn.params, outvars))
