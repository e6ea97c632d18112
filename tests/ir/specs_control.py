"""Op specs of the control-flow op `cond` (gt.cond and gt.switch).

Traced (make_ir, as the table's checks do), the predicate or index is
abstract and makes a `cond` equation; eagerly it is Python control flow.
The inputs' domains decide the branch taken, so both outcomes are covered.
"""
import numpy as np

import gradtape as gt

from .op_specs import OpSpec, args, normal, positive


def _cond_on_min(x, y):
    return gt.cond(gt.min(x) > 0, lambda a, b: gt.sin(a) * b, lambda a, b: gt.exp(a) - b, x, y)


def _cond_numpy(x, y):
    return np.sin(x) * y if np.min(x) > 0 else np.exp(x) - y


_BRANCHES = [lambda a, b: a * b, lambda a, b: gt.tanh(a) + b * b, lambda a, b: gt.log(a) * b]


def _switch_on_argmax(x, y):
    return gt.switch(gt.argmax(x), _BRANCHES, x, y)


def _switch_numpy(x, y):
    return [x * y, np.tanh(x) + y * y, np.log(x) * y][min(int(np.argmax(x)), 2)]


def _first_largest(n):
    """Positive inputs whose largest element is at index `n`."""
    def make(rng):
        x = rng.uniform(0.5, 1.5, 4)
        x[n] = 2.0
        return x
    return make


SPECS = [
    OpSpec("cond_true", _cond_on_min, args(positive(3), normal(3)), ops=("cond",), numpy_fn=_cond_numpy),
    OpSpec("cond_false", _cond_on_min, args(lambda rng: -positive(3)(rng), normal(3)), ops=("cond",),
           numpy_fn=_cond_numpy),
    OpSpec("switch_middle", _switch_on_argmax, args(_first_largest(1), normal(4)), ops=("cond",),
           numpy_fn=_switch_numpy),
    OpSpec("switch_clamped", _switch_on_argmax, args(_first_largest(3), normal(4)), ops=("cond",),
           numpy_fn=_switch_numpy),
]
