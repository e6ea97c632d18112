"""RMSprop, as Keras defines it."""
from __future__ import annotations

import numpy as np

from ._generic import sqrt
from .base import Optimizer


class RMSprop(Optimizer):
    """RMSprop (Hinton), with Keras's formulas and defaults.

    Slot 'velocity' (v, a running mean of g**2), plus 'average_gradient'
    (a, a running mean of g) when centered and 'momentum' (m) when
    momentum > 0, all zeros at first:

        v = rho * v + (1 - rho) * g * g
        a = rho * a + (1 - rho) * g                      (centered)
        increment = lr * g / sqrt(v - a * a + epsilon)   (centered; else sqrt(v + epsilon))
        m = momentum * m + increment;  p = p - m         (momentum > 0)
        p = p - increment                                (otherwise)

    Keras adds epsilon inside the square root; PyTorch adds it outside
    (`sqrt(v) + eps`, default 1e-8, with alpha=0.99 for rho).

    Args:
      learning_rate: a float or a callable `step -> float` (default 0.001).
      rho: discount of the running means, in [0, 1).
      momentum: in [0, 1].
      epsilon: added under the square root.
      centered: normalize by the estimated variance instead of the second moment.
      weight_decay, check_finite, name: see `Optimizer`.

    Raises:
      ValueError: rho outside [0, 1), momentum outside [0, 1], negative epsilon.

    Example::

        >>> opt = gradtape.optimizers.RMSprop(learning_rate=1e-3, momentum=0.9, centered=True)
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, *,
                 weight_decay=None, check_finite=False, name="RMSprop"):
        super().__init__(learning_rate, weight_decay=weight_decay, check_finite=check_finite, name=name)
        if not 0.0 <= rho < 1.0:
            raise ValueError(f"{self.name}: rho must be in [0, 1), got {rho!r}")
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{self.name}: momentum must be in [0, 1], got {momentum!r}")
        if not epsilon >= 0.0:
            raise ValueError(f"{self.name}: epsilon must be >= 0, got {epsilon!r}")
        self.rho, self.momentum, self.epsilon = float(rho), float(momentum), float(epsilon)
        self.centered = bool(centered)

    def _slot_names(self):
        names = ("velocity",)
        if self.momentum > 0.0:
            names += ("momentum",)
        if self.centered:
            names += ("average_gradient",)
        return names

    def _update_leaf(self, g, p, slots, lr, step):
        rho = self.rho
        v = rho * slots["velocity"] + (1.0 - rho) * (g * g)
        new_slots = {"velocity": v}
        if self.centered:
            a = rho * slots["average_gradient"] + (1.0 - rho) * g
            new_slots["average_gradient"] = a
            denominator = v - a * a + self.epsilon
        else:
            denominator = v + self.epsilon
        increment = lr * g / sqrt(denominator)
        if self.momentum > 0.0:
            m = self.momentum * slots["momentum"] + increment
            new_slots["momentum"] = m
            return p - m, new_slots
        return p - increment, new_slots

    def _update_arrays(self, g, p, slots, lr, step):
        """_update_leaf's arithmetic in its order, in place (see Optimizer._update_arrays)."""
        rho = self.rho
        v = slots["velocity"]
        t = g * g  # a fresh temporary
        t *= 1.0 - rho
        v *= rho
        v += t
        if self.centered:
            a = slots["average_gradient"]
            np.multiply(g, 1.0 - rho, out=t)
            a *= rho
            a += t
            np.multiply(a, a, out=t)
            np.subtract(v, t, out=t)
            t += self.epsilon
        else:
            np.add(v, self.epsilon, out=t)
        root = np.sqrt(t, out=t)
        increment = g * lr  # fresh: the result
        increment /= root
        if self.momentum > 0.0:
            m = slots["momentum"]
            m *= self.momentum
            m += increment
            return np.subtract(p, m, out=increment)
        return np.subtract(p, increment, out=increment)
