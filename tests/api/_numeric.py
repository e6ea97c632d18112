"""Central finite differences of NumPy reference functions, for the api tests."""
import numpy as np


def numeric_grad(f, x, eps=1e-6):
    """d f / d x by central differences; f maps an array (or float) to a float."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def numeric_derivative(f, x, order, eps=1e-3):
    """The order-th derivative of a scalar function at x, by nested central differences."""
    if order == 0:
        return f(x)
    return (numeric_derivative(f, x + eps, order - 1, eps) - numeric_derivative(f, x - eps, order - 1, eps)) / (2 * eps)


def numeric_jacobian(f, x, eps=1e-6):
    """d f / d x by central differences, shaped f(x).shape + x.shape."""
    x = np.array(x, dtype=np.float64)
    out = np.asarray(f(x))
    J = np.zeros(out.shape + x.shape)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        J[(...,) + i] = (np.asarray(f(up)) - np.asarray(f(down))) / (2 * eps)
    return J
