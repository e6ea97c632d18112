"""Transforms built from batched derivatives: Jacobian (fwd/rev), Hessian, Hvp.

Each traces f once per signature and returns one Function computing the
whole result (see derivative_functions.py), so a Jacobian is one compiled
call, not a Python loop over rows.

Result structure, as JAX: for each output leaf of f, the structure of the
differentiated argument (a tuple of them for a tuple `argnums`) whose leaves
are the blocks `out.shape + in.shape`.
"""
from __future__ import annotations

import logging
import math

from .. import ir
from ..ir.inline import inline
from ..ir.jacobians import choose_jacobian, jacobian_mode, optimize_jacobian  # noqa: F401 (jacobian_mode: the rule, public here)
from ..ir.optimize import optimize
from ..tracer import tree
from .derivative_functions import gradient_function, jacfwd_function, jacrev_function
from .program import Program

logger = logging.getLogger("gradtape")


def _wrt(sig, argnums) -> list:
    return [k for i in argnums for k in range(*sig.ranges[i])]


def _check_argnums_float(sig, argnums, name, fname, holomorphic=False, complex_ok=False):
    n = len(sig.ranges)
    for i in argnums:
        if i >= n:
            raise ValueError(f"{name}({fname}): argnums {i} is out of range for a call with {n} arguments")
        if sig.ranges[i] is None:
            raise ValueError(f"{name}({fname}): argument {i} is static and cannot be differentiated")
        for k in range(*sig.ranges[i]):
            ty = sig.types[k]
            if not ty.is_float:
                raise TypeError(
                    f"{name}({fname}) requires float inputs: argument {i} holds a value of dtype "
                    f"{ty.dtype} ({ty}). Pass floats (1.0, not 1), or leave it out of argnums."
                )
            if ty.is_complex != holomorphic and not complex_ok:
                raise TypeError(_complex_refusal(name, fname, f"argument {i}", ty, holomorphic))


def _complex_refusal(name, fname, what, ty, holomorphic) -> str:
    """JAX's rule: complex values need holomorphic=True, and holomorphic=True needs them."""
    if holomorphic:
        return f"{name}({fname}) with holomorphic=True requires complex inputs and outputs; {what} is {ty}"
    if name == "hessian":  # JAX's: jacfwd (of the gradient) refuses complex inputs without holomorphic=True
        return (f"hessian({fname}): {what} is complex ({ty}); pass holomorphic=True for a holomorphic "
                "function (complex output), or for a real function of complex inputs use hvp (the JVP of "
                "the gradient) or differentiate the real and imaginary parts (docs/complex.md)")
    fix = "" if name == "hvp" else "pass holomorphic=True for a holomorphic function, or "
    return (f"{name}({fname}): {what} is complex ({ty}); {fix}differentiate the real and imaginary "
            "parts (docs/complex.md)")


def _block_skeleton(out_skeleton, args, sig, argnums, single):
    """f's result structure with each leaf replaced by the argument structure(s)."""
    per_leaf = tuple(tree.unflatten(args[i], [None] * (sig.ranges[i][1] - sig.ranges[i][0])) for i in argnums)
    inner = per_leaf[0] if single else per_leaf
    n_out = 1 if out_skeleton is None else len(tree.flatten(out_skeleton))
    if out_skeleton is None:
        return inner
    return tree.unflatten(out_skeleton, [inner] * n_out)


