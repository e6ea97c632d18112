"""The verifier: single assignment, defined before use, types agree with shape rules.

Runs after every pass when checks are on (`gradtape.ir.config.checks`,
always on in tests). A failure shows the equations around the fault.
"""
from __future__ import annotations

from .core import Function, Literal, Var
from .errors import VerifyError
from .op import multiple_results, shape_rules
from .printer import _Namer, eqn_to_text


def verify(fn: Function) -> Function:
    """Check `fn`'s invariants; return it unchanged, or raise VerifyError."""
    namer = _Namer()
    defined = set()
    lines = []

    def fail(i, why):
        lo, hi = max(0, i - 2), i + 3
        context = "\n".join(
            ("  > " if j == i else "    ") + line for j, line in enumerate(lines[lo:hi], lo)
        )
        raise VerifyError(f"{why}\n  in equation {i}:\n{context}")

    def define(v, i):
        if not isinstance(v, Var):
            fail(i, f"an output must be a Var, got {v!r}")
        if v in defined:
            fail(i, "a Var is assigned twice (single assignment broken)")
        defined.add(v)

    for v in fn.invars:
        if v in defined:
            raise VerifyError("a Var appears twice among the Function's inputs")
        defined.add(v)
        namer.define(v)
    # Render every equation first so a failure can show what follows it too.
    for e in fn.eqns:
        lines.append(eqn_to_text(e, namer))
    for i, eqn in enumerate(fn.eqns):
        for a in eqn.inputs:
            if isinstance(a, Var) and a not in defined:
                fail(i, f"'{eqn.op.name}' uses a Var before it is defined")
            if not isinstance(a, (Var, Literal)):
                fail(i, f"'{eqn.op.name}' has an operand that is not a Var or Literal: {a!r}")
        rule = shape_rules.get(eqn.op)
        if rule is None:
            fail(i, f"op '{eqn.op.name}' has no shape rule")
        try:
            want = rule(*[a.type for a in eqn.inputs], **eqn.params)
        except Exception as err:  # the shape rule's own message says what is wrong
            fail(i, f"'{eqn.op.name}' is ill-typed: {err}")
        types = tuple(v.type for v in eqn.outvars)
        if types != (tuple(want) if eqn.op in multiple_results else (want,)):
            got = ", ".join(map(str, types))
            fail(i, f"'{eqn.op.name}' declares output type {got}, its shape rule gives {want}")
        for v in eqn.outvars:
            define(v, i)
    for v in fn.outvars:
        if isinstance(v, Var) and v not in defined:
            raise VerifyError(f"an output of the Function is never defined: {v!r}")
    return fn
