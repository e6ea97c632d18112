"""Partial evaluation: split a Function into what is known now and what comes later.

`vjp` and `linearize` return a function to call later (the pullback, the
linear map) at primal values fixed now. Splitting the joint Function lets
the primal half run once and the later half read only its *residuals*, the
primal values it needs, instead of recomputing the forward pass per call:

    split({ x ct . y = sin x ; c = cos x ; g = mul ct c -> (y, g) }, n_known_in=1, n_known_out=1)
    == ({ x . y = sin x ; c = cos x -> (y, c) },      # known: outputs, then residuals
        { c ct . g = mul ct c -> g })                 # later: residuals, then the rest
"""
from __future__ import annotations

from . import config
from .core import Function, Var
from .errors import IRError
from .passes import dce
from .verify import verify


def split(fn: Function, n_known_in: int, n_known_out: int) -> tuple[Function, Function, int]:
    """Split `fn` at its first `n_known_in` inputs (known now) and the rest (later).

    Args:
      fn: the Function; its first `n_known_out` outputs must not depend on
        the later inputs.
      n_known_in: how many leading inputs are known now.
      n_known_out: how many leading outputs are computed now.

    Returns:
      `(known, later, n_residuals)`. `known` takes the known inputs and
      returns the known outputs followed by `n_residuals` residuals; `later`
      takes those residuals followed by the later inputs and returns the
      remaining outputs.

    Raises:
      IRError: a known output depends on a later input.
    """
    known_in = fn.invars[:n_known_in]
    later_in = fn.invars[n_known_in:]
    late = set(later_in)
    for eqn in fn.eqns:
        if any(isinstance(a, Var) and a in late for a in eqn.inputs):
            late.update(eqn.outvars)
    for i, v in enumerate(fn.outvars[:n_known_out]):
        if isinstance(v, Var) and v in late:
            raise IRError(f"split: output {i} is to be known now but depends on a later input")
    later_eqns = [e for e in fn.eqns if e.outvars[0] in late]
    later_outs = list(fn.outvars[n_known_out:])
    # Residuals: known Vars the later half reads (its equations or its outputs directly).
    residuals, seen = [], set()

    def note(a):
        if isinstance(a, Var) and a not in late and a not in seen:
            seen.add(a)
            residuals.append(a)

    live_later = dce(Function(list(fn.invars), later_eqns, later_outs))
    for eqn in live_later.eqns:
        for a in eqn.inputs:
            note(a)
    for v in later_outs:
        note(v)
    known = dce(Function(list(known_in), [e for e in fn.eqns if e.outvars[0] not in late],
                         list(fn.outvars[:n_known_out]) + residuals))
    later = Function(residuals + list(later_in), live_later.eqns, later_outs)
    if config.checks:
        verify(known)
        verify(later)
    return known, later, len(residuals)
