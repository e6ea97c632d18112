"""Checking derivatives against finite differences, for gradtape's tests and yours.

`check_grads(f, args)` traces `f`, then compares every derivative gradtape
computes with central differences along random directions, to the order
asked, in reverse mode (vector-Jacobian products) and forward mode
(Jacobian-vector products). Higher orders check the derivative function
itself, so a rule whose own derivative is wrong is caught too.

Example::

    >>> from gradtape.testing import check_grads
    >>> check_grads(lambda x: gradtape.sum(gradtape.tanh(x) ** 2), [np.ones(3)], order=2)
"""
from __future__ import annotations

import numpy as np

from . import ir
from .tracer import tree
from .tracer.trace import make_ir

_DEFAULTS = {  # dtype: (eps, atol, rtol)
    np.dtype(np.float64): (1e-4, 1e-6, 1e-5),
    np.dtype(np.float32): (3e-2, 3e-2, 3e-2),
    np.dtype(np.float16): (1e-1, 1e-1, 1e-1),
}


def check_grads(f, args, order: int = 2, modes=("rev", "fwd"), eps=None, atol=None, rtol=None, seed=0):
    """Assert that gradtape's derivatives of `f` at `args` match finite differences.

    Args:
      f: a function of Tensors (gradtape or NumPy calls on them).
      args: a list or tuple of arguments (arrays, scalars, nested structures).
      order: how many times to differentiate (1 = first derivatives).
      modes: "rev" and/or "fwd".
      eps, atol, rtol: step and tolerances; defaults depend on the dtype.
      seed: seed of the random directions.

    Raises:
      AssertionError: naming the mode, order and both values, on a mismatch.
    """
    fn = make_ir(f, *args)
    values = [np.asarray(v) for v in tree.flatten(list(args))]
    check_function_grads(fn, values, order, modes, eps, atol, rtol, seed)


def check_function_grads(fn, values, order=2, modes=("rev", "fwd"), eps=None, atol=None, rtol=None, seed=0):
    """check_grads for an ir.Function evaluated with the reference interpreter."""
    rng = np.random.default_rng(seed)
    for mode in modes:
        if mode not in ("rev", "fwd"):
            raise ValueError(f"check_grads: unknown mode {mode!r}; use 'rev' and/or 'fwd'")
        _check(fn, [np.asarray(v) for v in values], order, mode, eps, atol, rtol, rng, 1)


def _tolerances(fn, eps, atol, rtol):
    # The least precise float dtype anywhere in fn limits the attainable accuracy.
    all_vars = list(fn.invars) + [v for e in fn.eqns for v in e.outvars]
    dtypes = [v.type.dtype for v in all_vars if v.type.is_float]
    worst = max(dtypes, key=lambda d: _DEFAULTS.get(d, _DEFAULTS[np.dtype(np.float64)])[0], default=np.dtype(np.float64))
    e, a, r = _DEFAULTS.get(worst, _DEFAULTS[np.dtype(np.float64)])
    return eps or e, atol or a, rtol or r


def _random_like(rng, v):
    return rng.standard_normal(v.shape).astype(v.dtype) if v.dtype.kind == "f" else None


def _vdot(xs, ys) -> float:
    return float(sum(np.sum(np.asarray(x, np.float64) * np.asarray(y, np.float64)) for x, y in zip(xs, ys)))


def _check(fn, values, order, mode, eps, atol, rtol, rng, level):
    eps, atol, rtol = _tolerances(fn, eps, atol, rtol)
    wrt = [i for i, v in enumerate(fn.invars) if v.type.is_float]
    if not wrt:
        return
    direction = [_random_like(rng, values[i]) for i in wrt]
    out_float = [i for i, v in enumerate(fn.outvars) if v.type.is_float]

    def at(step):
        moved = list(values)
        for i, d in zip(wrt, direction):
            moved[i] = (values[i] + step * d).astype(values[i].dtype)
        outs = ir.eval_function(fn, moved)
        return [np.asarray(outs[i], np.float64) for i in out_float]

    fd = [(p - m) / (2 * eps) for p, m in zip(at(eps), at(-eps))]
    n_out = len(fn.outvars)
    if mode == "rev":
        joint, _ = ir.vjp(fn, wrt)
        cts = [
            _random_like(rng, np.zeros(v.type.shape, v.type.dtype))
            if v.type.is_float
            else np.zeros(v.type.shape, v.type.dtype)
            for v in fn.outvars
        ]
        grads = ir.eval_function(joint, values + cts)[n_out:]
        ad = _vdot(grads, direction)
        ref = _vdot([cts[i] for i in out_float], fd)
        _assert_close(ad, ref, atol, rtol, fn, mode, level)
        derivative = ir.select_outputs(joint, range(n_out, len(joint.outvars)))
        next_values = values + cts
    else:
        joint, _ = ir.jvp(fn, wrt)
        tangents_out = ir.eval_function(joint, values + direction)[n_out:]
        probe = [_random_like(rng, np.asarray(fd_i)) for fd_i in fd]
        ad = _vdot([tangents_out[i] for i in out_float], probe)
        ref = _vdot(fd, probe)
        _assert_close(ad, ref, atol, rtol, fn, mode, level)
        derivative = ir.select_outputs(joint, range(n_out, len(joint.outvars)))
        next_values = values + direction
    if order > 1:
        _check(derivative, next_values, order - 1, mode, eps, atol, rtol, rng, level + 1)


def _assert_close(ad, ref, atol, rtol, fn, mode, level):
    if not np.isfinite(ad) or not np.isfinite(ref) or abs(ad - ref) > atol + rtol * max(abs(ad), abs(ref)):
        raise AssertionError(
            f"check_grads: {mode}-mode derivative of order {level} does not match "
            f"finite differences: autodiff gives {ad!r}, finite differences {ref!r}.\n"
            f"Function differentiated: {fn.pretty()}"
        )
