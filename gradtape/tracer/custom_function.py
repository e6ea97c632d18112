"""CustomFunction: what custom_vjp and custom_jvp share, the call paths and the
per-signature cache of traced rules.

A call takes one of three paths:

  - some argument is abstract (inside a staged function, grad, vmap, ...):
    one custom op equation per output goes into the enclosing trace;
  - a GradientTape is recording: the function runs eagerly (its own ops
    unrecorded) and each output is recorded as a custom op equation, so the
    tape's gradient uses the custom rule;
  - otherwise: the function just runs.

The rules (the function and its derivative rules as Functions) are traced
once per signature of the arguments (shapes, dtypes, structure, and the
nondiff arguments by value), as a staged function is.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from .. import ir
from ..ir.optimize import optimize
from . import tape_stack, tree
from .custom_trace import (
    CustomRuleError,
    build,
    leaf_atom,
    paused_tapes,
    refuse_captures,
    structure_text,
    trace_piece,
    type_text,
)
from .dispatch import bind
from .signature import describe
from .tensor import Tensor


class Rules:
    """The traced rules of one signature: the custom op, one params dict per
    output, and the output structure and types."""

    __slots__ = ("op", "params", "out_skeleton", "out_types")

    def __init__(self, op, params, out_skeleton, out_types):
        self.op = op
        self.params = params
        self.out_skeleton = out_skeleton
        self.out_types = out_types


class Primal:
    """The traced primal function: its Function (all outputs), output structure and types."""

    __slots__ = ("fn", "skeleton", "types")

    def __init__(self, fn, skeleton, types):
        self.fn = fn
        self.skeleton = skeleton
        self.types = types

    def output(self, k: int) -> ir.Function:
        """The single-output Function of output k (what custom op equation k computes)."""
        return ir.select_outputs(self.fn, [k])


class _Tracing(threading.local):
    def __init__(self):
        self.keys = set()


class CustomFunction:
    """Base of custom_vjp and custom_jvp (see those for the public API)."""

    kind = "custom function"

    def __init__(self, fun, nondiff_argnums=()):
        if not callable(fun):
            raise TypeError(f"{self.kind} expects a function, got a {type(fun).__name__}: {fun!r}"[:200])
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _normalize_argnums(nondiff_argnums, self.kind)
        self.name = getattr(fun, "__name__", type(fun).__name__)
        self._rules: dict = {}
        self._lock = threading.RLock()  # re-entrant: fun may call itself on other shapes
        self._tracing = _Tracing()  # signatures whose rules this thread is tracing

    @property
    def label(self) -> str:
        return f"{self.kind} function '{self.name}'"

    # --- the call ---------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(
                f"{self.label}: keyword arguments ({', '.join(sorted(kwargs))}) are not supported; "
                "pass the arguments positionally"
            )
        self._check_defined()
        for i in self.nondiff_argnums:
            if i >= len(args):
                raise TypeError(
                    f"{self.label}: nondiff_argnums names argument {i}, but the call passed "
                    f"{len(args)} arguments"
                )
        sig = describe(args, frozenset(self.nondiff_argnums), self.label)
        if sig.abstract:
            return self._staged(sig, args)
        if not sig.tensors or not tape_stack.active():  # nothing a tape could be tracking
            return self.fun(*args)
        return self._recorded(sig, args)

    def _staged(self, sig, args):
        if sig.parts in self._tracing.keys:
            # The rules call the function itself (fwd's `f(x)`, a jvp rule's
            # primal_out) while they are traced: that call is just the primal.
            return self.fun(*args)
        rules = self.rules_for(sig, args)
        outs = [bind(rules.op, *sig.leaves, **params) for params in rules.params]
        return tree.unflatten(rules.out_skeleton, outs)

    def _recorded(self, sig, args):
        rules = self.rules_for(sig, args)
        with paused_tapes():
            out = self.fun(*args)
        flat = tree.flatten(out)
        # New Tensors even for an argument returned as it is: the recorded
        # output must not take over the argument's place on the tape.
        tensors = [Tensor(o._value if isinstance(o, Tensor) else np.asarray(o)) for o in flat]
        got = [ir.TensorType(t.shape, t.dtype) for t in tensors]
        if got != rules.out_types:
            raise CustomRuleError(
                f"{self.label} returned ({', '.join(map(str, got))}) when run, but its trace for "
                f"these arguments returned ({', '.join(map(str, rules.out_types))}); the function "
                "must not decide its outputs' shapes or dtypes from values"
            )
        for tape in list(tape_stack.active()):
            for params, t in zip(rules.params, tensors):
                tape._record(rules.op, sig.leaves, params, t)
        return tree.unflatten(out, tensors)

    # --- the rules of one signature -----------------------------------------------
    def rules_for(self, sig, args) -> Rules:
        """The traced rules for the signature `sig` of `args` (traced on first use)."""
        rules = self._rules.get(sig.parts)
        if rules is None:
            with self._lock:
                rules = self._rules.get(sig.parts)
                if rules is None:
                    primal = self._trace_primal(sig, args)
                    self._tracing.keys.add(sig.parts)
                    try:
                        params = self._trace_rules(sig, args, primal)
                    finally:
                        self._tracing.keys.discard(sig.parts)
                    rules = Rules(self.op, params, primal.skeleton, primal.types)
                    self._rules[sig.parts] = rules
        return rules

    def _clear(self):
        with self._lock:
            self._rules.clear()

    def _trace_primal(self, sig, args) -> Primal:
        piece = trace_piece(lambda *ts: self.fun(*rebuild(args, sig, ts)), sig.types, self.label)
        flat = tree.flatten(piece.out)
        atoms = [leaf_atom(o, self.label, f"output {k}") for k, o in enumerate(flat)]
        refuse_captures(piece, atoms, "the function", self.name)
        skeleton = tree.unflatten(piece.out, [None] * len(flat))
        # Optimized: code generation inlines it as it is (the staged pipeline
        # optimizes the enclosing Function, not the sub-Functions of its params).
        return Primal(optimize(build(piece, atoms)), skeleton, [a.type for a in atoms])

    def nondiff_values(self, args) -> list:
        return [args[i] for i in self.nondiff_argnums]

    # --- what subclasses define -------------------------------------------------------
    op = None

    def _check_defined(self):
        raise NotImplementedError

    def _trace_rules(self, sig, args, primal: Primal) -> list:
        raise NotImplementedError

    def __repr__(self):
        return f"<{self.kind} {self.name}>"


def rebuild(args, sig, leaves) -> list:
    """The call's arguments with their array leaves replaced by `leaves` (nondiff ones as given)."""
    out = []
    for a, r in zip(args, sig.ranges):
        out.append(a if r is None else tree.unflatten(a, list(leaves[r[0]:r[1]])))
    return out


