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
function) and on a GradientTape or ForwardAccumulator: called eagerly
while one records, the solve runs unrecorded and the root is recorded as
the same custom_vjp equation, its parameters the recorded values f reads
(implicit_tape.py). With no recorder they just run the solve.

The VJP reads the forward pass's x, whose own derivative would go through
the solve's iterations (zero for a stop_gradient'ed solve). So that the
derivatives of the VJP (second and higher orders) are the theorem's too,
it reads x through `_attach`: a custom_vjp identity whose VJP is the
theorem's again, nested `_ATTACH_DEPTH` deep: derivatives through the
fourth order are exact; a fifth would go through the iterations.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .. import ir
from ..ir.ops.call import call_p
from ..tracer import tape_stack, tree
from ..tracer.custom_vjp import custom_vjp
from ..tracer.tensor import Tensor
from ..tracer.trace import trace_call
from ..tracer.trace_context import current_builder, in_trace
from .control_flow import _abstract, _atom, _LoopSignature, _types, fori_loop, while_loop
from .implicit_tape import TapeReads
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
    if _runs_as_it_is(initial_guess):
        return solve(f, initial_guess)
    return _implicit_root("custom_root", f, initial_guess, solve, lambda L, y, aux: tangent_solve(L, y), has_aux)


def _runs_as_it_is(*values) -> bool:
    """Outside any trace with no tape (or accumulator) recording: nothing to differentiate."""
    return not in_trace() and not tape_stack.active() and not any(_abstract(v) for v in tree.flatten(values))


# Levels of `_attach` under the root's VJP: derivatives up to this order + 1 are the theorem's.
_ATTACH_DEPTH = 3


def _implicit_root(name, f, guess, solve, linear_solve, has_aux):
    """custom_root (or fixed_point, `name`), `linear_solve(L, y, aux)` also reading solve's aux."""
    leaves = tree.flatten(guess)
    types = _types(leaves)
    eager = not in_trace() and not any(_abstract(v) for v in leaves)
    # Eagerly (on a tape), the recorded values f reads become its parameters (implicit_tape.py).
    reads = TapeReads() if eager else contextlib.nullcontext()
    with reads:
        traced = trace_call(f, (guess,), _LoopSignature(types, [(0, len(types))]), f"{name} f")
    out = [v.type for v in traced.fn.outvars]
    skeleton = tree.unflatten(guess, [None] * len(types))
    if tree.unflatten(traced.out_skeleton, [None] * len(out)) != skeleton or out != types:
        raise TypeError(f"{name}: f must return a residual of x's structure, shapes and dtypes; "
                        f"x is {', '.join(map(str, types))} and f returns {', '.join(map(str, out))}")
    problem = _Problem(traced.fn, skeleton, f, solve, linear_solve, has_aux, len(types))
    if eager:
        params = tuple(reads.tensors(traced.captured))
    else:
        builder = current_builder(leaves)
        params = tuple(Tensor(sym=ir.Sym(v, builder)) for v in traced.captured)
    return problem.root(problem, guess, params)


class _Problem:
    """What one custom_root call solves, and its two custom_vjp functions (made per call, as
    the problem is their nondiff argument, hashed by identity: nothing outlives the call)."""

    def __init__(self, fn, skeleton, f, solve, linear_solve, has_aux, n):
        self.fn, self.skeleton, self.f, self.solve, self.linear_solve = fn, skeleton, f, solve, linear_solve
        self.has_aux, self.n = has_aux, n
        self._vjps = {}
        self.root = custom_vjp(_solve, nondiff_argnums=(0,))
        self.root.defvjp(_root_fwd, _root_bwd)
        self.attach = custom_vjp(_attached, nondiff_argnums=(0, 1))
        self.attach.defvjp(_attach_fwd, _attach_bwd)

    def residual(self, params):
        """f with its parameters given explicitly: x -> f(x)."""
        return lambda x: tree.unflatten(self.skeleton, _apply(self.fn, tree.flatten(x) + list(params)))

    def transposed(self, x, params, wrt):
        """v -> (∂f/∂inputs)^T v at (x, params), for f's inputs numbered `wrt` (x's leaves first)."""
        parts = self._vjps.get(tuple(wrt))
        if parts is None:
            joint, _ = ir.vjp(self.fn, wrt)
            n_out = len(self.fn.outvars)
            parts = self._vjps[tuple(wrt)] = ir.select_outputs(joint, list(range(n_out, n_out + len(wrt))))
        return lambda v: _apply(parts, tree.flatten(x) + list(params) + tree.flatten(v))


