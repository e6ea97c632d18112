"""Op specs of fmod, remainder and floor_divide: operands kept away from the
jumps (x / y at least 0.2 from an integer), with every sign combination."""
import numpy as np

import gradtape as gt

from .op_specs import OpSpec


def _operands(*shape):
    """y of both signs and |y| in [0.8, 1.6]; x = (n + u) y with u in [0.2, 0.8], n in -3..3."""
    def make(rng):
        y = rng.uniform(0.8, 1.6, shape) * rng.choice([-1.0, 1.0], shape)
        x = (rng.integers(-3, 4, shape) + rng.uniform(0.2, 0.8, shape)) * y
        return [x, y]

    return make


def _broadcast_divisor(rng):
    x, y = _operands(2, 3)(rng)
    return [x, np.float64(1.25)]  # a scalar divisor


SPECS = [
    OpSpec("remainder", lambda x, y: x % y, _operands(2, 3), ops=("remainder",), numpy_fn=np.remainder),
    OpSpec("remainder_reflected", lambda x, y: np.remainder(x * 2.0, y) * y, _operands(3),
           ops=("remainder", "mul"), numpy_fn=lambda x, y: np.remainder(x * 2.0, y) * y),
    OpSpec("fmod", gt.fmod, _operands(2, 3), ops=("fmod",), numpy_fn=np.fmod),
    OpSpec("fmod_scalar_divisor", lambda x, y: np.fmod(x, y) * x, _broadcast_divisor, ops=("fmod",),
           numpy_fn=lambda x, y: np.fmod(x, y) * x),
    OpSpec("floor_divide", lambda x, y: (x // y) * x + y, _operands(2, 3), ops=("floor_divide",),
           numpy_fn=lambda x, y: (x // y) * x + y),
    OpSpec("divmod", lambda x, y: gt.divmod(x, y)[0] * y + gt.mod(x, y) * x, _operands(4),
           ops=("floor_divide", "remainder"), numpy_fn=lambda x, y: (x // y) * y + np.mod(x, y) * x),
]
