"""Op specs of the reductions (reduce_sum/max/min/prod through the front end's
sum/max/min/prod/mean/var/std) and the nn composites.

Max/min are checked at inputs without ties (well-separated values, so a
finite-difference step never changes which element wins); ties have their
own exact tests in test_ops_reduce.py. relu and clip are checked away from
their kinks.
"""
from __future__ import annotations

import numpy as np

import gradtape as gt

from .op_specs import OpSpec, args, normal, positive


def distinct(*shape):
    """Values at least 0.3 apart in a random order: no ties, none near 0."""
    def make(rng):
        n = int(np.prod(shape, dtype=np.int64))
        grid = (rng.permutation(n) - (n - 0.5) / 2) * 0.4
        return (grid + rng.uniform(-0.05, 0.05, n)).reshape(shape)

    return make


def with_zeros(*shape, count=1):
    """Normal values with `count` entries set to exactly 0."""
    def make(rng):
        x = rng.standard_normal(shape)
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, count, replace=False)] = 0.0
        return x

    return make


def away_from(*shape, kinks=(0.0,), gap=0.2):
    """Normal values, each at least `gap` from every kink."""
    def make(rng):
        x = rng.standard_normal(shape) * 1.5
        for k in kinks:
            near = np.abs(x - k) < gap
            x = np.where(near, k + np.where(x >= k, gap, -gap) * 2, x)
        return x

    return make


# --- NumPy references of the composites -------------------------------------------

def np_logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def np_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def np_log_softmax(x, axis=-1):
    return x - np_logsumexp(x, axis=axis, keepdims=True)


def np_sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def np_softplus(x):
    return np.logaddexp(x, 0.0)


def _reduction_specs(name, fn, np_fn, op, maker):
    """One spec per axis combination (all axes, one, negative, tuple, keepdims)."""
    cases = [
        ("all", {}, (2, 3)),
        ("axis0", {"axis": 0}, (3, 2)),
        ("axis-1", {"axis": -1}, (2, 3)),
        ("axes02", {"axis": (0, 2)}, (2, 2, 3)),
        ("axes-1_0_keepdims", {"axis": (-1, 0), "keepdims": True}, (2, 3, 2)),
        ("vector", {}, (4,)),
    ]
    return [
        OpSpec(
            name=f"{name}_{label}",
            fn=lambda x, kw=kw: fn(x, **kw),
            args=args(maker(*shape)),
            ops=(op,),
            numpy_fn=lambda x, kw=kw: np_fn(x, **kw),
        )
        for label, kw, shape in cases
    ]