class Jacobian:
    """The full Jacobian w.r.t. `argnums` by forward mode, reverse mode, or the cheaper one.

    mode "auto" picks by `choose_jacobian` (ir/jacobians.py): when the two modes'
    numbers of directions are within a factor 32 of each other, it builds both
    programs and takes the one whose estimated cost (ir/program_cost.py) is
    lower by 10%; else, and on near ties, the mode with fewer directions
    (`jacobian_mode`). The choice and the estimates are logged (INFO, the
    `gradtape` logger).
    """

    def __init__(self, argnums, mode: str, holomorphic: bool = False):
        self.single = isinstance(argnums, int)
        self.argnums = (argnums,) if self.single else tuple(argnums)
        self.mode = mode
        self.holomorphic = bool(holomorphic)
        self.name = {"fwd": "jacfwd", "rev": "jacrev"}.get(mode, "jacobian")
        self.key = ("jacobian", argnums, mode, self.holomorphic)

    def check(self, sig, fname):
        _check_argnums_float(sig, self.argnums, self.name, fname, self.holomorphic)

    def build(self, traced, sig, args, fname) -> Program:
        fn = traced.fn
        for k, v in enumerate(fn.outvars):
            if not v.type.is_float:
                raise TypeError(
                    f"{self.name}({fname}) requires float outputs; output {k} has dtype {v.type.dtype} ({v.type})"
                )
            if v.type.is_complex != self.holomorphic:
                raise TypeError(_complex_refusal(self.name, fname, f"output {k}", v.type, self.holomorphic))
        wrt = _wrt(sig, self.argnums)
        skeleton = _block_skeleton(traced.out_skeleton, args, sig, self.argnums, self.single)
        if self.mode == "auto":
            choice = choose_jacobian(fn, wrt)
            n_in = sum(math.prod(fn.invars[i].type.shape) for i in wrt)
            n_out = sum(math.prod(v.type.shape) for v in fn.outvars)
            logger.info("jacobian(%s): %s mode (%d input elements, %d output elements; %s)",
                        fname, "forward" if choice.mode == "fwd" else "reverse", n_in, n_out,
                        choice.describe())
            if choice.program is not None:
                return Program(choice.program, skeleton, traced.captured)
            mode = choice.mode
        else:
            mode = self.mode
        jac = (jacfwd_function if mode == "fwd" else jacrev_function)(fn, wrt)
        return Program(optimize_jacobian(jac), skeleton, traced.captured)


class Hessian:
    """Forward over reverse: the Jacobian (forward mode) of the gradient."""

    name = "hessian"

    def __init__(self, argnums, holomorphic=False):
        self.single = isinstance(argnums, int)
        self.argnums = (argnums,) if self.single else tuple(argnums)
        self.holomorphic = bool(holomorphic)
        self.key = ("hessian", argnums, self.holomorphic)

    def check(self, sig, fname):
        _check_argnums_float(sig, self.argnums, self.name, fname, self.holomorphic)

    def build(self, traced, sig, args, fname) -> Program:
        fn = traced.fn
        _check_scalar(fn, traced.out_skeleton, self.name, fname, self.holomorphic)
        wrt = _wrt(sig, self.argnums)
        grads = gradient_function(fn, wrt)
        hess = jacfwd_function(grads, wrt)
        grads_skeleton = _block_skeleton(None, args, sig, self.argnums, self.single)
        skeleton = _block_skeleton(grads_skeleton, args, sig, self.argnums, self.single)
        return Program(optimize_jacobian(hess), skeleton, traced.captured)


class Hvp:
    """`(x, v, *args) -> (d^2 f / dx^2)(x, *args) @ v`: forward over reverse, no Hessian formed."""

    name = "hvp"
    key = ("hvp",)

    def check(self, sig, fname):
        if len(sig.ranges) < 2 or sig.ranges[0] is None or sig.ranges[1] is None:
            raise TypeError(f"hvp({fname}): call it as hvp(f)(x, v, *args), with v shaped like x")
        _check_argnums_float(sig, (0,), self.name, fname, complex_ok=True)  # JVP of JAX's gradient
        xs, vs = sig.types[slice(*sig.ranges[0])], sig.types[slice(*sig.ranges[1])]
        if xs != vs:
            raise TypeError(
                f"hvp({fname}): v must have x's structure, shapes and dtypes; x has "
                f"{[str(t) for t in xs]}, v has {[str(t) for t in vs]}"
            )

    def build(self, traced, sig, args, fname) -> Program:
        fn = traced.fn
        _check_scalar(fn, traced.out_skeleton, self.name, fname)
        x_leaves = list(range(*sig.ranges[0]))
        v_leaves = list(range(*sig.ranges[1]))
        grads = gradient_function(fn, x_leaves)
        joint, _ = ir.jvp(grads, x_leaves)
        b = ir.Builder()
        invars = [ir.Var(v.type) for v in fn.invars]
        outs = inline(joint, b, invars + [invars[k] for k in v_leaves])
        hv = ir.dce(ir.Function(invars, b.eqns, outs[len(x_leaves):]))
        skeleton = tree.unflatten(args[0], [None] * len(x_leaves))
        return Program(optimize(hv), skeleton, traced.captured)


def _check_scalar(fn, skeleton, name, fname, holomorphic=False):
    """One float scalar (a complex one for holomorphic=True)."""
    out = fn.outvars[0] if fn.outvars else None
    if (skeleton is not None or out is None or out.type.shape != () or not out.type.is_float
            or out.type.is_complex != holomorphic):
        got = f"a value of type {out.type}" if skeleton is None and out is not None else f"{len(fn.outvars)} values"
        kind = "complex" if holomorphic else "float"
        raise TypeError(f"{name}({fname}) needs a function returning one {kind} scalar; it returned {got}")
