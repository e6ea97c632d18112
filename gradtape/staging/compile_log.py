"""Why did it recompile? Each trace and compile of a staged function, on the `gradtape` logger.

    GRADTAPE_LOG=compiles python train.py          # or: logging.getLogger("gradtape").setLevel(logging.INFO)

    gradtape: trace grad(loss) #1 for (w: f64[3], X: f64[40,3]): first call [trace 1.9 ms, transform+optimize 2.4 ms]
    gradtape: compile grad(loss) for (w: f64[3], X: f64[40,3]): compiled in 38.1 ms [lower 2.0 ms, ..., LLVM optimize 20.4 ms, ...]
    gradtape: trace grad(loss) #2 for (w: f64[3], X: f64[50,3]): argument X: shape (40, 3) -> (50, 3) [...]

A compile's stages add up to its total: `other` is what no stage names
(the disk cache, checking symbols, ...). LLVM's stages run in its worker
process (runtime/llvm_worker.py) by default; then `waiting for LLVM's
worker` is the time the compile waited for that process to finish starting
(the first compile of a process, if the worker started late), and `to and
from LLVM's worker` the IR and machine code through its pipes.

A retrace names what changed against the nearest signature traced before
(the one differing in the fewest arguments): an argument's shape, dtype or
structure, or a static argument's value. The records are at INFO level;
GRADTAPE_LOG=compiles (read at import) sets the logger to INFO and, if it
has no handler, adds one writing to stderr.

A function traced more than `retrace_warning_after` times (8 by default,
GRADTAPE_RETRACE_WARNING_AFTER; 0 turns the warning off) warns once with a
RetraceWarning naming the argument that changed most often.
"""
from __future__ import annotations

import collections
import inspect
import logging
import os
import sys
import warnings

import numpy as np

from ..ir.types import dtype_name

logger = logging.getLogger("gradtape")

retrace_warning_after = int(os.environ.get("GRADTAPE_RETRACE_WARNING_AFTER", "8") or 0)


class RetraceWarning(UserWarning):
    """A staged function was traced again and again: one of its arguments keeps changing."""


def configure_from_environment(environ=os.environ) -> None:
    """GRADTAPE_LOG=compiles (comma-separated topics): log traces and compiles to stderr."""
    topics = {t.strip() for t in environ.get("GRADTAPE_LOG", "").split(",")}
    if "compiles" in topics:
        logger.setLevel(logging.INFO)
        if not logger.handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
            logger.addHandler(handler)


class Argument(collections.namedtuple("Argument", ["name", "static", "value", "types"])):
    """One argument of a call as a signature sees it: a static value, or the types of its leaves."""

    def text(self) -> str:
        if self.static:
            return f"{self.name}={self.value!r}"
        if len(self.types) == 1 and not isinstance(self.value, (list, tuple, dict)):
            return f"{self.name}: {_type_text(*self.types[0])}"
        return f"{self.name}: ({', '.join(_type_text(*t) for t in self.types)})"


def _type_text(shape, dtype) -> str:
    return f"{dtype_name(dtype)}[{','.join(map(str, shape))}]"


def describe(fun, args, sig) -> tuple:
    """One Argument per argument of a call of `fun` with signature `sig`."""
    names = _parameter_names(fun, len(args))
    out = []
    for i, (a, r) in enumerate(zip(args, sig.ranges)):
        if r is None:
            out.append(Argument(names[i], True, a, ()))
        else:
            types = tuple((tuple(t.shape), np.dtype(t.dtype)) for t in sig.types[r[0]:r[1]])
            out.append(Argument(names[i], False, a if isinstance(a, (list, tuple, dict)) else None, types))
    return tuple(out)


def _parameter_names(fun, n: int) -> list:
    try:
        params = [p.name for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"arg{i}" for i in range(n)]


