"""Each optimizer's update against an independent NumPy reference, step by step,
in all three forms: apply_gradients on Variables, the functional update run
eagerly on NumPy arrays, and the functional update traced (@differentiable)."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import optimizers as O
from gradtape.optimizers import schedules as S

from . import reference as R

STEPS = 6
SHAPE = (3, 2)

# (id, optimizer factory taking a learning rate, reference(p, grads, lrs), slot names checked)
CASES = [
    ("sgd", lambda lr: O.SGD(lr), lambda p, g, l: R.sgd(p, g, l), ()),
    ("sgd_momentum", lambda lr: O.SGD(lr, momentum=0.9), lambda p, g, l: R.sgd(p, g, l, 0.9), ("momentum",)),
    ("sgd_nesterov", lambda lr: O.SGD(lr, momentum=0.8, nesterov=True),
     lambda p, g, l: R.sgd(p, g, l, 0.8, nesterov=True), ("momentum",)),
    ("sgd_weight_decay", lambda lr: O.SGD(lr, momentum=0.5, weight_decay=0.1),
     lambda p, g, l: R.sgd(p, g, l, 0.5, weight_decay=0.1), ("momentum",)),
    ("adam", lambda lr: O.Adam(lr), lambda p, g, l: R.adam(p, g, l), ("momentum", "velocity")),
    ("adam_betas", lambda lr: O.Adam(lr, beta_1=0.5, beta_2=0.9, epsilon=1e-3),
     lambda p, g, l: R.adam(p, g, l, 0.5, 0.9, 1e-3), ("momentum", "velocity")),
    ("adam_amsgrad", lambda lr: O.Adam(lr, amsgrad=True), lambda p, g, l: R.adam(p, g, l, amsgrad=True),
     ("momentum", "velocity", "velocity_hat")),
    ("adamw", lambda lr: O.AdamW(lr, weight_decay=0.05), lambda p, g, l: R.adam(p, g, l, weight_decay=0.05),
     ("momentum", "velocity")),
    ("rmsprop", lambda lr: O.RMSprop(lr), lambda p, g, l: R.rmsprop(p, g, l), ("velocity",)),
    ("rmsprop_momentum", lambda lr: O.RMSprop(lr, rho=0.8, momentum=0.9),
     lambda p, g, l: R.rmsprop(p, g, l, 0.8, 0.9), ("velocity", "momentum")),
    ("rmsprop_centered", lambda lr: O.RMSprop(lr, momentum=0.5, centered=True, epsilon=1e-4),
     lambda p, g, l: R.rmsprop(p, g, l, momentum=0.5, epsilon=1e-4, centered=True),
     ("velocity", "momentum", "average_gradient")),
]
IDS = [c[0] for c in CASES]


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    p0 = rng.normal(size=SHAPE)
    grads = [rng.normal(size=SHAPE) * (1.0 + k) for k in range(STEPS)]  # varying scale exercises Adam/RMSprop
    return p0, grads


@pytest.mark.parametrize("learning_rate", ["constant", "schedule"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_apply_gradients_matches_reference(case, learning_rate):
    _, make, ref, slots = case
    lr = 0.05 if learning_rate == "constant" else S.ExponentialDecay(0.05, decay_steps=2, decay_rate=0.5)
    lrs = [lr(k) if callable(lr) else lr for k in range(STEPS)]
    p0, grads = _problem()
    expected = ref(p0, grads, lrs)
    opt = make(lr)
    var = gt.Variable(p0, name="w")
    for k, g in enumerate(grads):
        assert opt.apply_gradients([(gt.constant(g), var)]) == k + 1
        np.testing.assert_allclose(var.numpy(), expected[k]["p"], rtol=1e-12, atol=1e-14)
        for name in slots:
            np.testing.assert_allclose(opt.get_slot(var, name), expected[k][name], rtol=1e-12, atol=1e-14)
    assert opt.iterations == STEPS
    assert var.dtype == np.float64


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_functional_update_matches_reference_eager_and_traced(case):
    _, make, ref, slots = case
    p0, grads = _problem(1)
    expected = ref(p0, grads, [0.02] * STEPS)
    opt = make(0.02)
    traced_update = gt.differentiable(lambda g, state, params: opt.update(g, state, params))
    params = {"w": p0}
    state = opt.init(params)
    traced_params, traced_state = params, state
    for k, g in enumerate(grads):
        params, state = opt.update({"w": g}, state, params)
        traced_params, traced_state = traced_update({"w": g}, traced_state, traced_params)
        for got, got_state in ((params, state), (traced_params, traced_state)):
            np.testing.assert_allclose(got["w"], expected[k]["p"], rtol=1e-12, atol=1e-14)
            for name in slots:
                np.testing.assert_allclose(got_state[name]["w"], expected[k][name], rtol=1e-12, atol=1e-14)
            assert int(got_state["iterations"]) == k + 1
    assert isinstance(params["w"], np.ndarray) and isinstance(traced_params["w"], np.ndarray)
    assert traced_update.cache_info().traces == 1  # iterations is an argument: one trace for every step


def test_functional_update_with_schedule_traces_the_schedule():
    lr = S.PiecewiseConstantDecay([1, 3], [0.1, 0.05, 0.01])
    p0, grads = _problem(2)
    expected = R.sgd(p0, grads, [lr(k) for k in range(STEPS)], momentum=0.9)
    opt = O.SGD(lr, momentum=0.9)
    update = gt.differentiable(lambda g, s, p: opt.update(g, s, p))
    params, state = [p0], opt.init([p0])
    for k, g in enumerate(grads):
        params, state = update([g], state, params)
        np.testing.assert_allclose(params[0], expected[k]["p"], rtol=1e-12)
    assert update.cache_info().traces == 1


def test_nested_params_keep_their_structure():
    opt = O.Adam(0.1)
    params = {"layer": [np.ones((2, 2)), np.zeros(2)], "scale": np.array(2.0)}
    state = opt.init(params)
    assert int(state["iterations"]) == 0 and state["iterations"].dtype == np.int64
    assert state["momentum"]["layer"][0].shape == (2, 2) and state["velocity"]["scale"].shape == ()
    grads = {"layer": [np.ones((2, 2)), -np.ones(2)], "scale": np.array(0.5)}
    new, state = opt.update(grads, state, params)
    assert set(new) == {"layer", "scale"} and isinstance(new["layer"], list)
    assert isinstance(new["scale"], np.ndarray) and new["scale"].shape == ()
    # Adam's first step moves each coordinate by about lr against its gradient's sign
    np.testing.assert_allclose(new["layer"][1], 0.1 * np.ones(2), rtol=1e-5)
    np.testing.assert_allclose(new["scale"], 2.0 - 0.1, rtol=1e-5)


@pytest.mark.parametrize("make", [lambda: O.SGD(0.1, momentum=0.9), lambda: O.Adam(0.01), lambda: O.RMSprop(0.01)],
                         ids=["sgd", "adam", "rmsprop"])
def test_float32_parameters_stay_float32(make):
    p0, grads = _problem(3)
    p32 = p0.astype(np.float32)
    var = gt.Variable(p32)
    opt_var, opt_fun = make(), make()
    params, state = [p32], opt_fun.init([p32])
    traced = gt.differentiable(lambda g, s, p: opt_fun.update(g, s, p))
    t_params, t_state = params, state
    ref_var = gt.Variable(p0)
    ref_opt = make()
    for g in grads:
        g32 = g.astype(np.float32)
        opt_var.apply_gradients([(g32, var)])
        params, state = opt_fun.update([g32], state, params)
        t_params, t_state = traced([g32], t_state, t_params)
        ref_opt.apply_gradients([(g32.astype(np.float64), ref_var)])
    for got in (var.numpy(), params[0], t_params[0]):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, ref_var.numpy(), rtol=2e-5, atol=2e-6)
    assert all(s.dtype == np.float32 for name in opt_fun.slot_names for s in state[name])


def test_training_a_quadratic_converges_with_every_optimizer():
    """The gradient comes from a tape and depends on the parameters: every optimizer reaches the minimum."""
    target = np.array([1.0, -2.0, 3.0])
    for opt in (O.SGD(0.1), O.SGD(0.05, momentum=0.9, nesterov=True), O.Adam(0.1), O.AdamW(0.1, weight_decay=1e-4),
                O.RMSprop(0.05, centered=True)):
        w = gt.Variable(np.zeros(3), name="w")
        for _ in range(200):
            with gt.GradientTape() as tape:
                loss = gt.sum((w - target) ** 2)
            opt.apply_gradients(zip([tape.gradient(loss, w)], [w]))
        np.testing.assert_allclose(w.numpy(), target, atol=2e-2, err_msg=opt.name)


def test_slots_are_released_with_their_parameter():
    import gc

    opt = O.Adam(0.1)
    kept = gt.Variable(np.ones(2))
    for _ in range(5):
        temporary = gt.Variable(np.ones(2))
        opt.apply_gradients([(np.ones(2), temporary), (np.ones(2), kept)])
    del temporary
    gc.collect()
    assert len(opt._slots) == 1
    np.testing.assert_allclose(opt.get_slot(kept, "momentum"), 1 - 0.9 ** 5)
