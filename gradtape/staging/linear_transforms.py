"""Forward- and reverse-mode transforms whose results are linear maps: jvp, vjp, linearize.

`JVP` stages `(primals, tangents) -> (outputs, output tangents)` as one
Function. `VJP` and `Linearize` return a function to call later (a
pullback, a linear map), so their Function is split (ir.partial_eval): the
Program computes the outputs and the *residuals* the later half needs, and
`Program.later` maps (residuals, cotangents or tangents) to the result, so
each later call runs only the linear half.
"""
from __future__ import annotations

from .. import ir
from ..ir.optimize import optimize
from ..ir.partial_eval import split
from ..tracer import tree
from .program import Program


def _leaf_count(sig, arg: int) -> int:
    start, stop = sig.ranges[arg]
    return stop - start


def _require_float_leaves(types, name, fname, what="primal"):
    for k, ty in enumerate(types):
        if not ty.is_float:
            raise TypeError(
                f"{name}({fname}): {what} {k} has dtype {ty.dtype} ({ty}); {name} differentiates "
                "float inputs only. Pass floats (1.0, not 1), or close over the integer value."
            )


class JVP:
    """`(primals, tangents) -> (f(*primals), J @ tangents)`, staged on the two tuples."""

    name = "jvp"
    key = ("jvp",)

    def check(self, sig, fname):
        n = _leaf_count(sig, 0)
        primal_types, tangent_types = sig.types[:n], sig.types[n:2 * n]
        _require_float_leaves(primal_types, self.name, fname)
        for k, (p, t) in enumerate(zip(primal_types, tangent_types)):
            if p != t:
                raise TypeError(
                    f"jvp({fname}): tangent {k} is {t} but its primal is {p}; each tangent must "
                    "have its primal's shape and dtype"
                )

    def build(self, traced, sig, args, fname) -> Program:
        fn = traced.fn
        n = _leaf_count(sig, 0)
        captured = fn.invars[2 * n:]
        primal = ir.Function(fn.invars[:n] + captured, fn.eqns, fn.outvars)
        joint, _ = ir.jvp(primal, range(n))
        tangents = joint.invars[n + len(captured):]
        staged = ir.Function(fn.invars[:n] + tangents + captured, joint.eqns, joint.outvars)
        skeleton = traced.out_skeleton
        return Program(optimize(staged), (skeleton, skeleton), traced.captured, source=staged)


class VJP:
    """`primals -> (f(*primals), residuals)`, with `later`: (residuals, cts) -> grads.

    With has_aux, f returns `(output, aux)`; aux is computed now and returned,
    not differentiated.
    """

    name = "vjp"

    def __init__(self, has_aux: bool):
        self.has_aux = bool(has_aux)
        self.key = ("vjp", self.has_aux)

    def check(self, sig, fname):
        _require_float_leaves(sig.types, self.name, fname)

    def build(self, traced, sig, args, fname) -> Program:
        fn, skeleton = traced.fn, traced.out_skeleton
        main_skeleton, aux_skeleton = _split_aux(skeleton, self.has_aux, fname)
        n_main = len(tree.flatten(main_skeleton)) if main_skeleton is not None else 1
        main_outs, aux_outs = fn.outvars[:n_main], fn.outvars[n_main:]
        n_leaves = len(sig.types)
        joint, _ = ir.vjp(ir.Function(fn.invars, fn.eqns, main_outs), range(n_leaves))
        primal = set(fn.eqns)  # all of them: the adjoint pass dropped those only aux needs
        eqns = list(fn.eqns) + [e for e in joint.eqns if e not in primal]
        outs = list(joint.outvars[:n_main]) + list(aux_outs) + list(joint.outvars[n_main:])
        known, later, n_res = split(ir.Function(joint.invars, eqns, outs), len(fn.invars), len(fn.outvars))
        grads_skeleton = tuple(tree.unflatten(a, [None] * _leaf_count(sig, i)) for i, a in enumerate(args))
        later_program = Program(optimize(later), grads_skeleton, source=later)
        return Program(optimize(known), (skeleton, (None,) * n_res), traced.captured, later=later_program, source=known)


class Linearize:
    """`primals -> (f(*primals), residuals)`, with `later`: (residuals, tangents) -> J @ tangents."""

    name = "linearize"
    key = ("linearize",)

    def check(self, sig, fname):
        _require_float_leaves(sig.types, self.name, fname)

    def build(self, traced, sig, args, fname) -> Program:
        fn = traced.fn
        n_leaves = len(sig.types)
        joint, _ = ir.jvp(fn, range(n_leaves))
        known, later, n_res = split(joint, len(fn.invars), len(fn.outvars))
        later_program = Program(optimize(later), traced.out_skeleton, source=later)
        return Program(optimize(known), (traced.out_skeleton, (None,) * n_res), traced.captured, later=later_program, source=known)


def _split_aux(skeleton, has_aux, fname):
    if not has_aux:
        return skeleton, None
    if not (isinstance(skeleton, (tuple, list)) and len(skeleton) == 2):
        raise TypeError(f"vjp({fname}) with has_aux=True needs the function to return a pair (output, aux)")
    return skeleton
