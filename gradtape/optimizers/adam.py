"""Adam and AdamW, as Keras defines them."""
from __future__ import annotations

import math

import numpy as np

from ._generic import maximum, sqrt
from .base import Optimizer


class Adam(Optimizer):
    """Adam (Kingma and Ba), with Keras's formulas and defaults.

    Slots 'momentum' (m) and 'velocity' (v), zeros at first; for update
    number t = iterations + 1:

        m = m + (g - m) * (1 - beta_1)
        v = v + (g * g - v) * (1 - beta_2)
        alpha = lr * sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        p = p - alpha * m / (sqrt(v) + epsilon)

    The bias correction is folded into the step size, so `epsilon` is added
    to sqrt(v) before correction: the paper's "epsilon hat" (Keras, and
    TensorFlow's tf.keras, do this; PyTorch adds epsilon to the corrected
    sqrt(v / (1 - beta_2 ** t)), and its default epsilon is 1e-8, Keras's 1e-7).
    With `amsgrad`, a third slot 'velocity_hat' keeps the running maximum of
    v, which replaces v in the last line.

    Args:
      learning_rate: a float or a callable `step -> float` (default 0.001).
      beta_1, beta_2: decay rates of the moment estimates, in [0, 1).
      epsilon: added to sqrt(v).
      amsgrad: use the AMSGrad variant.
      weight_decay, check_finite, name: see `Optimizer`.

    Raises:
      ValueError: a beta outside [0, 1), or a negative epsilon.

    Example::

        >>> opt = gradtape.optimizers.Adam(learning_rate=1e-3)
        >>> params, grads = [np.array([1.0, 2.0])], [np.array([0.5, -0.5])]
        >>> state = opt.init(params)                          # functional form
        >>> params, state = opt.update(grads, state, params)
        >>> params[0].round(4)   # each moved by about the learning rate against its gradient
        array([0.999, 2.001])
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, *,
                 weight_decay=None, check_finite=False, name="Adam"):
        super().__init__(learning_rate, weight_decay=weight_decay, check_finite=check_finite, name=name)
        for label, beta in (("beta_1", beta_1), ("beta_2", beta_2)):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"{self.name}: {label} must be in [0, 1), got {beta!r}")
        if not epsilon >= 0.0:
            raise ValueError(f"{self.name}: epsilon must be >= 0, got {epsilon!r}")
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)
        self.amsgrad = bool(amsgrad)

    def _slot_names(self):
        return ("momentum", "velocity", "velocity_hat") if self.amsgrad else ("momentum", "velocity")

    def _update_leaf(self, g, p, slots, lr, step):
        b1, b2 = self.beta_1, self.beta_2
        alpha = lr * sqrt(1.0 - b2 ** step) / (1.0 - b1 ** step)
        m = slots["momentum"] + (g - slots["momentum"]) * (1.0 - b1)
        v = slots["velocity"] + (g * g - slots["velocity"]) * (1.0 - b2)
        new_slots = {"momentum": m, "velocity": v}
        if self.amsgrad:
            v = maximum(slots["velocity_hat"], v)
            new_slots["velocity_hat"] = v
        return p - (m * alpha) / (sqrt(v) + self.epsilon), new_slots

    def _update_arrays(self, g, p, slots, lr, step):
        """_update_leaf's arithmetic in its order, in place (see Optimizer._update_arrays)."""
        b1, b2 = self.beta_1, self.beta_2
        alpha = lr * math.sqrt(1.0 - b2 ** step) / (1.0 - b1 ** step)
        m, v = slots["momentum"], slots["velocity"]
        t = g - m  # a fresh temporary
        t *= 1.0 - b1
        m += t
        np.multiply(g, g, out=t)
        t -= v
        t *= 1.0 - b2
        v += t
        if self.amsgrad:
            v = np.maximum(slots["velocity_hat"], v, out=slots["velocity_hat"])
        denominator = np.sqrt(v, out=t)
        denominator += self.epsilon
        new_p = m * alpha
        new_p /= denominator
        return np.subtract(p, new_p, out=new_p)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter), as Keras's AdamW.

    Before each Adam update, `p = p - p * weight_decay * lr` (Keras's order
    of operations; PyTorch's `p *= 1 - lr * weight_decay` is the same up to
    rounding). Keras's default weight_decay is 0.004 (PyTorch's 0.01).

    Args:
      weight_decay: the decay rate (a float; required, default 0.004).
      Others: as `Adam`.

    Example::

        >>> opt = gradtape.optimizers.AdamW(learning_rate=1e-3, weight_decay=0.01)
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, *, check_finite=False, name="AdamW"):
        if weight_decay is None:
            raise ValueError(f"{name}: weight_decay must be a float (AdamW without it is Adam), got None")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay=weight_decay,
                         check_finite=check_finite, name=name)

