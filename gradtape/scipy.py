"""SciPy interop: `minimize` with gradients, and Hessian-vector products, compiled by gradtape.

    res = gradtape.scipy.minimize(rosenbrock, np.zeros(100), method="L-BFGS-B")

SciPy asks for the objective and its gradient in separate calls, usually
at the same point one after the other. Here both come from one compiled
`value_and_grad` call, cached on the last point: SciPy's `fun(x)` then
`jac(x)` cost one native call. Methods that use Hessian-vector products
(Newton-CG, trust-ncg, trust-krylov, trust-constr) get `hessp` from
`gradtape.hvp` (forward over reverse, the Hessian is never formed);
dogleg and trust-exact, which need the whole Hessian, get
`gradtape.hessian`.

SciPy is an optional dependency: importing this module does not need it;
calling `minimize` does. `gradtape.scipy.special` (gradtape/scipy_special.py)
has scipy.special's functions on tensors.
"""
from __future__ import annotations

import numpy as np

import sys

from . import scipy_special as special
from .staging import differentiable, hessian, hvp, value_and_grad

# `import gradtape.scipy.special` and `from gradtape.scipy import special` find the
# module here: gradtape/scipy.py stays a module (a gradtape/scipy/ package would be
# mistaken for SciPy by the layering check, which names third-party packages by their top name).
sys.modules[__name__ + ".special"] = special

# Methods by what they take from us (lower-case, as SciPy compares them).
_NO_GRADIENT = {"nelder-mead", "powell", "cobyla", "cobyqa"}
_HESSP = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
_HESS = {"dogleg", "trust-exact"}


def minimize(fun, x0, method=None, args=(), **kwargs):
    """`scipy.optimize.minimize` with the derivatives of `fun` computed by gradtape.

    Args:
      fun: `fun(x, *args) -> scalar`, written with gradtape functions (or
        NumPy calls on its arguments); `x` is a float64 vector. It is traced
        once per shape of its arguments and compiled.
      x0: the starting point (converted to a float64 vector).
      method: any `scipy.optimize.minimize` method; None lets SciPy choose
        (BFGS, L-BFGS-B or SLSQP, all given gradients).
      args: extra arguments of `fun` (arrays or numbers); they are arguments
        of the compiled functions, not constants, so new values do not retrace.
      **kwargs: passed on to `scipy.optimize.minimize` (bounds, constraints,
        tol, callback, options, ...). A `jac`, `hess` or `hessp` given here
        replaces gradtape's.

    Returns:
      SciPy's OptimizeResult (`x` a float64 vector, `fun` a float, `nfev`,
      `njev`, ...), plus `gradtape_calls`: a dict counting the compiled
      calls made, `{'value_and_grad': n, 'hessp': m, 'hess': k, 'value': j}`.
      `nfev` equals `gradtape_calls['value_and_grad']` when SciPy asks for
      every gradient at a point whose value it asked for (L-BFGS-B, BFGS, CG
      and Newton-CG do): nothing is computed twice.

    Raises:
      ImportError: SciPy is not installed (`pip install gradtape[scipy]`).
      ValueError: x0 is not a vector.
      TypeError: `fun` does not return one float scalar.

    Example::

        >>> def rosen(x):
        ...     return gradtape.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
        >>> res = gradtape.scipy.minimize(rosen, np.zeros(10), method="L-BFGS-B")
        >>> np.allclose(res.x, 1.0, atol=1e-4), res.nfev == res.gradtape_calls["value_and_grad"]
        (True, True)
    """
    optimize = _scipy_optimize()
    x0 = np.atleast_1d(np.asarray(x0, dtype=np.float64))
    if x0.ndim != 1:
        raise ValueError(
            f"gradtape.scipy.minimize: x0 must be a vector (SciPy minimizes over 1-D arrays), got shape "
            f"{x0.shape}; pass x0.ravel() and reshape inside fun"
        )
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    name = method.lower() if isinstance(method, str) else None
    objective = Objective(fun, args)
    if name in _NO_GRADIENT:
        options = {}
        target = objective.value
    else:
        options = {"jac": objective.jac}
        target = objective.fun
        if name in _HESSP and "hess" not in kwargs:
            options["hessp"] = objective.hessp
        elif name in _HESS:
            options["hess"] = objective.hess
    options.update(kwargs)
    result = optimize.minimize(target, x0, method=method, **options)
    result.gradtape_calls = dict(objective.calls)
    return result


class Objective:
    """`fun` and its derivatives as SciPy calls them, each a compiled gradtape function.

    `fun(x)` and `jac(x)` share one `value_and_grad` call per distinct x
    (the last x, its value and gradient are kept); `hessp(x, p)` and
    `hess(x)` are compiled separately. `calls` counts the compiled calls.

    Args:
      fun: `fun(x, *args) -> scalar`, gradtape code.
      args: the extra arguments, passed to every call.
    """

    def __init__(self, fun, args=()):
        self.args = tuple(args)
        self.calls = {"value_and_grad": 0, "hessp": 0, "hess": 0, "value": 0}
        self._fun = fun
        self._value_and_grad = value_and_grad(fun)
        self._value = self._hvp = self._hessian = None
        self._x = self._f = self._g = None

    def _evaluate(self, x):
        if self._x is not None and self._x.shape == np.shape(x) and np.array_equal(self._x, x):
            return
        x = np.array(x, dtype=np.float64)  # a private copy: SciPy may reuse its array in place
        f, g = self._value_and_grad(x, *self.args)
        self.calls["value_and_grad"] += 1
        self._x, self._f, self._g = x, float(f), g

    def fun(self, x) -> float:
        """The value at x (from the fused call, made now or kept from the last x)."""
        self._evaluate(x)
        return self._f

    def jac(self, x) -> np.ndarray:
        """The gradient at x, float64 (a fresh copy: SciPy may modify it)."""
        self._evaluate(x)
        return self._g.copy()

    def hessp(self, x, p) -> np.ndarray:
        """The Hessian at x times p, without forming the Hessian (gradtape.hvp)."""
        if self._hvp is None:
            self._hvp = hvp(self._fun)
        self.calls["hessp"] += 1
        return self._hvp(_vector(x), _vector(p), *self.args)

    def hess(self, x) -> np.ndarray:
        """The whole Hessian at x (for the methods that need it: dogleg, trust-exact)."""
        if self._hessian is None:
            self._hessian = hessian(self._fun)
        self.calls["hess"] += 1
        return self._hessian(_vector(x), *self.args)

    def value(self, x) -> float:
        """The value alone (for the derivative-free methods), from a compiled forward function."""
        if self._value is None:
            self._value = differentiable(self._fun)
        self.calls["value"] += 1
        return float(self._value(_vector(x), *self.args))


def _vector(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)


def _scipy_optimize():
    try:
        import scipy.optimize
    except ImportError as err:
        raise ImportError(
            "gradtape.scipy.minimize needs SciPy, which is not installed: "
            "pip install gradtape[scipy] (or pip install scipy)"
        ) from err
    return scipy.optimize
