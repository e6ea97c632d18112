"""apply_gradients' in-place NumPy rules (`_update_arrays`): the same numbers as
the generic rule to the last bit, and no array written that anyone else holds
(a Variable's old values, the gradients, slots that came from train_step)."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import optimizers as O
from gradtape.optimizers import schedules as S

from .test_rules import CASES, IDS

STEPS = 4


@pytest.mark.parametrize("shape", [(3, 2), ()], ids=["matrix", "scalar"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_apply_gradients_equals_the_functional_update_bit_for_bit(case, dtype, shape):
    """The functional update on NumPy arrays runs `_update_leaf`; apply_gradients runs `_update_arrays`
    (0-d parameters: `_update_leaf` too). Same operations in the same order: equal results."""
    _, make, _, _ = case
    rng = np.random.default_rng(7)
    p0 = rng.normal(size=shape).astype(dtype)
    grads = [(rng.normal(size=shape) * (1 + k)).astype(dtype) for k in range(STEPS)]
    keras, functional = make(S.ExponentialDecay(0.05, decay_steps=2, decay_rate=0.5)), make(
        S.ExponentialDecay(0.05, decay_steps=2, decay_rate=0.5))
    var = gt.Variable(p0)
    params, state = [p0], functional.init([p0])
    for g in grads:
        keras.apply_gradients([(gt.constant(g), var)])
        params, state = functional.update([g], state, params)
        np.testing.assert_array_equal(var.numpy(), params[0])
        for name in keras.slot_names:
            np.testing.assert_array_equal(keras.get_slot(var, name), state[name][0])
    assert var.dtype == dtype and var.shape == shape


@pytest.mark.parametrize("make", [lambda: O.SGD(0.1), lambda: O.SGD(0.1, momentum=0.9, nesterov=True),
                                  lambda: O.AdamW(0.1, weight_decay=0.1, amsgrad=True),
                                  lambda: O.RMSprop(0.1, momentum=0.5, centered=True)],
                         ids=["sgd", "nesterov", "adamw_amsgrad", "rmsprop_centered"])
def test_no_array_a_variable_held_nor_a_gradient_is_written(make):
    opt, w = make(), gt.Variable(np.linspace(-1.0, 1.0, 6).reshape(2, 3), name="w")
    held, grads = [], []
    for k in range(STEPS):
        held.append((w.numpy(), w.numpy().copy()))
        g = np.full((2, 3), 0.5 + k)  # a writeable NumPy gradient
        grads.append((g, g.copy()))
        opt.apply_gradients([(g, w)])
    assert not w.numpy().flags.writeable
    for array, copy in held + grads:
        np.testing.assert_array_equal(array, copy)
    assert all(not array.flags.writeable for array, _ in held)


def test_a_value_recorded_before_an_update_keeps_the_old_variable_value():
    """A tape defers `w * w` (computed when read); the update after it must not change what it reads."""
    w = gt.Variable(np.array([1.0, 2.0, 3.0]), name="w")
    opt = O.Adam(0.5)
    opt.apply_gradients([(np.ones(3), w)])  # slots exist: the next update writes them in place
    before = w.numpy().copy()
    with gt.GradientTape() as tape:
        loss = gt.sum(w * w)
    opt.apply_gradients([(tape.gradient(loss, w), w)])
    assert not np.array_equal(w.numpy(), before)
    assert float(loss) == pytest.approx(float(np.sum(before * before)), rel=1e-15)


def test_slot_arrays_put_there_from_outside_are_copied_before_an_in_place_update():
    """train_step replaces slots with its results (training.py); they may be held elsewhere."""
    opt, w = O.SGD(0.1, momentum=0.9), gt.Variable(np.zeros(3), name="w")
    opt.apply_gradients([(np.ones(3), w)])
    foreign = np.full(3, 0.5)
    opt._slot_entry(w)[1]["momentum"] = foreign  # as TrainStep._finish writes a step's new slots
    opt.apply_gradients([(np.ones(3), w)])
    np.testing.assert_array_equal(foreign, np.full(3, 0.5))
    np.testing.assert_allclose(opt.get_slot(w, "momentum"), 0.9 * 0.5 - 0.1 * 1.0, rtol=1e-15)
    np.testing.assert_allclose(w.numpy(), -0.1 + (0.9 * 0.5 - 0.1), rtol=1e-15)


def _quadratic(params, target):
    return gt.sum((params - target) ** 2)


def test_train_step_and_apply_gradients_alternating_on_adam_match_apply_gradients_alone():
    target = np.array([1.0, -2.0, 0.5])
    mixed, alone = gt.Variable(np.zeros(3)), gt.Variable(np.zeros(3))
    opt, ref = O.Adam(0.1), O.Adam(0.1)
    step = gt.train_step(_quadratic, opt)
    for k in range(6):
        if k % 2:
            step(mixed, target)
        else:
            with gt.GradientTape() as tape:
                loss = _quadratic(mixed, target)
            opt.apply_gradients([(tape.gradient(loss, mixed), mixed)])
        with gt.GradientTape() as tape:
            loss = _quadratic(alone, target)
        ref.apply_gradients([(tape.gradient(loss, alone), alone)])
    np.testing.assert_allclose(mixed.numpy(), alone.numpy(), rtol=1e-13)
    for name in ("momentum", "velocity"):
        np.testing.assert_allclose(opt.get_slot(mixed, name), ref.get_slot(alone, name), rtol=1e-13)


class _SignSum(O.Optimizer):
    """A rule defined by `_update_leaf` alone (slot 'total': the sum of the gradients so far)."""

    def _slot_names(self):
        return ("total",)

    def _update_leaf(self, g, p, slots, lr, step):
        total = slots["total"] + g
        return p - lr * np.sign(total), {"total": total}


@pytest.mark.parametrize("shape", [(2,), ()], ids=["vector", "scalar"])
def test_a_rule_defined_by_update_leaf_alone_works_in_apply_gradients(shape):
    opt, w = _SignSum(0.25), gt.Variable(np.zeros(shape), name="w")
    grads = [np.full(shape, x) for x in (1.0, -3.0, 1.0, 4.0)]
    p, total = np.zeros(shape), np.zeros(shape)
    for g in grads:
        opt.apply_gradients([(g, w)])
        total = total + g
        p = p - 0.25 * np.sign(total)
        np.testing.assert_array_equal(w.numpy(), p)
        np.testing.assert_array_equal(opt.get_slot(w, "total"), total)
    assert opt.iterations == len(grads)