def dynamic_args(args, sig, leaves) -> tuple:
    """Like `rebuild`, without the nondiff arguments: what derivative rules receive."""
    return tuple(
        tree.unflatten(a, list(leaves[r[0]:r[1]])) for a, r in zip(args, sig.ranges) if r is not None
    )


def check_pair(x, what: str, label: str, names: str):
    """`x` as a pair (a, b), or a CustomRuleError saying what was returned instead."""
    if not (isinstance(x, (tuple, list)) and len(x) == 2):
        raise CustomRuleError(
            f"{label}: {what} must return a pair {names}, but it returned {structure_text(x)}"
        )
    return x


def check_same_outputs(flat, want_types, what: str, label: str):
    """The leaves a rule returned as the function's output must have the function's types."""
    got = [type_text(o) for o in flat]
    if len(flat) != len(want_types) or any(g != str(t) for g, t in zip(got, want_types)):
        raise CustomRuleError(
            f"{label}: {what} returned an output of types ({', '.join(got)}), but the function "
            f"returns ({', '.join(map(str, want_types))}); return the function's own output there"
        )


def _normalize_argnums(argnums, kind) -> tuple:
    items = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in items):
        raise TypeError(f"{kind}: nondiff_argnums must be non-negative ints, got {argnums!r}")
    return tuple(sorted(set(items)))
