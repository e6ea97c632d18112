"""The one canonical text form of a Function.

Names are given in order of first appearance (a, b, ..., z, ba, bb, ...), so
the text depends only on structure: two Functions print the same exactly
when they are the same program. Tests compare this text.

    { a:f64[3] b:f64[] . c:f64[3] = mul a b ; d:f64[] = reduce_sum[axes=(0,)] c -> d }
"""
from __future__ import annotations

import numpy as np

from .atoms import Literal, Var
from .types import dtype_name

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _name(i: int) -> str:
    s = ""
    while True:
        s = _LETTERS[i % 26] + s
        i //= 26
        if i == 0:
            return s


class _Namer:
    def __init__(self):
        self.names = {}

    def define(self, v: Var) -> str:
        name = self.names.setdefault(v, _name(len(self.names)))
        return f"{name}:{v.type}"

    def use(self, a) -> str:
        if isinstance(a, Literal):
            return literal_text(a)
        name = self.names.get(a)
        if name is None:  # a free variable: print it, the verifier will complain
            name = self.names.setdefault(a, _name(len(self.names)))
            return f"{name}?"
        return name


def literal_text(lit: Literal) -> str:
    v = lit.value
    if v.ndim == 0:
        if v.dtype == np.float64:
            return repr(float(v))
        if v.dtype == np.bool_:
            return "True" if v else "False"
        if v.dtype == np.int64:
            return repr(int(v))
        return f"{v.item()!r}:{dtype_name(v.dtype)}"
    return f"const<{lit.type}>"


def param_text(value) -> str:
    if isinstance(value, np.dtype):
        return dtype_name(value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return dtype_name(value)
    if hasattr(value, "invars") and hasattr(value, "eqns"):  # a sub-Function
        return str(value)
    if isinstance(value, tuple) and value and all(hasattr(v, "eqns") for v in value):  # branches
        return "(" + ", ".join(map(str, value)) + ")"
    if callable(value) or hasattr(value, "__name__"):
        return getattr(value, "__name__", type(value).__name__)
    return repr(value)


def eqn_to_text(eqn, namer: _Namer | None = None) -> str:
    namer = namer or _Namer()
    ins = " ".join(namer.use(a) for a in eqn.inputs)
    params = ""
    if eqn.params:
        items = ",".join(f"{k}={param_text(v)}" for k, v in sorted(eqn.params.items()))
        params = f"[{items}]"
    outs = ", ".join(namer.define(v) for v in eqn.outvars)
    return f"{outs} = {eqn.op.name}{params} {ins}".rstrip()


def to_text(fn, multiline: bool = False) -> str:
    namer = _Namer()
    ins = " ".join(namer.define(v) for v in fn.invars)
    eqns = [eqn_to_text(e, namer) for e in fn.eqns]
    outs = [namer.use(v) for v in fn.outvars]
    out_text = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    if multiline:
        body = "".join(f"\n    {e}" for e in eqns)
        return f"{{ {ins} .{body}\n  -> {out_text} }}"
    body = " ; ".join(eqns)
    return f"{{ {ins} . {body} -> {out_text} }}" if eqns else f"{{ {ins} . -> {out_text} }}"
