"""Re-rolling: the iterations a Python `for` loop left in a Function, as one `scan` equation.

Tracing (or a tape recording) runs a Python loop, so the Function holds one copy of
its body per iteration, and every pass after it (the adjoint, the optimizer, code
generation, LLVM) costs time in proportion to the trip count, or worse. This pass
finds k >= `config.reroll_min_trips` consecutive copies of a block of equations
where each copy reads the previous one's results in the same places (reroll_find.py
finds the repeats by signature, reroll_check.py decides that they are one loop) and
writes them as one scan (reroll_emit.py), before anything differentiates or compiles
the Function:

    { a:f64[3] b:f64[3,3] c:f64[4,3] .
        d = contract[spec='ij,j->i'] b a ; e = slice[starts=(0, 0),stops=(1, 3)] c ; f = reshape[shape=(3,)] e ;
        g = add d f ; h = tanh g ;
        ... (the same four equations for rows 1, 2 and 3 of c) ...       -> bb }
 -> { a:f64[3] b:f64[3,3] c:f64[4,3] .
        d:f64[4,1,3] = reshape[shape=(4, 1, 3)] c ;
        bb:f64[3] = scan[body={ e:f64[3] f:f64[1,3] g:f64[3,3] . h = contract g e ; i = reshape f ;
                                j = add h i ; k = tanh j -> k }, length=4, n_carry=1, n_xs=1, reverse=False] a d b
      -> bb }

The body runs the same ops in the same order on the same values, so every value is
the unrolled program's, bit for bit; the loop's closed-over values (weights) are the
scan's constants, `x[i]` slices its scanned inputs, values appended to a list and
stacked its stacked outputs. A body that holds a loop of its own is re-rolled in
turn (nested loops), and equal bodies are one Function.

`config.reroll` (GRADTAPE_REROLL=0 turns it off), `config.reroll_min_trips`
(GRADTAPE_REROLL_MIN_TRIPS, default 4) and `config.reroll_min_equations`
(GRADTAPE_REROLL_MIN_EQUATIONS, default 128: the equations of all a loop's copies,
those of the loops around it included) set it; with GRADTAPE_LOG=compiles each loop
it rolls is logged on the `gradtape` logger.
"""
from __future__ import annotations

import logging

from ..gc_pause import gc_paused
from . import config
from .core import Function, Literal
from .passes import dce
from .reroll_check import check
from .reroll_emit import Writer
from .reroll_find import candidates, signatures
from .verify import verify

__all__ = ["reroll"]

logger = logging.getLogger("gradtape")

_MAX_ROUNDS = 8  # a rolled loop can make the loop around it repeat: a nest of 8 at most


def reroll(fn: Function, where: str = "") -> Function:
    """`fn` with the copies of each loop body it repeats written as one scan (see above).

    Args:
      fn: the Function (not modified).
      where: what it is, for the log (`grad(loss)`, `tape backward`).

    Returns:
      An equivalent Function with the same inputs and outputs; `fn` itself when it
      repeats nothing (or config.reroll is off). Equations nothing reads are dropped.
    """
    if not config.reroll or len(fn.eqns) < max(2 * config.reroll_min_trips, config.reroll_min_equations):
        return fn
    rolled = []
    with gc_paused():  # what the pass makes lives until it ends (gc_pause.py)
        out = _rolled(dce(fn), {}, rolled)
    if not rolled:
        return fn
    if config.checks:
        verify(out)
    if logger.isEnabledFor(logging.INFO):
        for k, p, start, n, depth, body in rolled:
            logger.info("reroll %s: %s%d iterations of %d equations (equations %d to %d of %d) -> one scan of "
                        "a %d-equation body", where or "function", "inner loop: " * bool(depth), k, p, start,
                        start + k * p - 1, n, len(body.eqns))
    return out


def _rolled(fn: Function, memo: dict, rolled: list, depth: int = 0, scale: int = 1) -> Function:
    """fn re-rolled, `scale` the number of times the program repeats it (the trips of the
    loops around a body): a loop counts for the equations of all its copies."""
    for _ in range(_MAX_ROUNDS):
        new = _round(fn, memo, rolled, depth, scale)
        if new is fn:
            break
        fn = new
    return fn


def _round(fn: Function, memo: dict, rolled: list, depth: int, scale: int) -> Function:
    """One pass: every loop found in fn's equations as they are."""
    eqns = fn.eqns
    min_trips = config.reroll_min_trips
    min_eqns = -(-config.reroll_min_equations // scale)  # per copy of fn
    if len(eqns) < min_eqns:
        return fn
    found = [c for c in candidates(signatures(eqns), min_trips) if c[1] * c[2] >= min_eqns]
    if not found:
        return fn
    pos = {}
    for j, e in enumerate(eqns):
        for o, v in enumerate(e.outvars):
            pos[v] = (j, o)
    used = bytearray(len(eqns))
    runs = []
    for start, period, trips in found:
        for s, k in _free_blocks(used, start, period, trips, min_trips):
            for run in check(eqns, pos, s, period, k, min_trips):
                if run.trips * period < min_eqns:
                    continue
                runs.append(run)
                used[run.start:run.end] = b"\1" * (run.end - run.start)
    if not runs:
        return fn
    return _rewrite(fn, runs, memo, rolled, depth, scale)


def _free_blocks(used, start, period, trips, min_trips):
    """The stretches of whole blocks no run has taken: (first equation, blocks)."""
    b = 0
    while b < trips:
        while b < trips and any(used[start + b * period:start + (b + 1) * period]):
            b += 1
        first = b
        while b < trips and not any(used[start + b * period:start + (b + 1) * period]):
            b += 1
        if b - first >= min_trips:
            yield start + first * period, b - first


def _rewrite(fn: Function, runs, memo, rolled, depth, scale) -> Function:
    eqns = fn.eqns
    n = len(eqns)
    last_use = {}
    for j, e in enumerate(eqns):
        for a in e.inputs:
            if type(a) is not Literal:
                last_use[a] = j
    for v in fn.outvars:
        if type(v) is not Literal:
            last_use[v] = n
    at = {run.start: run for run in runs}
    w = Writer()

    def finish(body, trips):
        return _rolled(dce(body), memo, rolled, depth + 1, scale * trips)

    j = 0
    while j < n:
        run = at.get(j)
        if run is None:
            w.keep(eqns[j])
            j += 1
            continue
        body = w.scan(run, eqns, last_use, finish, memo)
        rolled.append((run.trips, run.period, run.start, n, depth, body))
        j = run.end
    return dce(Function(fn.invars, w.out, [w.atom(v) for v in fn.outvars]))
