"""Central finite differences: the independent reference the gradient tests compare with."""
import numpy as np


def central_differences(f, x, eps=1e-6):
    """The gradient of scalar function `f` at array `x`, one coordinate at a time."""
    g = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        g.flat[i] = (float(f(x + step)) - float(f(x - step))) / (2 * eps)
    return g
