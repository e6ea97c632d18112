"""Implicit differentiation: a root or fixed point found by any loop, differentiated by
the implicit function theorem instead of through the loop's iterations.

`custom_root(f, initial_guess, solve, tangent_solve)` has JAX's signature
(jax.lax.custom_root): `solve(f, initial_guess)` finds x* with f(x*) = 0
however it likes (a while_loop, Newton's method, bisection, a fixed number
of steps); the derivative is that of the exact root. With f's parameters
θ (the traced values f reads from its closure), f(x*(θ), θ) = 0 gives

    dx*/dθ = -(∂f/∂x)^-1 ∂f/∂θ,    so the cotangent of θ is  -(∂f/∂θ)^T λ,  (∂f/∂x)^T λ = g

where `tangent_solve(L, g)` solves the linear system L(λ) = g, L being
v -> (∂f/∂x)^T v at the root (as in JAX, which hands it the transposed
map in reverse mode). The root is one `custom_vjp` equation (the solve
inside it, compiled like any code), whose VJP is the rule above; forward
mode transposes it, so both modes, vmap and higher orders work.

`fixed_point(f, a, x_guess)` (the signature of JAX's fixed-point example)
iterates x = f(a, x) to convergence with a while_loop and differentiates by
the same theorem, solving the transposed system by as many iterations of
its Neumann series.

Both differentiate implicitly inside a trace (grad, jvp, vmap, a staged
function); called eagerly they run the solve as it is.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ir.ops.call import call_p
from ..tracer import tree
from ..tracer.custom_vjp import custom_vjp
from ..tracer.tensor import Tensor
from ..tracer.trace import trace_call
from ..tracer.trace_context import current_builder, in_trace
from .control_flow import _abstract, _atom, _LoopSignature, _types, fori_loop, while_loop
from .elementwise import abs as _abs, greater, logical_and, maximum, negative
from .reductions import max as _max

__all__ = ["custom_root", "fixed_point"]


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """The root of `f` found by `solve`, differentiated by the implicit function theorem.

    JAX's jax.lax.custom_root: the derivative does not go through solve's
    iterations (solve may even be non-differentiable); it is that of the
    exact root with respect to the traced values f reads from its closure.

    Args:
      f: `x -> residual`, the residual of x's structure, shapes and dtypes
        (zero at the root).
      initial_guess: the starting point (an array or a pytree of arrays).
      solve: `solve(f, initial_guess) -> x` with f(x) = 0 (or `(x, aux)`
        with has_aux).
      tangent_solve: `tangent_solve(L, y) -> z` solving the linear system
        L(z) = y, L a linear function of x's structure (for a scalar x:
        `lambda L, y: y / L(1.0)`).
      has_aux: solve returns `(x, aux)`; aux is returned too, not differentiated.

    Returns:
      The root x (and aux with has_aux).

    Raises:
      TypeError: f's residual differs from x in structure, shape or dtype.

    Example::

        >>> def sqrt(a):      # the root of x^2 - a, by Newton's method run 30 times
        ...     newton = lambda f, x: gt.fori_loop(0, 30, lambda i, x: x - f(x) / (2 * x), x)
        ...     return gt.custom_root(lambda x: x * x - a, 1.0, newton, lambda L, y: y / L(1.0))
        >>> float(gt.grad(sqrt)(4.0))     # 1 / (2 sqrt(a))
        0.25
    """
    leaves = tree.flatten(initial_guess)
    if not in_trace() and not any(_abstract(v) for v in leaves):
        return solve(f, initial_guess)
    return _implicit_root(f, initial_guess, solve, lambda L, y, aux: tangent_solve(L, y), has_aux)


def _implicit_root(f, guess, solve, linear_solve, has_aux):
    """custom_root, with `linear_solve(L, y, aux)` also reading solve's aux ((), without)."""
    leaves = tree.flatten(guess)
    types = _types(leaves)
    traced = trace_call(f, (guess,), _LoopSignature(types, [(0, len(types))]), "custom_root f")
    out = [v.type for v in traced.fn.outvars]
    skeleton = tree.unflatten(guess, [None] * len(types))
    if tree.unflatten(traced.out_skeleton, [None] * len(out)) != skeleton or out != types:
        raise TypeError(f"custom_root: f must return a residual of x's structure, shapes and dtypes; "
                        f"x is {', '.join(map(str, types))} and f returns {', '.join(map(str, out))}")
    problem = _Problem(traced.fn, skeleton, solve, linear_solve, has_aux, len(types))
    builder = current_builder(leaves)
    params = tuple(Tensor(sym=ir.Sym(v, builder)) for v in traced.captured)
    return _root(problem, guess, params)


