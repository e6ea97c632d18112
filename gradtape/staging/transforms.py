"""The transforms a staged function applies to its trace: Forward and Differentiate.

Each turns a Traced call into a Program (an optimized Function and the
structure of its results). Differentiate builds forward and backward as one
Function: the adjoint of the traced function with the scalar output's
cotangent fixed to the literal 1, so the seed folds into the backward
equations:

    f = sum(x * x)        { a:f64[3] . b = mul a a ; c = reduce_sum[axes=(0,)] b ; d = add a a -> (c, d) }
"""
from __future__ import annotations

from .. import ir
from ..ir.inline import substitute_inputs
from ..ir.optimize import optimize
from ..tracer import tree
from .program import Program


class Forward:
    """The function itself, staged: the result structure is f's."""

    name = "differentiable"
    key = ("forward",)

    def check(self, sig, fname):
        pass

    def build(self, traced, sig, args, fname) -> Program:
        return Program(optimize(traced.fn), traced.out_skeleton, traced.captured, source=traced.fn)


class Differentiate:
    """grad or value_and_grad with respect to the arguments at `argnums`.

    Args:
      argnums: an int (the gradient has that argument's structure) or a
        tuple of ints (a tuple of such structures).
      has_aux: f returns `(output, aux)`; aux is returned, not differentiated.
      return_value: value_and_grad (True) or grad (False).
      holomorphic: f is holomorphic (complex inputs, a complex output): the
        gradient is f'(z), as JAX's holomorphic=True. Without it a complex
        output is refused, and a real output of complex inputs has JAX's
        gradient d f/dx - i d f/dy (docs/complex.md).
    """

    def __init__(self, argnums, has_aux: bool, return_value: bool, holomorphic: bool = False):
        self.single = isinstance(argnums, int)
        self.argnums = (argnums,) if self.single else tuple(argnums)
        self.has_aux = bool(has_aux)
        self.return_value = return_value
        self.holomorphic = bool(holomorphic)
        self.name = "value_and_grad" if return_value else "grad"
        self.key = (self.name, argnums, self.has_aux, self.holomorphic)

    def check(self, sig, fname):
        """Reject, before tracing, arguments that cannot be differentiated."""
        n = len(sig.ranges)
        for i in self.argnums:
            if i >= n:
                raise ValueError(
                    f"{self.name}({fname}): argnums {i} is out of range for a call with {n} "
                    "positional arguments"
                )
            if sig.ranges[i] is None:
                raise ValueError(
                    f"{self.name}({fname}): argument {i} is static (static_argnums) and "
                    "cannot be differentiated; remove it from argnums or from static_argnums"
                )
            start, stop = sig.ranges[i]
            for k in range(start, stop):
                ty = sig.types[k]
                if not ty.is_float:
                    raise TypeError(
                        f"{self.name} requires float inputs: argument {i} of {fname} holds a "
                        f"value of dtype {ty.dtype} ({ty}). Pass floats (1.0, not 1), or leave "
                        "the argument out of argnums."
                    )
                if self.holomorphic and not ty.is_complex:
                    raise TypeError(
                        f"{self.name} with holomorphic=True requires inputs with complex dtype, but "
                        f"argument {i} of {fname} holds a value of dtype {ty.dtype} ({ty})."
                    )

    def build(self, traced, sig, args, fname) -> Program:
        fn, skeleton = traced.fn, traced.out_skeleton
        main, aux_skeleton = self._split_output(fn, skeleton)
        wrt = [k for i in self.argnums for k in range(*sig.ranges[i])]
        loss = ir.dce(ir.Function(fn.invars, fn.eqns, [main]))
        joint, _ = ir.vjp(loss, wrt)
        primal = set(fn.eqns)
        backward = [e for e in joint.eqns if e not in primal]
        grads = list(joint.outvars[1:])
        aux = list(fn.outvars[1:]) if self.has_aux else []
        outs = [main] + aux + grads if self.return_value else grads + aux
        combined = ir.dce(ir.Function(joint.invars, list(fn.eqns) + backward, outs))
        seed = ir.Literal(1, main.type.dtype)
        joint_fn = substitute_inputs(combined, {len(fn.invars): seed})
        return Program(
            optimize(joint_fn), self._skeleton(args, sig, aux_skeleton), traced.captured, source=joint_fn
        )

    def _split_output(self, fn, skeleton):
        if self.has_aux:
            if not (isinstance(skeleton, (tuple, list)) and len(skeleton) == 2):
                raise TypeError(
                    f"{self.name} with has_aux=True needs the function to return a pair "
                    f"(output, aux), but it returned {_structure_text(skeleton)}"
                )
            main_skeleton, aux_skeleton = skeleton
        else:
            main_skeleton, aux_skeleton = skeleton, None
        if main_skeleton is not None:
            raise TypeError(
                "Gradient only defined for scalar-output functions. Output was "
                f"{_structure_text(main_skeleton)}; return one scalar (with has_aux=True, "
                "return (scalar, aux))."
            )
        main = fn.outvars[0]
        if main.type.shape != ():
            raise TypeError(
                "Gradient only defined for scalar-output functions. "
                f"Output had shape: {main.type.shape}."
            )
        if not main.type.is_float:
            raise TypeError(
                f"{self.name} requires real-valued outputs (a float dtype), "
                f"but the output had dtype {main.type.dtype}."
            )
        if self.holomorphic and not main.type.is_complex:
            raise TypeError(
                f"{self.name} with holomorphic=True requires outputs with complex dtype, "
                f"but got {main.type.dtype}."
            )
        if main.type.is_complex and not self.holomorphic:
            raise TypeError(
                f"{self.name} requires real-valued outputs (a float dtype), but got {main.type.dtype}. "
                "For holomorphic differentiation, pass holomorphic=True; for a non-holomorphic "
                "function with a complex output, differentiate its real and imaginary parts."
            )
        return main, aux_skeleton

    def _skeleton(self, args, sig, aux_skeleton):
        parts = []
        for i in self.argnums:
            start, stop = sig.ranges[i]
            parts.append(tree.unflatten(args[i], [None] * (stop - start)))
        grads = parts[0] if self.single else tuple(parts)
        if self.return_value:
            value = (None, aux_skeleton) if self.has_aux else None
            return (value, grads)
        return (grads, aux_skeleton) if self.has_aux else grads


def _structure_text(skeleton) -> str:
    if skeleton is None:
        return "a single value"
    n = len(tree.flatten(skeleton))
    return f"a {type(skeleton).__name__} of {n} value{'s' if n != 1 else ''}"
