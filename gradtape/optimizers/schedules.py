"""Learning-rate schedules: plain callables from the step number to a learning rate.

Keras's schedules, with Keras's names and formulas. An optimizer calls its
schedule with `iterations`, the number of updates made before this one
(0 for the first update), as Keras does.

A schedule is called with a Python int (in `apply_gradients` and
`train_step`, where it costs a few floating-point operations in Python) or,
inside staged code (the functional `update` under `@differentiable`), with
an abstract int64 Tensor: the schedules here compute with gradtape
functions then, so they trace. Any callable `step -> float` can be a
learning rate; one that makes Python decisions on `step` works everywhere
except inside staged code (`train_step` evaluates it in Python and passes
the value in, so it works there too).

Example::

    >>> lr = gradtape.optimizers.schedules.ExponentialDecay(0.1, decay_steps=100, decay_rate=0.5)
    >>> lr(0), lr(100), lr(200)
    (0.1, 0.05, 0.025)
    >>> opt = gradtape.optimizers.SGD(learning_rate=lr)
"""
from __future__ import annotations

import math

import numpy as np

from .. import functions as gtf
from ._generic import is_abstract


class LearningRateSchedule:
    """Base class of the schedules: `schedule(step) -> learning rate`.

    Subclasses implement `_at(step, ops)`, where `ops` is `_FloatOps` for a
    concrete step (a Python float) or `_TensorOps` for a traced one.
    """

    def __call__(self, step):
        if is_abstract(step):
            return self._at(gtf.cast(step, np.float64), _TensorOps)
        return float(self._at(float(step), _FloatOps))

    def _at(self, step, ops):
        raise NotImplementedError(f"learning rate schedule {type(self).__name__} must implement _at(step, ops)")

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class _FloatOps:
    floor = staticmethod(math.floor)
    ceil = staticmethod(math.ceil)
    cos = staticmethod(math.cos)
    minimum = staticmethod(min)
    maximum = staticmethod(max)

    @staticmethod
    def where(cond, x, y):
        return x if cond else y


class _TensorOps:
    floor = staticmethod(gtf.floor)
    ceil = staticmethod(gtf.ceil)
    cos = staticmethod(gtf.cos)
    minimum = staticmethod(gtf.minimum)
    maximum = staticmethod(gtf.maximum)
    where = staticmethod(gtf.where)


def _positive_steps(name: str, value) -> float:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