def _apply(fn, args) -> list:
    """fn's results on Tensors `args`, as `call` equations (one per result)."""
    builder = current_builder(args)
    atoms = [_atom(a, t.dtype) for a, t in zip(args, fn.in_types)]
    return [Tensor(sym=ir.Sym(builder.bind(call_p, atoms, {"fn": ir.select_outputs(fn, [j])}), builder))
            for j in range(len(fn.outvars))]


def _solve(problem, guess, params):
    if in_trace():
        return problem.solve(problem.residual(params), guess)
    # Run on a tape's values (custom_vjp runs it with the tapes paused): f reads them itself.
    return problem.solve(problem.f, guess)


def _root_fwd(problem, guess, params):
    out = _solve(problem, guess, params)
    x, aux = out if problem.has_aux else (out, ())
    return out, (x, aux, params)


def _root_bwd(problem, residuals, g):
    x, aux, params = residuals
    return None, _implicit_cotangents(problem, x, aux, params, g[0] if problem.has_aux else g, _ATTACH_DEPTH)


def _implicit_cotangents(problem, x, aux, params, g, depth) -> tuple:
    """The cotangents of the parameters for the cotangent g of the root x: -(∂f/∂θ)^T λ with
    (∂f/∂x)^T λ = g. x is the forward pass's answer, whose own derivative would go through the
    solve's iterations; `_attach` gives it the theorem's, for the derivatives of this rule."""
    if depth > 0:
        x = problem.attach(problem, depth, x, aux, params)
    n = problem.n
    at_x = problem.transposed(x, params, list(range(n)))
    lam = problem.linear_solve(lambda v: tree.unflatten(problem.skeleton, at_x(v)), g, aux)
    cts = [None] * len(params)
    floats = [i for i, p in enumerate(params) if p.dtype.kind == "f"]
    if floats:
        for i, c in zip(floats, problem.transposed(x, params, [n + i for i in floats])(lam)):
            cts[i] = negative(c)
    return tuple(cts)


def _attached(problem, depth, x, aux, params):
    """x, the root for `params`: its value as given, its derivative the implicit function
    theorem's (through `depth` more levels of derivatives), never the solve's iterations."""
    return x


def _attach_fwd(problem, depth, x, aux, params):
    return x, (x, aux, params)


def _attach_bwd(problem, depth, residuals, g):
    x, aux, params = residuals
    return None, None, _implicit_cotangents(problem, x, aux, params, g, depth - 1)


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
    def step_of(x):  # f(a, x), after checking it keeps x's structure, shapes and dtypes
        fx = f(a, x)
        _check_like_x("fixed_point", "f(a, x)", x, fx)
        return fx

    def iterate(step, x0):
        def body(c):
            x, _, k = c
            return step(x), x, k + 1

        def going(c):
            x, prev, k = c
            return logical_and(greater(_max_change(x, prev), tol), k < max_steps)

        x, _, steps = while_loop(going, body, (step(x0), x0, np.int64(1)))
        return x, steps

    def solve(g, x0):  # iterates with the residual g(x) = f(a, x) - x (its parameters explicit, traced)
        return iterate(lambda x: tree.unflatten(x, [xi + gi for xi, gi in zip(tree.flatten(x), tree.flatten(g(x)))]),
                       x0)

    def neumann(L, y, steps):
        # L(v) = (∂f/∂x)^T v - v; L(z) = y  <=>  z = (∂f/∂x)^T z - y, iterated from z = 0
        def body(i, z):
            return tree.unflatten(y, [lz + zi - yi for lz, zi, yi in
                                      zip(tree.flatten(L(z)), tree.flatten(z), tree.flatten(y))])
        return fori_loop(0, 2 * steps + 10, body, tree.unflatten(y, [yi * 0.0 for yi in tree.flatten(y)]))

    def residual(x):
        return tree.unflatten(x, [fx - xi for fx, xi in zip(tree.flatten(step_of(x)), tree.flatten(x))])

    if _runs_as_it_is(x_guess, a):
        return iterate(step_of, x_guess)[0]
    x, _ = _implicit_root("fixed_point", residual, x_guess, solve, neumann, has_aux=True)
    return x


def _check_like_x(name, what, x, fx):
    """TypeError unless `fx` has x's structure, shapes and dtypes (the message shows both)."""
    xs, fxs = tree.flatten(x), tree.flatten(fx)
    types, got = _types(xs), _types(fxs)
    if tree.unflatten(x, [None] * len(xs)) != tree.unflatten(fx, [None] * len(fxs)) or types != got:
        raise TypeError(f"{name}: f must return x's structure, shapes and dtypes; x is "
                        f"{', '.join(map(str, types))} and {what} returns {', '.join(map(str, got))}")


def _max_change(x, prev):
    out = None
    for u, v in zip(tree.flatten(x), tree.flatten(prev)):
        c = _max(_abs(u - v))
        out = c if out is None else maximum(out, c)
    return out
