"""What a ConcretizationError says: Python asked for the value of a traced tensor (`if x > 0`,
`float(x)`, `range(n)`, ...), which does not exist while the function is traced.

The message names the conversion, the function being traced, the line of the
user's code that asked (the innermost frame outside gradtape) and the
arguments of the traced function the value depends on, found by following
the trace's equations back from the value to its inputs:

    bool() needs the concrete value of a traced f64[], which does not exist while gradtape traces f
      at model.py:12 (in f): `if x > 0:`
      the value depends on argument `x`
    Python control flow on traced values is not staged: use gradtape.where(cond, x, y) ...

FunctionTrace (trace_context.py) installs `error` as tensor.py's hook, since
tensor.py cannot import the trace context, which imports it.
"""
from __future__ import annotations

import inspect
import linecache
import os
import sys

from .. import ir
from . import tree
from .errors import ConcretizationError

_GRADTAPE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

FIX = ("Python control flow on traced values is not staged: use gradtape.where(cond, x, y) to select values, "
       "gradtape.cond or gradtape.switch to branch, gradtape.while_loop, fori_loop or scan to loop "
       "(docs/control_flow.md)")


def error(sym, what: str, builders, fix: str | None = None) -> ConcretizationError:
    """The error for conversion `what` ("bool()", "float()", ...) of the traced value `sym`, with the
    traces in progress `builders` (outermost first), ending with `fix` (default: control flow's)."""
    function = _traced_function(builders)
    text = f"{what} needs the concrete value of a traced {sym.type}, which does not exist while gradtape traces"
    text += f" {function}" if function else " a function"
    where = user_line()
    if where:
        text += f"\n  at {where}"
    names = depends_on(sym, builders)
    if names:
        text += f"\n  the value depends on argument{'s' if len(names) > 1 else ''} {_join(names)}"
    text += f"\n{fix or FIX}"
    if names and fix is None:
        one = len(names) == 1
        text += (f"; or, if {_join(names)} {'is a setting' if one else 'are settings'} rather than data, "
                 f"mark {'it' if one else 'them'} static (static_argnums) so Python sees {'its' if one else 'their'} "
                 "value")
    return ConcretizationError(text + ".")


def _traced_function(builders) -> str | None:
    for b in reversed(builders):
        name = getattr(b, "name", None)
        if name is not None:
            return name
    return None


def user_line(skip: int = 1) -> str:
    """`model.py:12 (in f): `if x > 0:`` for the innermost frame of code outside gradtape, or ''."""
    frame = sys._getframe(skip + 1)
    while frame is not None and frame.f_code.co_filename.startswith(_GRADTAPE_DIR):
        frame = frame.f_back
    if frame is None:
        return ""
    code = frame.f_code
    line = linecache.getline(code.co_filename, frame.f_lineno).strip()
    where = f"{os.path.basename(code.co_filename)}:{frame.f_lineno} (in {code.co_name})"
    return where + (f": `{line}`" if line else "")


def depends_on(sym, builders) -> list:
    """The arguments of the traced functions that `sym` is computed from, as `x` or `p['w']`, in the
    order of their traces' inputs; an argument of an enclosing traced function says so."""
    builders = list(builders) if sym.builder in builders else [*builders, sym.builder]
    producers, inputs = {}, {}
    innermost = builders[-1] if builders else None
    for b in builders:
        for eqn in b.eqns:
            for v in eqn.outvars:
                producers[v] = eqn
        outer = f" (of the enclosing {b.name})" if b is not innermost and getattr(b, "name", None) else ""
        for order, (v, n) in enumerate(input_names(b).items()):
            inputs[v] = (b.serial, order, f"`{n}`{outer}")
    found, seen, todo = [], set(), [sym.atom]
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if v in inputs:
            found.append(inputs[v])
        elif v in producers:
            todo.extend(a for a in producers[v].inputs if not isinstance(a, ir.Literal))
    return [n for _, _, n in sorted(found)]


def input_names(builder) -> dict:
    """{input Var: its argument's name and path} of a FunctionTrace made by trace_call; {} otherwise."""
    arguments = getattr(builder, "arguments", None)
    if arguments is None:
        return {}
    f, args, ranges, invars = arguments
    params = _parameter_names(f, len(args))
    names = {}
    for param, a, r in zip(params, args, ranges):
        if r is not None:
            for v, path in zip(invars[r[0]:r[1]], tree.leaf_paths(a)):
                names[v] = param + path
    return names


def _parameter_names(f, n: int) -> list:
    try:
        parameters = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        parameters = ()
    names = []
    for p in parameters:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            names += [f"{p.name}[{k}]" for k in range(n - len(names))]
            break
    names += [f"argument {k}" for k in range(len(names), n)]
    return names[:n]


def _join(names, last: str = "and") -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"