SPECS = (
    _reduction_specs("sum", gt.sum, np.sum, "reduce_sum", normal)
    + _reduction_specs("max", gt.max, np.max, "reduce_max", distinct)
    + _reduction_specs("min", gt.min, np.min, "reduce_min", distinct)
    + _reduction_specs("prod", gt.prod, np.prod, "reduce_prod", normal)
    + _reduction_specs("mean", gt.mean, np.mean, "reduce_sum", normal)
    + [
        OpSpec("prod_one_zero", lambda x: gt.prod(x), args(with_zeros(5)), ("reduce_prod",),
               numpy_fn=np.prod),
        OpSpec("prod_two_zeros_axis1", lambda x: gt.prod(x, axis=1), args(with_zeros(2, 4, count=3)),
               ("reduce_prod",), numpy_fn=lambda x: np.prod(x, axis=1)),
        OpSpec("prod_of_squares", lambda x: gt.prod(x * x, axis=0), args(normal(3, 2)),
               ("reduce_prod",), numpy_fn=lambda x: np.prod(x * x, axis=0)),
        OpSpec("max_in_expression", lambda x, y: gt.max(x * y, axis=1) * gt.sum(y),
               args(distinct(2, 3), positive(2, 3)), ("reduce_max",),
               numpy_fn=lambda x, y: np.max(x * y, axis=1) * np.sum(y)),
        OpSpec("argmax_weights", lambda x: x * gt.cast(gt.argmax(x, axis=1, keepdims=True), "float64"),
               args(distinct(2, 3)), ("argmax",),
               numpy_fn=lambda x: x * np.argmax(x, axis=1, keepdims=True).astype(np.float64)),
        OpSpec("argmin_flat", lambda x: gt.sum(x) * gt.cast(gt.argmin(x), "float64"),
               args(distinct(2, 3)), ("argmin",),
               numpy_fn=lambda x: np.sum(x) * np.float64(np.argmin(x))),
        OpSpec("var", lambda x: gt.var(x), args(normal(2, 3)), ("reduce_sum",), numpy_fn=np.var),
        OpSpec("var_axis1_ddof1", lambda x: gt.var(x, axis=1, ddof=1), args(normal(2, 4)),
               ("reduce_sum",), numpy_fn=lambda x: np.var(x, axis=1, ddof=1)),
        OpSpec("var_axes_keepdims", lambda x: gt.var(x, axis=(0, 2), keepdims=True),
               args(normal(2, 2, 3)), ("reduce_sum",),
               numpy_fn=lambda x: np.var(x, axis=(0, 2), keepdims=True)),
        OpSpec("std", lambda x: gt.std(x), args(normal(2, 3)), ("reduce_sum", "sqrt"), numpy_fn=np.std),
        OpSpec("std_axis0_ddof1", lambda x: gt.std(x, axis=0, ddof=1), args(normal(3, 2)),
               ("reduce_sum", "sqrt"), numpy_fn=lambda x: np.std(x, axis=0, ddof=1)),
        OpSpec("softmax", lambda x: gt.softmax(x), args(normal(2, 3)),
               ("reduce_max", "stop_gradient", "exp", "reduce_sum"), numpy_fn=np_softmax),
        OpSpec("softmax_axis0", lambda x: gt.softmax(x, axis=0), args(normal(3, 2)),
               ("reduce_max", "stop_gradient", "exp", "reduce_sum"),
               numpy_fn=lambda x: np_softmax(x, axis=0)),
        OpSpec("log_softmax", lambda x: gt.log_softmax(x), args(normal(2, 3)),
               ("reduce_max", "stop_gradient", "exp", "log", "reduce_sum"), numpy_fn=np_log_softmax),
        OpSpec("log_softmax_axes", lambda x: gt.log_softmax(x, axis=(0, 2)), args(normal(2, 2, 2)),
               ("reduce_max", "stop_gradient", "exp", "log", "reduce_sum"),
               numpy_fn=lambda x: np_log_softmax(x, axis=(0, 2))),
        OpSpec("logsumexp", lambda x: gt.logsumexp(x), args(normal(2, 3)),
               ("reduce_max", "stop_gradient", "exp", "log", "reduce_sum"), numpy_fn=np_logsumexp),
        OpSpec("logsumexp_axis1", lambda x: gt.logsumexp(x, axis=1), args(normal(2, 3)),
               ("reduce_max", "stop_gradient", "exp", "log", "reduce_sum"),
               numpy_fn=lambda x: np_logsumexp(x, axis=1)),
        OpSpec("logsumexp_keepdims", lambda x: gt.logsumexp(x, axis=-1, keepdims=True),
               args(normal(3, 2)), ("reduce_max", "stop_gradient", "exp", "log", "reduce_sum"),
               numpy_fn=lambda x: np_logsumexp(x, axis=-1, keepdims=True)),
        OpSpec("logsumexp_large", lambda x: gt.logsumexp(x * 400.0, axis=0),
               args(normal(3, 2)), ("reduce_max", "stop_gradient", "exp", "log", "reduce_sum"),
               numpy_fn=lambda x: np_logsumexp(x * 400.0, axis=0)),
        OpSpec("sigmoid", lambda x: gt.sigmoid(x), args(normal(2, 3)), ("sigmoid",),
               numpy_fn=np_sigmoid),
        OpSpec("sigmoid_at_zero", lambda x: gt.sigmoid(x), args(lambda rng: np.zeros(2)),
               ("sigmoid",), numpy_fn=np_sigmoid),
        OpSpec("relu", lambda x: gt.relu(x), args(away_from(2, 3)), ("where", "gt"),
               numpy_fn=lambda x: np.maximum(x, 0.0)),
        OpSpec("relu_squared", lambda x: gt.relu(x) * x, args(away_from(5)), ("where", "gt"),
               numpy_fn=lambda x: np.maximum(x, 0.0) * x),
        OpSpec("softplus", lambda x: gt.softplus(x), args(normal(2, 3)), ("softplus",),
               numpy_fn=np_softplus),
        OpSpec("softplus_at_zero", lambda x: gt.softplus(x), args(lambda rng: np.zeros(2)),
               ("softplus",), numpy_fn=np_softplus),
        OpSpec("clip", lambda x: gt.clip(x, -0.5, 1.0), args(away_from(2, 3, kinks=(-0.5, 1.0), gap=0.1)),
               ("where", "lt", "gt"), numpy_fn=lambda x: np.clip(x, -0.5, 1.0)),
        OpSpec("clip_tensor_bounds", lambda x, lo, hi: gt.clip(x, lo, hi) * x,
               args(away_from(6, kinks=(-0.5, 1.0), gap=0.1), lambda rng: np.full(6, -0.5),
                    lambda rng: np.full(6, 1.0)),
               ("where", "lt", "gt"), numpy_fn=lambda x, lo, hi: np.clip(x, lo, hi) * x),
        OpSpec("clip_one_sided", lambda x: np.clip(x, None, 0.5), args(away_from(4, kinks=(0.5,), gap=0.1)),
               ("where", "gt"), numpy_fn=lambda x: np.clip(x, None, 0.5)),
    ]
)