def changes(old: tuple, new: tuple) -> list:
    """[(argument name, "what changed")] from the call described by `old` to `new`."""
    out = []
    for a, b in zip(old, new):
        if a.static != b.static:
            out.append((b.name, "static argument" if b.static else "no longer static"))
        elif a.static:
            if (type(a.value), a.value) != (type(b.value), b.value):
                out.append((b.name, f"static argument {b.name}: {a.value!r} -> {b.value!r}"))
        elif len(a.types) != len(b.types):
            out.append((b.name, f"argument {b.name}: structure of {len(a.types)} arrays -> {len(b.types)}"))
        else:
            for k, ((sa, da), (sb, db)) in enumerate(zip(a.types, b.types)):
                where = b.name if len(b.types) == 1 else f"{b.name} (array {k})"
                if sa != sb:
                    out.append((b.name, f"argument {where}: shape {sa} -> {sb}"))
                if da != db:
                    out.append((b.name, f"argument {where}: dtype {da} -> {db}"))
            if not out or out[-1][0] != b.name:
                if _outline(a.value) != _outline(b.value):
                    out.append((b.name, f"argument {b.name}: structure {_outline(a.value)} -> {_outline(b.value)}"))
    if len(old) != len(new):
        out.append(("(arguments)", f"{len(old)} arguments -> {len(new)}"))
    return out


def _outline(value):
    """The containers of an argument with `x` at each leaf: [x, (x, x)]."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_outline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_outline(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    return "x"


class History:
    """The signatures one Python function was traced for, and which arguments changed between them
    (kept with its traces; changed under their lock)."""

    __slots__ = ("calls", "changed", "warned", "uncounted")

    def __init__(self):
        self.calls = []  # the described arguments of each trace, oldest first (at most 64 kept)
        self.changed = collections.Counter()  # argument name -> retraces it caused
        self.warned = False
        self.uncounted = 0  # traces that compiled nothing (a dynamic version's sizes)


def traced(history: History, title: str, described: tuple, trace_seconds: float, build_seconds: float,
           counted: bool = True) -> None:
    """Record a trace of `title` (e.g. "grad(loss)") for the call `described`: log it, and warn
    once when the function has been traced more than retrace_warning_after times (not counting
    the traces that are not `counted`: sizes a dynamic version serves without a compile)."""
    diff = None
    if history.calls:
        diff = min((changes(old, described) for old in reversed(history.calls)), key=len)  # ties: the latest
        for name in dict(diff) if counted else ():
            history.changed[name] += 1
    if not counted:
        history.uncounted += 1
    history.calls.append(described)
    del history.calls[:-64]
    n = len(history.calls) if len(history.calls) < 64 else "64+"
    if logger.isEnabledFor(logging.INFO):
        why = "first call" if diff is None else ("; ".join(text for _, text in diff) or "the same signature (its "
                                                 "cached trace was forgotten or cleared)")
        logger.info("trace %s #%s for %s: %s [trace %s, transform+optimize %s]", title, n, signature_text(described),
                    why, _ms(trace_seconds), _ms(build_seconds))
    bound = retrace_warning_after
    if bound and not history.warned and len(history.calls) - history.uncounted > bound and history.changed:
        history.warned = True
        name, count = history.changed.most_common(1)[0]
        warnings.warn(
            f"{title} was traced {len(history.calls)} times; argument {name} changed in {count} of the "
            f"retraces (last: {signature_text(described)}). Each new shape, dtype or static value traces and "
            "compiles again: pad to a few fixed shapes, pass a value that changes as an array rather than "
            "a static argument, or set GRADTAPE_LOG=compiles to see every retrace",
            RetraceWarning, stacklevel=5)


def built(title: str, described: tuple, build_seconds: float) -> None:
    """Log a transform built from a trace cached by another transform of the same function."""
    if logger.isEnabledFor(logging.INFO):
        logger.info("transform %s for %s from the cached trace [transform+optimize %s]", title,
                    signature_text(described), _ms(build_seconds))


def compiled(title: str, described: tuple, compiled_function) -> None:
    """Log the compile of `title`'s program for `described`, with the time of each stage."""
    if not logger.isEnabledFor(logging.INFO):
        return
    cf = compiled_function
    if getattr(cf, "fn", True) is None or not getattr(cf, "native", False):
        reason = getattr(cf, "fallback_reason", None)
        if reason:
            logger.info("compile %s for %s: runs in the interpreter (%s)", title, signature_text(described), reason)
        return
    stages = getattr(cf, "compile_stages", {}) or {}
    where = "loaded from the disk cache" if getattr(cf, "loaded_from_disk", False) else "compiled"
    total = getattr(cf, "compile_seconds", 0.0) or sum(stages.values())
    logger.info("compile %s for %s: %s in %s [%s]", title, signature_text(described), where, _ms(total),
                stage_text(stages, total))


