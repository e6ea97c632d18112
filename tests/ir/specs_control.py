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


def _rnn(h, xs, w):
    """A small recurrent cell over the rows of xs: carry h, outputs the states."""
    return gt.scan(lambda c, x: (gt.tanh(c * w + x), c * x), h, xs)


def _rnn_numpy(h, xs, w):
    ys = []
    for x in xs:
        ys.append(h * x)
        h = np.tanh(h * w + x)
    return np.sum(h) + np.sum(np.stack(ys))


def _power_loop(x):
    """fori_loop with the step number read by the body."""
    return gt.fori_loop(1, 4, lambda i, v: v * x + gt.sin(v) / i.astype(x.dtype), x)


def _power_loop_numpy(x):
    v = x
    for i in range(1, 4):
        v = v * x + np.sin(v) / i
    return v


SPECS += [
    OpSpec("scan_rnn", lambda h, xs, w: gt.sum(_rnn(h, xs, w)[0]) + gt.sum(_rnn(h, xs, w)[1]),
           args(normal(2), normal(3, 2), normal(2)), ops=("scan",), numpy_fn=_rnn_numpy),
    OpSpec("scan_reverse", lambda xs: gt.scan(lambda c, x: (c * x + 1.0, c), 0.5, xs, reverse=True)[1] * 1.0,
           args(normal(4)), ops=("scan",),
           numpy_fn=lambda xs: np.array([_reverse_numpy(xs)[i] for i in range(4)])),
    OpSpec("fori_loop", _power_loop, args(normal(3)), ops=("scan",), numpy_fn=_power_loop_numpy),
]


def _reverse_numpy(xs):
    c, ys = 0.5, [None] * len(xs)
    for i in reversed(range(len(xs))):
        ys[i] = c
        c = c * xs[i] + 1.0
    return np.array(ys)


def _while_growth(x, a):
    """x grows by a factor (1 + a**2) until its sum passes 4: a trip count that depends on the data."""
    def body(c):
        v, n = c
        return v * (1.0 + a * a) + gt.sin(v) * 0.1, n + 1.0
    v, n = gt.while_loop(lambda c: gt.sum(c[0]) < 4.0, body, (x, gt.sum(x) * 0.0))
    return v * n


def _while_growth_numpy(x, a):
    v, n = x, 0.0
    while np.sum(v) < 4.0:
        v, n = v * (1.0 + a * a) + np.sin(v) * 0.1, n + 1.0
    return v * n


SPECS += [
    OpSpec("while_loop", _while_growth, args(positive(3, lo=0.3, hi=0.6), positive(3, lo=0.4, hi=0.6)),
           ops=("while", "while_vjp"), order=2, numpy_fn=_while_growth_numpy),
]


_remat_tanh = gt.checkpoint(lambda x, y: gt.tanh(x * y) * gt.exp(y))

SPECS += [
    OpSpec("checkpoint", lambda x, y: _remat_tanh(x, y) * x, args(normal(3), normal(3)), ops=("checkpoint",),
           numpy_fn=lambda x, y: np.tanh(x * y) * np.exp(y) * x),
]
