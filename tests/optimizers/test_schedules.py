"""Learning-rate schedules against their formulas, at Python steps and traced."""
import math

import numpy as np
import pytest

import gradtape as gt
from gradtape import optimizers as O
from gradtape.optimizers import schedules as S

STEPS = [0, 1, 5, 10, 11, 50, 99, 100, 101, 250]


def cosine(step, initial, decay_steps, alpha):
    s = min(step, decay_steps)
    return initial * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / decay_steps)) + alpha)


FORMULAS = [
    ("exponential", S.ExponentialDecay(0.1, 20, 0.5), lambda s: 0.1 * 0.5 ** (s / 20)),
    ("exponential_staircase", S.ExponentialDecay(0.1, 20, 0.5, staircase=True), lambda s: 0.1 * 0.5 ** (s // 20)),
    ("inverse_time", S.InverseTimeDecay(0.2, 10, 0.5), lambda s: 0.2 / (1 + 0.5 * s / 10)),
    ("inverse_time_staircase", S.InverseTimeDecay(0.2, 10, 0.5, staircase=True), lambda s: 0.2 / (1 + 0.5 * (s // 10))),
    ("piecewise", S.PiecewiseConstantDecay([10, 100], [1.0, 0.5, 0.1]),
     lambda s: 1.0 if s <= 10 else 0.5 if s <= 100 else 0.1),
    ("polynomial", S.PolynomialDecay(0.1, 100, 0.01, power=2.0),
     lambda s: (0.1 - 0.01) * (1 - min(s, 100) / 100) ** 2 + 0.01),
    ("polynomial_cycle", S.PolynomialDecay(0.1, 40, 0.0, cycle=True),
     lambda s: 0.1 * (1 - s / (40 * max(1, math.ceil(s / 40))))),
    ("cosine", S.CosineDecay(0.1, 100, alpha=0.1), lambda s: cosine(s, 0.1, 100, 0.1)),
    ("cosine_warmup", S.CosineDecay(0.01, 100, warmup_target=0.1, warmup_steps=10),
     lambda s: 0.01 + (0.1 - 0.01) * s / 10 if s < 10 else cosine(s - 10, 0.1, 100, 0.0)),
]


@pytest.mark.parametrize("name,schedule,formula", FORMULAS, ids=[f[0] for f in FORMULAS])
def test_schedule_matches_formula_in_python_and_traced(name, schedule, formula):
    traced = gt.differentiable(lambda step: schedule(step))
    for s in STEPS:
        expected = formula(s)
        got = schedule(s)
        assert isinstance(got, float)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert float(traced(np.array(s, np.int64))) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert traced.cache_info().traces == 1


def test_schedule_is_called_with_iterations_before_the_update():
    """As in Keras: update k (1-based) uses the rate at step k - 1."""
    calls = []

    def lr(step):
        calls.append(step)
        return 0.1 / (step + 1)

    opt = O.SGD(lr)
    w = gt.Variable(np.zeros(2))
    for _ in range(3):
        opt.apply_gradients([(np.ones(2), w)])
    assert calls == [0, 1, 2]
    np.testing.assert_allclose(w.numpy(), -(0.1 + 0.05 + 0.1 / 3) * np.ones(2))
    assert opt.learning_rate_at(3) == pytest.approx(0.025)


def test_learning_rate_must_be_a_number_or_callable():
    with pytest.raises(TypeError, match="learning_rate must be a float or a callable"):
        O.Adam("0.1")


@pytest.mark.parametrize("make,message", [
    (lambda: S.ExponentialDecay(0.1, 0, 0.5), "decay_steps must be > 0"),
    (lambda: S.PiecewiseConstantDecay([1, 2], [0.1]), "one more value than boundaries"),
    (lambda: S.PiecewiseConstantDecay([2, 1], [0.1, 0.2, 0.3]), "boundaries must increase"),
    (lambda: S.CosineDecay(0.1, 10, warmup_target=0.2), "warmup_steps"),
])
def test_schedule_arguments_are_checked(make, message):
    with pytest.raises(ValueError, match=message):
        make()