def dynamic_compiled(title: str, described: tuple, kernel, symbolic) -> None:
    """Log the compile of a dynamic version (staging/dynamic_versions.py): once for every size."""
    if logger.isEnabledFor(logging.INFO):
        detail = stage_text(kernel.compile_stages, kernel.compile_seconds)
        types = ", ".join(map(repr, symbolic.fn.in_types[:symbolic.n_inputs]))
        how = "loaded from the disk cache" if kernel.loaded_from_disk else "compiled"
        logger.info("compile %s dynamic for (%s), N >= 2 a run-time size (from %s): %s in %s [%s]", title,
                    types, signature_text(described), how, _ms(kernel.compile_seconds), detail)


def dynamic_starting(title: str, described: tuple, background: bool = False) -> None:
    """Log that a dynamic version's build starts: in the background (the call that met the second
    size runs in the interpreter, the next that needs it waits for it), or in the call."""
    if logger.isEnabledFor(logging.INFO):
        if background:
            logger.info("compile %s dynamic (from %s): started in the background; this call runs in the "
                        "interpreter", title, signature_text(described))
        else:
            logger.info("compile %s dynamic (from %s): started", title, signature_text(described))


def dynamic_used(title: str, described: tuple, n: int) -> None:
    """Log that a new signature runs the dynamic version (nothing compiled)."""
    if logger.isEnabledFor(logging.INFO):
        logger.info("run %s for %s with its dynamic version at N=%d (no compile)", title, signature_text(described), n)


def dynamic_declined(title: str, described: tuple, why: str) -> None:
    """Log a signature of a dynamic family that gets its own specialized version, and why."""
    if logger.isEnabledFor(logging.INFO):
        logger.info("specialize %s for %s: %s", title, signature_text(described), why)


def dynamic_failed(title: str, described: tuple, reason: str) -> None:
    """Log why a family of signatures gets specialized versions instead of a dynamic one."""
    if logger.isEnabledFor(logging.INFO):
        logger.info("no dynamic version of %s (at %s): %s; each size compiles its own", title,
                    signature_text(described), reason)


# runtime/build.py's stage names, as the log shows them: which of them are LLVM's, and its worker's.
_STAGE_NAMES = {"parse": "LLVM parse", "optimize": "LLVM optimize", "emit_object": "LLVM emit",
                "worker_wait": "waiting for LLVM's worker", "worker_transfer": "to and from LLVM's worker"}


def stage_text(stages: dict, total: float) -> str:
    """"lower 2.0 ms, ..., other 0.3 ms": each stage, and what the stages leave of `total` (seconds)."""
    parts = [f"{_STAGE_NAMES.get(stage, stage)} {_ms(seconds)}" for stage, seconds in stages.items()]
    rest = total - sum(stages.values())
    if rest >= 0.00005:
        parts.append(f"other {_ms(rest)}")
    return ", ".join(parts)


def signature_text(described: tuple) -> str:
    return "(" + ", ".join(a.text() for a in described) + ")"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


configure_from_environment()
