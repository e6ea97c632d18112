"""Abstract tracing: run a Python function on abstract Tensors and capture
what it does as an ir.Function.

    >>> print(make_ir(lambda x: gradtape.sum(x * x), np.ones(3)))
    { a:f64[3] . b:f64[3] = mul a a ; c:f64[] = reduce_sum[axes=(0,)] b -> c }

Arguments may be nested lists/tuples/dicts of arrays; every array-like leaf
(and Python scalar) becomes a Function input, and static arguments (see
signature.py) are passed to the function as they are. Outputs may be nested
too.

A function traced inside another trace may read values of it that it never
receives:

    def outer(x):
        return grad(lambda y: x * y * y)(x)      # the lambda reads outer's x

The lambda's trace reads `x`, a Var of outer's trace that it never
defines. Such free Vars become extra inputs after the real ones
(`Traced.captured`), and the staged call passes the enclosing trace's Vars
for them when it inlines the Function (staging/nesting.py). A trace with
captures belongs to one enclosing trace, so it is never cached.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from . import tree
from .errors import add_note
from .frozen_random import watch_random_draws
from .signature import describe
from .tensor import Tensor
from .trace_context import FunctionTrace, check_live, tracing
from .weak import WeakScalar

_WEAK = (float, int, complex)  # exact types: a bool is not weak


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
    """Run `f` on abstract tensors of `sig`'s leaf types (static arguments as given).

    Args:
      f: the Python function.
      args: the call's arguments (only the static ones are read).
      sig: what `signature.describe(args, ...)` returns (or anything with its
        `types` and `ranges`).
      fname: the function's name, for messages and leaked-tensor errors.

    Returns:
      A Traced.

    Raises:
      Whatever `f` raises, with a note naming `fname` and the signature;
      TypeError when `f` returns something other than arrays or Tensors.
    """
    builder = FunctionTrace(fname)
    syms = [builder.input(t) for t in sig.types]
    # Python float and int arguments stay weak in promotion, as they are eagerly (weak.py).
    leaves = getattr(sig, "leaves", None) or [None] * len(syms)  # vmap's element signatures have none
    abstract = [WeakScalar(sym=s) if type(x) in _WEAK else Tensor(sym=s) for s, x in zip(syms, leaves)]
    traced_args = []
    for a, r in zip(args, sig.ranges):
        if r is None:
            traced_args.append(a)
        else:
            traced_args.append(tree.unflatten(a, abstract[r[0]:r[1]]))
    builder.arguments = (f, args, sig.ranges, [s.atom for s in syms])  # names in errors (concretization.py)
    with tracing(builder), watch_random_draws(fname, f):
        try:
            out = f(*traced_args)
        except Exception as err:
            add_note(err, f"(while gradtape traced {fname} for the signature {_types_text(sig.types)})")
            raise
        flat = tree.flatten(out)
        atoms = [_result_atom(o, i, fname) for i, o in enumerate(flat)]
    skeleton = tree.unflatten(out, [None] * len(flat))
    invars = [s.atom for s in syms]
    captured = free_vars(invars, builder.eqns, atoms)
    fn = ir.Function(invars + captured, builder.eqns, atoms)
    if ir.config.checks:
        ir.verify(fn)
    return Traced(fn, skeleton, captured)


def trace(f, *args) -> Traced:
    """Trace `f(*args)` with abstract tensors of the arguments' shapes and dtypes.

    Example::

        >>> trace(lambda x: gradtape.sum(x * x), np.ones(3)).fn.out_types
        (f64[],)
    """
    name = getattr(f, "__name__", "function")
    return trace_call(f, args, describe(args, frozenset(), name), name)


def make_ir(f, *args) -> ir.Function:
    """The ir.Function that `f(*args)` traces to (like jax.make_jaxpr).

    Raises:
      ir.IRError: `f` reads abstract tensors of an enclosing trace (its Function
        would have inputs that are not its arguments).
    """
    traced = trace(f, *args)
    if traced.captured:
        raise ir.IRError(
            f"make_ir: {getattr(f, '__name__', 'the function')} reads {len(traced.captured)} traced "
            "value(s) of an enclosing function; pass them to it as arguments"
        )
    return traced.fn


def result_atom(x):
    """The IR atom of a traced function's returned leaf, or None if it is not an array value.

    A Tensor of a live trace gives its Var; a concrete Tensor, array or number
    (of a numeric or bool dtype) gives a Literal: a result that does not depend
    on the inputs.

    Raises:
      UnexpectedTracerError: for a Tensor of a trace that has ended.
    """
    if isinstance(x, Tensor):
        if x._sym is not None:
            return check_live(x)._sym.atom
        return ir.Literal(x._value)
    if isinstance(x, (np.ndarray, np.generic, int, float, bool)):
        value = np.asarray(x)
        if value.dtype.kind in "fiub":
            return ir.Literal(value)
    return None


def _result_atom(o, i, fname):
    atom = result_atom(o)
    if atom is not None:
        return atom
    raise TypeError(
        f"{fname} must return arrays or Tensors (or nested lists/tuples/dicts of them); "
        f"output {i} is a {type(o).__name__}: {o!r}"[:300]
    )


def free_vars(invars, eqns, outvars) -> list:
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
