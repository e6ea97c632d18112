"""custom_jvp: a function whose forward-mode derivative is the user's jvp rule, as jax.custom_jvp.

The function and its jvp rule are traced once per signature into Functions,
and each output becomes one `custom_jvp` equation (gradtape/ir/ops/custom.py).
Forward mode inlines the rule; reverse mode transposes it (the rule is
linear in the tangents), so both modes, and every higher derivative, use it.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ir.ops.custom import custom_jvp_p
from . import tree
from .custom_function import CustomFunction, Primal, check_pair, check_same_outputs, dynamic_args
from .custom_trace import CustomRuleError, build, gradient_atom, refuse_captures, trace_piece
from .tensor import Tensor


class custom_jvp(CustomFunction):
    """Give a function a forward-mode derivative of your own, with JAX's API.

    Decorate the function, then attach the rule with `defjvp` (usable as a
    decorator): `jvp(primals, tangents)` receives the tuple of arguments and
    a tuple of tangents of the same structure, and returns
    `(primal_out, tangent_out)`: the function's output and its tangent
    (same structure, shapes and dtypes; None for a zero tangent).

    The rule is used in both modes: forward mode inlines it, and reverse mode
    (grad, GradientTape, vjp) transposes it, which is exact because a jvp
    rule is linear in the tangents. It is written with gradtape functions,
    so it can be differentiated again, vectorized and compiled.

    The function and its rule are traced once per signature; arrays they
    read from their closure are constants of that trace. Tangents of
    integer arguments are zeros.

    Args:
      fun: the function, of arrays or nested tuples/lists/dicts of arrays.
      nondiff_argnums: positions of arguments that are Python values (hashable,
        part of the cache key), not differentiated; the rule receives them
        first: `jvp(*nondiff_args, primals, tangents)`.

    Raises:
      CustomRuleError: the function was called before `defjvp`; the rule did
        not return a pair, its primal output differs from the function's, or
        a tangent has the wrong structure, shape or dtype; the rule reads
        traced values of an enclosing function instead of receiving them as
        arguments.

    Example::

        >>> @gradtape.custom_jvp
        ... def log1pexp(x):
        ...     return gradtape.log1p(gradtape.exp(x))
        >>> @log1pexp.defjvp
        ... def log1pexp_jvp(primals, tangents):
        ...     (x,), (t,) = primals, tangents
        ...     return log1pexp(x), t * gradtape.sigmoid(x)   # no exp(x) / (1 + exp(x)): no inf/inf
        >>> gradtape.grad(lambda x: gradtape.sum(log1pexp(x)))(np.array([0.0, 1000.0]))
        array([0.5, 1. ])
    """

    kind = "custom_jvp"
    op = custom_jvp_p

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp):
        """Set the rule `jvp(primals, tangents) -> (primal_out, tangent_out)`; returns it.

        Raises:
          TypeError: if jvp is not callable.
        """
        if not callable(jvp):
            raise TypeError(f"{self.label}: defjvp needs a callable rule, got {type(jvp).__name__}")
        self.jvp = jvp
        self._clear()
        return jvp

    def _check_defined(self):
        if self.jvp is None:
            raise CustomRuleError(
                f"{self.label} was called before its derivative rule was defined; decorate the "
                f"rule with @{self.name}.defjvp (or call {self.name}.defjvp(rule)) first"
            )

    def _trace_rules(self, sig, args, primal: Primal) -> list:
        what = f"the jvp rule of {self.label}"
        n = len(sig.types)
        floats = [k for k, t in enumerate(sig.types) if t.is_float]
        nondiff = self.nondiff_values(args)

        def run(*ts):
            tangent_of = dict(zip(floats, ts[n:]))
            tangents = [
                tangent_of[k] if k in tangent_of else Tensor(np.zeros(t.shape, t.dtype))
                for k, t in enumerate(sig.types)
            ]
            return self.jvp(*nondiff, dynamic_args(args, sig, ts[:n]), dynamic_args(args, sig, tangents))

        piece = trace_piece(run, list(sig.types) + [sig.types[k] for k in floats], what)
        out, tangent_out = check_pair(piece.out, "the jvp rule", self.label, "(primal_out, tangent_out)")
        check_same_outputs(tree.flatten(out), primal.types, "the jvp rule", self.label)
        atoms = self._tangent_atoms(tangent_out, primal)
        refuse_captures(piece, atoms, "the jvp rule", self.name)
        return [
            dict(fn=primal.output(k), jvp=build(piece, [atom]), index=k, name=self.name)
            for k, atom in enumerate(atoms)
        ]

    def _tangent_atoms(self, tangent_out, primal) -> list:
        """One atom per output: the rule's tangent, or zeros (None, or a non-float output)."""
        n_out = len(primal.types)
        if tangent_out is None:  # every tangent is zero
            leaves = [None] * n_out
        else:
            leaves = tree.flatten(tangent_out)
            if tree.unflatten(tangent_out, [None] * len(leaves)) != primal.skeleton:
                raise CustomRuleError(
                    f"{self.label}: the jvp rule returned a tangent output of another structure "
                    f"({len(leaves)} leaves) than the function's output ({n_out} leaves); give "
                    "tangent_out the output's structure"
                )
        atoms = []
        for k, (t, want) in enumerate(zip(leaves, primal.types)):
            atom = None
            if want.is_float:
                atom = gradient_atom(t, want, self.label, f"the jvp rule's tangent for output {k}",
                                     f"output {k}")
            if atom is None:
                atom = ir.Literal(np.zeros(want.shape, want.dtype))
            atoms.append(atom)
        return atoms
