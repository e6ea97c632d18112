"""custom_vjp: a function whose reverse-mode derivative is the user's fwd/bwd pair, as jax.custom_vjp.

The function, fwd and bwd are traced once per signature into Functions, and
each output becomes one `custom_vjp` equation (gradtape/ir/ops/custom.py).
Its VJP rule inlines fwd and bwd, so the gradient is ordinary IR that can be
differentiated again: the Hessian of a function with a custom VJP is the
derivative of its bwd rule (JAX cannot do this).
"""
from __future__ import annotations

import numpy as np

from ..ir.ops.custom import custom_vjp_p
from . import tree
from .custom_function import CustomFunction, Primal, check_pair, check_same_outputs, rebuild
from .custom_trace import (
    CustomRuleError,
    build,
    gradient_atom,
    leaf_atom,
    refuse_captures,
    structure_text,
    trace_piece,
)
from .tensor import Tensor


class custom_vjp(CustomFunction):
    """Give a function a reverse-mode derivative of your own, with JAX's API.

    Decorate the function, then attach `fwd` and `bwd` with `defvjp`:

    - `fwd(*args)` returns `(output, residuals)`: the function's output and
      whatever bwd needs (a Tensor or a nested tuple/list/dict of Tensors).
    - `bwd(residuals, g)` receives the residuals and the cotangent `g` of the
      output (with the output's structure) and returns a tuple with one
      cotangent per argument: each with its argument's structure, shape and
      dtype, or None for no gradient.

    All three are written with gradtape functions, so the custom gradient can
    itself be differentiated (second and higher derivatives, Hessians),
    vectorized and compiled. Called eagerly while a GradientTape records, the
    function's outputs are recorded so that `tape.gradient` uses bwd.
    Forward mode (gradtape.jvp, jacfwd, the forward half of gradtape.hessian)
    uses bwd too, transposed: bwd must be linear in `g`, as a VJP is (a
    nonlinear bwd, such as one that normalizes g, is differentiated at g = 0).
    So both modes agree, and Hessians are derivatives of your gradient.

    The function and its rules are traced once per signature (shapes, dtypes,
    structure, nondiff arguments by value); arrays they read from their
    closure are constants of that trace, as in staged functions.

    Args:
      fun: the function, of arrays or nested tuples/lists/dicts of arrays.
      nondiff_argnums: positions of arguments that are Python values (hashable,
        part of the cache key), not differentiated; bwd receives them first:
        `bwd(*nondiff_args, residuals, g)`.

    Raises:
      CustomRuleError: the function was called before `defvjp`; fwd did not
        return a pair or its output differs from the function's; bwd returned
        the wrong number of cotangents, or one of the wrong shape or dtype;
        a rule reads traced values of an enclosing function instead of
        receiving them as arguments.

    Example::

        >>> @gradtape.custom_vjp
        ... def clip_gradient(x):
        ...     return x * 1.0
        >>> def clip_fwd(x):
        ...     return clip_gradient(x), None
        >>> def clip_bwd(_, g):
        ...     return (gradtape.clip(g, -1.0, 1.0),)
        >>> clip_gradient.defvjp(clip_fwd, clip_bwd)
        >>> gradtape.grad(lambda x: gradtape.sum(clip_gradient(x) * 10.0))(np.ones(2))
        array([1., 1.])
    """

    kind = "custom_vjp"
    op = custom_vjp_p

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd, bwd):
        """Set the rules: `fwd(*args) -> (output, residuals)`, `bwd(residuals, g) -> cotangents`.

        Raises:
          TypeError: if fwd or bwd is not callable.
        """
        for what, rule in (("fwd", fwd), ("bwd", bwd)):
            if not callable(rule):
                raise TypeError(f"{self.label}: defvjp needs a callable {what}, got {type(rule).__name__}")
        self.fwd, self.bwd = fwd, bwd
        self._clear()

    def _check_defined(self):
        if self.fwd is None:
            raise CustomRuleError(
                f"{self.label} was called before its derivative rules were defined; call "
                f"{self.name}.defvjp(fwd, bwd) first"
            )

    def _trace_rules(self, sig, args, primal: Primal) -> list:
        fwd_fn, residuals, res_types = self._trace_fwd(sig, args, primal)
        bwd_fn, wrt = self._trace_bwd(sig, args, primal, residuals, res_types)
        return [
            dict(fn=primal.output(k), fwd=fwd_fn, bwd=bwd_fn, wrt=wrt, index=k, name=self.name)
            for k in range(len(primal.types))
        ]

    def _trace_fwd(self, sig, args, primal):
        what = f"the fwd rule of {self.label}"
        piece = trace_piece(lambda *ts: self.fwd(*rebuild(args, sig, ts)), sig.types, what)
        out, residuals = check_pair(piece.out, "fwd", self.label, "(output, residuals)")
        check_same_outputs(tree.flatten(out), primal.types, "fwd", self.label)
        flat = tree.flatten(residuals)  # None leaves hold nothing (as in JAX pytrees)
        atoms = [leaf_atom(r, what, f"residual {i}") for i, r in enumerate(flat) if r is not None]
        refuse_captures(piece, atoms, "the fwd rule", self.name)
        return build(piece, atoms), residuals, [a.type for a in atoms]

    def _trace_bwd(self, sig, args, primal, residuals, res_types):
        what = f"the bwd rule of {self.label}"
        n_res = len(res_types)
        nondiff = self.nondiff_values(args)

        def run(*ts):
            given = iter(ts[:n_res])
            res = tree.unflatten(residuals, [None if r is None else next(given) for r in tree.flatten(residuals)])
            cts = [
                t if ty.is_float else Tensor(np.zeros(ty.shape, ty.dtype))  # no cotangent: zeros
                for t, ty in zip(ts[n_res:], primal.types)
            ]
            return self.bwd(*nondiff, res, tree.unflatten(primal.skeleton, cts))

        piece = trace_piece(run, list(res_types) + list(primal.types), what)
        wrt, atoms = self._cotangent_atoms(piece.out, sig, args)
        refuse_captures(piece, atoms, "the bwd rule", self.name)
        return build(piece, atoms), tuple(wrt)

    def _cotangent_atoms(self, grads, sig, args):
        """Check bwd's result against the arguments: (operand positions with a gradient, atoms)."""
        dynamic = [i for i, r in enumerate(sig.ranges) if r is not None]
        names = ", ".join(f"argument {i}" for i in dynamic)
        if not isinstance(grads, (tuple, list)) or len(grads) != len(dynamic):
            count = f"{len(grads)} cotangents" if isinstance(grads, (tuple, list)) else structure_text(grads)
            raise CustomRuleError(
                f"{self.label}: bwd returned {count} for {len(dynamic)} differentiable "
                f"argument(s) ({names}); return a tuple with one cotangent per argument "
                "(None for no gradient), e.g. (g,) for one argument"
            )
        wrt, atoms = [], []
        for i, g in zip(dynamic, grads):
            start, stop = sig.ranges[i]
            if g is None:
                continue
            leaves = tree.flatten(g)
            if len(leaves) != stop - start:
                raise CustomRuleError(
                    f"{self.label}: bwd's cotangent for argument {i} has {len(leaves)} leaves but "
                    f"the argument has {stop - start}; give it the argument's structure (or None)"
                )
            for k, leaf in zip(range(start, stop), leaves):
                want = sig.types[k]
                where = f"argument {i}" if stop - start == 1 else f"leaf {k - start} of argument {i}"
                atom = gradient_atom(leaf, want, self.label, f"bwd's cotangent for {where}", where)
                if atom is not None and want.is_float:
                    wrt.append(k)
                    atoms.append(atom)
        return wrt, atoms
