"""Why a GradientTape built another backward plan, on the `gradtape` logger (see staging/compile_log.py).

A tape's gradient reuses a plan when the tape recorded the same program
(backward_cache.py). When it builds a new one, the log says how the new
recording differs from the nearest recording cached before (the one of the
same length differing at the fewest positions), at its first difference:

    gradtape: tape backward plan #2 (4 ops): the Python scalar 0.5 -> 0.25 in mul (op 3); pass a value that
              changes as gradtape.constant(...) so that the plan is reused [build 0.4 ms]

and, when the plan's native code is ready, how long each compile stage took.
"""
from __future__ import annotations

import itertools
import logging

import numpy as np

logger = logging.getLogger("gradtape")

_serial = itertools.count(1)
_NEAREST_AMONG = 16  # recordings compared: the most recently cached ones


def enabled() -> bool:
    """True when the log records plans (the `gradtape` logger at INFO)."""
    return logger.isEnabledFor(logging.INFO)


def built(rec, structure: tuple, cached: list, seconds: float):
    """Log a plan built for recording `rec` (its structure `structure`), given the structures of
    the plans `cached` before it. Returns the plan's log label (for `compiled`), or None."""
    if not logger.isEnabledFor(logging.INFO):
        return None
    n = next(_serial)
    n_ops = sum(1 for hit in rec.info if len(hit) != 2)
    label = f"tape backward plan #{n} ({n_ops} ops)"
    logger.info("%s: %s [build %.1f ms]", label, _why(rec, structure, cached[-_NEAREST_AMONG:]), seconds * 1e3)
    return label


def compiled(label, compiled_function) -> None:
    """Log that plan `label`'s native code is ready, with the time of each compile stage."""
    if label is None or not logger.isEnabledFor(logging.INFO):
        return
    stages = getattr(compiled_function, "compile_stages", {}) or {}
    parts = [f"{stage} {seconds * 1e3:.1f} ms" for stage, seconds in stages.items()]
    total = getattr(compiled_function, "compile_seconds", 0.0) or sum(stages.values())
    if stages and total - sum(stages.values()) >= 0.00005:  # the stages add up to the total
        parts.append(f"other {(total - sum(stages.values())) * 1e3:.1f} ms")
    how = "loaded from the disk cache" if getattr(compiled_function, "loaded_from_disk", False) else "compiled"
    if stages:
        how += f" in {total * 1e3:.1f} ms"
    logger.info("%s: %s [%s]", label, how, ", ".join(parts) or "interpreted")


def _why(rec, structure: tuple, cached: list) -> str:
    if not cached:
        return "first recording of this program"
    same_length = [c for c in cached if len(c) == len(structure)]
    if not same_length:
        nearest = min(cached, key=lambda c: abs(len(c) - len(structure)))
        return f"the tape recorded {len(structure)} values, the nearest cached recording {len(nearest)}"
    nearest = min(reversed(same_length), key=lambda c: sum(a != b for a, b in zip(c, structure)))
    p = next(p for p, (a, b) in enumerate(zip(nearest, structure)) if a != b)
    return _difference(rec, p, nearest[p], structure[p])


def _difference(rec, p: int, old, new) -> str:
    hit = rec.info[p]
    if len(hit) == 2:  # a leaf: its type id changed
        return f"input {p} is now {hit[0]} (another shape or dtype than before)"
    op = hit[3]
    if len(old) == len(new):
        for a, b in zip(old, new):
            if a != b and _is_scalar_key(a) and _is_scalar_key(b):
                return (f"the Python scalar {_scalar(a)} -> {_scalar(b)} in {op.name} (op {p}); pass a value that "
                        "changes as gradtape.constant(...) so that the plan is reused")
    return f"{op.name} (op {p}) has other operands, parameters or types than before"


def _is_scalar_key(part) -> bool:
    # recording.py keys a scalar literal operand by (dtype, bytes)
    return type(part) is tuple and len(part) == 2 and isinstance(part[0], np.dtype) and type(part[1]) is bytes


def _scalar(key):
    return np.frombuffer(key[1], dtype=key[0])[0].item()
