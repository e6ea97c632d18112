"""SGD with optional (Nesterov) momentum, as Keras defines it."""
from __future__ import annotations

import numpy as np

from .base import Optimizer


class SGD(Optimizer):
    """Gradient descent with optional momentum (Keras's formulas).

    With `momentum == 0`: `p = p - lr * g`. Otherwise, with a velocity slot
    `m` (named 'momentum', zeros at first):

        m = momentum * m - lr * g
        p = p + m                                  (plain momentum)
        p = p + momentum * m - lr * g              (nesterov=True)

    This is Keras's form, with the learning rate inside the velocity;
    PyTorch keeps it outside (`b = momentum * b + g; p -= lr * b`), which
    is the same for a constant learning rate and differs under a schedule.

    Args:
      learning_rate: a float or a callable `step -> float` (default 0.01).
      momentum: in [0, 1].
      nesterov: use Nesterov momentum.
      weight_decay, check_finite, name: see `Optimizer`.

    Raises:
      ValueError: momentum outside [0, 1].

    Example::

        >>> opt = gradtape.optimizers.SGD(learning_rate=0.1, momentum=0.9)
        >>> v = gradtape.Variable(np.array([1.0, 2.0]))
        >>> opt.apply_gradients(zip([np.array([1.0, 1.0])], [v]))   # the iteration count
        1
        >>> v.numpy()
        array([0.9, 1.9])
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, *, weight_decay=None,
                 check_finite=False, name="SGD"):
        super().__init__(learning_rate, weight_decay=weight_decay, check_finite=check_finite, name=name)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{self.name}: momentum must be a float in [0, 1], got {momentum!r}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _slot_names(self):
        return ("momentum",) if self.momentum != 0.0 else ()

    def _update_leaf(self, g, p, slots, lr, step):
        if self.momentum == 0.0:
            return p - g * lr, {}
        m = slots["momentum"] * self.momentum - g * lr
        if self.nesterov:
            return p + (m * self.momentum - g * lr), {"momentum": m}
        return p + m, {"momentum": m}

    def _update_arrays(self, g, p, slots, lr, step):
        """_update_leaf's arithmetic in its order, in place (see Optimizer._update_arrays)."""
        scaled = g * lr  # a fresh array: the temporary, then the result
        if self.momentum == 0.0:
            return np.subtract(p, scaled, out=scaled)
        m = slots["momentum"]
        m *= self.momentum
        m -= scaled
        if self.nesterov:
            ahead = m * self.momentum
            ahead -= scaled
            return np.add(p, ahead, out=ahead)
        return p + m