class _RateDecay(LearningRateSchedule):
    """A rate decayed by `decay_rate` as `step / decay_steps` grows (floored with staircase)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive_steps(f"{type(self).__name__}: decay_steps", decay_steps)
        self.decay_rate = decay_rate
        self.staircase = bool(staircase)

    def _progress(self, step, ops):
        p = step / self.decay_steps
        return ops.floor(p) if self.staircase else p


class ExponentialDecay(_RateDecay):
    """`initial_learning_rate * decay_rate ** (step / decay_steps)` (Keras's ExponentialDecay).

    Args:
      initial_learning_rate: the rate at step 0.
      decay_steps: steps over which the rate is multiplied by `decay_rate` (> 0).
      decay_rate: the factor per `decay_steps`.
      staircase: floor `step / decay_steps`, so the rate drops in steps.

    Raises:
      ValueError: decay_steps <= 0.

    Example::

        >>> from gradtape.optimizers.schedules import ExponentialDecay

        >>> ExponentialDecay(0.1, 10, 0.5, staircase=True)(15)
        0.05
    """

    def _at(self, step, ops):
        return self.initial_learning_rate * self.decay_rate ** self._progress(step, ops)


class InverseTimeDecay(_RateDecay):
    """`initial_learning_rate / (1 + decay_rate * step / decay_steps)` (Keras's InverseTimeDecay).

    Args:
      initial_learning_rate, decay_steps (> 0), decay_rate: as in the formula.
      staircase: floor `step / decay_steps`.

    Example::

        >>> from gradtape.optimizers.schedules import InverseTimeDecay

        >>> InverseTimeDecay(1.0, decay_steps=1, decay_rate=0.5)(2)
        0.5
    """

    def _at(self, step, ops):
        return self.initial_learning_rate / (1.0 + self.decay_rate * self._progress(step, ops))


class PiecewiseConstantDecay(LearningRateSchedule):
    """A constant rate per interval (Keras's PiecewiseConstantDecay).

    The rate is `values[0]` while `step <= boundaries[0]`, `values[1]` while
    `boundaries[0] < step <= boundaries[1]`, ..., and `values[-1]` after
    `boundaries[-1]`.

    Args:
      boundaries: increasing step numbers.
      values: one more rate than boundaries.

    Raises:
      ValueError: the lengths do not match, or boundaries do not increase.

    Example::

        >>> from gradtape.optimizers.schedules import PiecewiseConstantDecay

        >>> lr = PiecewiseConstantDecay([100, 200], [1.0, 0.5, 0.1])
        >>> lr(100), lr(101), lr(500)
        (1.0, 0.5, 0.1)
    """

    def __init__(self, boundaries, values):
        boundaries, values = list(boundaries), list(values)
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                "PiecewiseConstantDecay: there must be one more value than boundaries; got "
                f"boundaries={boundaries} ({len(boundaries)}) and values={values} ({len(values)})"
            )
        if any(b >= c for b, c in zip(boundaries, boundaries[1:])):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must increase, got {boundaries}")
        self.boundaries = boundaries
        self.values = values

    def _at(self, step, ops):
        rate = self.values[-1]
        for boundary, value in zip(reversed(self.boundaries), reversed(self.values[:-1])):
            rate = ops.where(step <= boundary, value, rate)
        return rate


class PolynomialDecay(LearningRateSchedule):
    """From `initial_learning_rate` to `end_learning_rate` over `decay_steps` (Keras's PolynomialDecay).

    `(initial - end) * (1 - min(step, decay_steps) / decay_steps) ** power + end`;
    with `cycle`, decay_steps is stretched to the first multiple of it
    beyond `step` instead.

    Example::

        >>> from gradtape.optimizers.schedules import PolynomialDecay

        >>> PolynomialDecay(1.0, 10, end_learning_rate=0.0)(5)
        0.5
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive_steps("PolynomialDecay: decay_steps", decay_steps)
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = bool(cycle)

    def _at(self, step, ops):
        decay_steps = self.decay_steps
        if self.cycle:
            multiplier = ops.where(step == 0, 1.0, ops.ceil(step / decay_steps))
            decay_steps = decay_steps * multiplier
        else:
            step = ops.minimum(step, decay_steps)
        fraction = 1.0 - step / decay_steps
        return (self.initial_learning_rate - self.end_learning_rate) * fraction ** self.power + self.end_learning_rate


class CosineDecay(LearningRateSchedule):
    """Cosine decay, with an optional linear warmup first (Keras's CosineDecay).

    Without warmup: `initial * ((1 - alpha) * 0.5 * (1 + cos(pi * s / decay_steps)) + alpha)`
    with `s = min(step, decay_steps)`. With `warmup_target`, the rate first
    goes linearly from `initial_learning_rate` to `warmup_target` over
    `warmup_steps`, then decays from `warmup_target` the same way.

    Args:
      initial_learning_rate: the rate at step 0.
      decay_steps: length of the decay (> 0).
      alpha: the final rate as a fraction of the decay's starting rate.
      warmup_target: the rate reached at the end of the warmup (None: no warmup).
      warmup_steps: length of the warmup.

    Example::

        >>> from gradtape.optimizers.schedules import CosineDecay

        >>> lr = CosineDecay(0.0, decay_steps=100, warmup_target=0.1, warmup_steps=10)
        >>> lr(5), lr(10), lr(110)
        (0.05, 0.1, 0.0)
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, warmup_target=None, warmup_steps=0):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive_steps("CosineDecay: decay_steps", decay_steps)
        self.alpha = alpha
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps
        if warmup_target is not None:
            _positive_steps("CosineDecay: warmup_steps (with a warmup_target)", warmup_steps)

    def _decayed(self, step, start, ops):
        cosine = 0.5 * (1.0 + ops.cos(math.pi * (step / self.decay_steps)))
        return start * ((1.0 - self.alpha) * cosine + self.alpha)

    def _at(self, step, ops):
        if self.warmup_target is None:
            return self._decayed(ops.minimum(step, self.decay_steps), self.initial_learning_rate, ops)
        step = ops.minimum(step, self.decay_steps + self.warmup_steps)
        warm = (self.warmup_target - self.initial_learning_rate) * (step / self.warmup_steps) + self.initial_learning_rate
        decayed = self._decayed(ops.maximum(step - self.warmup_steps, 0.0), self.warmup_target, ops)
        return ops.where(step < self.warmup_steps, warm, decayed)
