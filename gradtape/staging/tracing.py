"""Tracing a Python function for one signature into a closed ir.Function.

Like gradtape.tracer.trace, but it knows which arguments are static and
it closes the Function over values captured from an enclosing trace:

    def outer(x):
        return grad(lambda y: x * y * y)(x)      # the lambda reads outer's x

The lambda's trace reads `x`, a Var of outer's trace that it never
defines. Such free Vars become extra inputs after the real ones
(`Traced.captured`), and the staged call passes the enclosing trace's Vars
for them when it inlines the Function. A trace with captures belongs to
one enclosing trace, so it is never cached.

The Builders of staged traces in progress form a thread-local stack, so a
staged call whose only abstract values are captured ones knows which trace
to inline into.
"""
from __future__ import annotations

import threading


from .. import ir
from ..tracer import tree
from ..tracer.tensor import Tensor
from ..tracer.trace import result_atom


class _Stack(threading.local):
    def __init__(self):
        self.builders = []


_stack = _Stack()


def innermost_builder():
    """The Builder of the innermost staged trace running in this thread, or None."""
    return _stack.builders[-1] if _stack.builders else None


class Traced:
    """A traced call: its Function, its result structure, and its captures.

    Attributes:
      fn: invars are the leaves' Vars followed by `captured`; outvars are
        the flattened results.
      out_skeleton: the result structure with None at each leaf.
      captured: Vars of enclosing traces that `fn` reads (empty when closed).
    """

    __slots__ = ("fn", "out_skeleton", "captured")

    def __init__(self, fn, out_skeleton, captured):
        self.fn = fn
        self.out_skeleton = out_skeleton
        self.captured = captured


def trace_call(f, args, sig, fname: str) -> Traced:
    """Run `f` on abstract tensors of `sig`'s leaf types (static arguments as given)."""
    builder = ir.Builder()
    syms = [builder.input(t) for t in sig.types]
    abstract = [Tensor(sym=s) for s in syms]
    traced_args = []
    for a, r in zip(args, sig.ranges):
        if r is None:
            traced_args.append(a)
        else:
            traced_args.append(tree.unflatten(a, abstract[r[0]:r[1]]))
    _stack.builders.append(builder)
    try:
        out = f(*traced_args)
    except Exception as err:
        err.add_note(f"(while gradtape traced {fname} for the signature {_types_text(sig.types)})")
        raise
    finally:
        _stack.builders.pop()
    flat = tree.flatten(out)
    atoms = [_result_atom(o, i, fname) for i, o in enumerate(flat)]
    skeleton = tree.unflatten(out, [None] * len(flat))
    invars = [s.atom for s in syms]
    captured = _free_vars(invars, builder.eqns, atoms)
    fn = ir.Function(invars + captured, builder.eqns, atoms)
    if ir.config.checks:
        ir.verify(fn)
    return Traced(fn, skeleton, captured)


def _result_atom(o, i, fname):
    atom = result_atom(o)
    if atom is not None:
        return atom
    raise TypeError(
        f"{fname} must return arrays or Tensors (or nested lists/tuples/dicts of them); "
        f"output {i} is a {type(o).__name__}: {o!r}"[:300]
    )


def _free_vars(invars, eqns, outvars) -> list:
    """Vars read but never defined, in order of first use."""
    defined = set(invars)
    free, seen = [], set()
    for eqn in eqns:
        for a in eqn.inputs:
            if type(a) is not ir.Literal and a not in defined and a not in seen:
                seen.add(a)
                free.append(a)
        defined.update(eqn.outvars)
    for a in outvars:
        if type(a) is not ir.Literal and a not in defined and a not in seen:
            seen.add(a)
            free.append(a)
    return free


def _types_text(types) -> str:
    return "(" + ", ".join(map(str, types)) + ")"