class _Problem:
    """What one custom_root call solves (a nondiff argument: hashed by identity, traced per call)."""

    def __init__(self, fn, skeleton, solve, linear_solve, has_aux, n):
        self.fn, self.skeleton, self.solve, self.linear_solve = fn, skeleton, solve, linear_solve
        self.has_aux, self.n = has_aux, n

    def residual(self, params):
        """f with its parameters given explicitly: x -> f(x)."""
        return lambda x: tree.unflatten(self.skeleton, _apply(self.fn, tree.flatten(x) + list(params)))

    def transposed(self, x, params, wrt):
        """v -> (∂f/∂inputs)^T v at (x, params), for f's inputs numbered `wrt` (x's leaves first)."""
        joint, _ = ir.vjp(self.fn, wrt)
        n_out = len(self.fn.outvars)
        parts = ir.select_outputs(joint, list(range(n_out, n_out + len(wrt))))
        return lambda v: _apply(parts, tree.flatten(x) + list(params) + tree.flatten(v))


def _apply(fn, args) -> list:
    """fn's results on Tensors `args`, as `call` equations (one per result)."""
    builder = current_builder(args)
    atoms = [_atom(a, t.dtype) for a, t in zip(args, fn.in_types)]
    return [Tensor(sym=ir.Sym(builder.bind(call_p, atoms, {"fn": ir.select_outputs(fn, [j])}), builder))
            for j in range(len(fn.outvars))]


def _solve(problem, guess, params):
    return problem.solve(problem.residual(params), guess)


def _root_fwd(problem, guess, params):
    out = _solve(problem, guess, params)
    x, aux = out if problem.has_aux else (out, ())
    return out, (x, aux, params)


def _root_bwd(problem, residuals, g):
    x, aux, params = residuals
    if problem.has_aux:
        g = g[0]
    n = problem.n
    at_x = problem.transposed(x, params, list(range(n)))
    lam = problem.linear_solve(lambda v: tree.unflatten(problem.skeleton, at_x(v)), g, aux)
    cts = [None] * len(params)
    floats = [i for i, p in enumerate(params) if p.dtype.kind == "f"]
    if floats:
        for i, c in zip(floats, problem.transposed(x, params, [n + i for i in floats])(lam)):
            cts[i] = negative(c)
    return None, tuple(cts)


_root = custom_vjp(_solve, nondiff_argnums=(0,))
_root.defvjp(_root_fwd, _root_bwd)


def fixed_point(f, a, x_guess, tol=1e-12, max_steps=10_000):
    """The fixed point x = f(a, x), iterated from x_guess, differentiated implicitly.

    The forward pass iterates x <- f(a, x) (a while_loop) until no element
    changes by more than `tol` or `max_steps` steps have run; the
    derivative with respect to `a` (and anything f reads from its closure)
    is the implicit function theorem's, (I - ∂f/∂x)^-1 ∂f/∂a, with the
    transposed system solved by its Neumann series (twice as many terms as
    the forward pass took steps, plus 10), not through the iterations. f
    must be a contraction near the fixed point, as the iteration needs.

    Args:
      f: `(a, x) -> x`, keeping x's structure, shapes and dtypes.
      a: the parameters (a pytree of arrays).
      x_guess: the starting point (an array or pytree of arrays).
      tol: the convergence tolerance on the largest change of an element.
      max_steps: the most iterations of the forward pass.

    Returns:
      The fixed point x.

    Example::

        >>> x = lambda a: gt.fixed_point(lambda a, x: gt.cos(a * x), a, 1.0)
        >>> round(float(x(0.7)), 5), round(float(gt.grad(x)(0.7)), 6)
        (0.83427, -0.331888)
    """
    def iterate(step, x0):
        def body(c):
            x, _, k = c
            return step(x), x, k + 1

        def going(c):
            x, prev, k = c
            return logical_and(greater(_max_change(x, prev), tol), k < max_steps)

        x, _, steps = while_loop(going, body, (step(x0), x0, np.int64(1)))
        return x, steps

    def solve(g, x0):  # iterates with the residual g(x) = f(a, x) - x, whose parameters are explicit
        return iterate(lambda x: tree.unflatten(x, [xi + gi for xi, gi in zip(tree.flatten(x), tree.flatten(g(x)))]),
                       x0)

    def neumann(L, y, steps):
        # L(v) = (∂f/∂x)^T v - v; L(z) = y  <=>  z = (∂f/∂x)^T z - y, iterated from z = 0
        def body(i, z):
            return tree.unflatten(y, [lz + zi - yi for lz, zi, yi in
                                      zip(tree.flatten(L(z)), tree.flatten(z), tree.flatten(y))])
        return fori_loop(0, 2 * steps + 10, body, tree.unflatten(y, [yi * 0.0 for yi in tree.flatten(y)]))

    def residual(x):
        return tree.unflatten(x, [fx - xi for fx, xi in zip(tree.flatten(f(a, x)), tree.flatten(x))])

    if not in_trace() and not any(_abstract(v) for v in tree.flatten(x_guess) + tree.flatten(a)):
        return iterate(lambda x: f(a, x), x_guess)[0]
    x, _ = _implicit_root(residual, x_guess, solve, neumann, has_aux=True)
    return x


def _max_change(x, prev):
    out = None
    for u, v in zip(tree.flatten(x), tree.flatten(prev)):
        c = _max(_abs(u - v))
        out = c if out is None else maximum(out, c)
    return out
