"""Central finite differences over the real and imaginary parts of complex arguments.

JAX's convention (docs/complex.md): the gradient of a real function L of a
complex z is dL/dx - i dL/dy. Real arguments get dL/dx.
"""
from __future__ import annotations

import numpy as np

STEP = 1e-5


def _bumped(args, k, index, delta):
    out = [np.array(a, copy=True) for a in args]
    out[k][index] += delta
    return out


def jax_gradient(loss, args, k, step=STEP) -> np.ndarray:
    """dL/dx - i dL/dy for each element of args[k] (dL/dx for a real argument)."""
    a = np.asarray(args[k])
    grad = np.zeros(a.shape, a.dtype)
    for index in np.ndindex(a.shape):
        dx = (loss(*_bumped(args, k, index, step)) - loss(*_bumped(args, k, index, -step))) / (2 * step)
        if a.dtype.kind == "c":
            dy = (loss(*_bumped(args, k, index, 1j * step)) - loss(*_bumped(args, k, index, -1j * step))) / (2 * step)
            grad[index] = dx - 1j * dy
        else:
            grad[index] = dx
    return grad


def directional(f, args, tangents, step=STEP):
    """(f(args + h t) - f(args - h t)) / 2h: the JVP of f along the tangents."""
    plus = f(*[a + step * t for a, t in zip(args, tangents)])
    minus = f(*[a - step * t for a, t in zip(args, tangents)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * step)


def random_like(rng, a) -> np.ndarray:
    """A random array of a's shape and kind (complex or real float64)."""
    a = np.asarray(a)
    r = rng.standard_normal(a.shape)
    return r + 1j * rng.standard_normal(a.shape) if a.dtype.kind == "c" else r
