"""gradtape.train_step: one compiled call per step, the same parameters as the
uncompiled loop, updated in place, and its errors."""
import re

import numpy as np
import pytest

import gradtape as gt
from gradtape import optimizers as O
from gradtape import runtime
from gradtape.optimizers import schedules as S
from gradtape.staging import program


def mlp_loss(params, x, onehot):
    w1, b1, w2, b2 = params
    h = gt.tanh(x @ w1 + b1)
    return -gt.mean(gt.sum(onehot * gt.log_softmax(h @ w2 + b2, axis=-1), axis=-1))


def mlp_problem(seed=0, n=16):
    rng = np.random.default_rng(seed)
    params = [rng.normal(0, 0.5, (3, 5)), np.zeros(5), rng.normal(0, 0.5, (5, 2)), np.zeros(2)]
    x = rng.normal(size=(n, 3))
    onehot = np.eye(2)[(x[:, 0] * x[:, 1] > 0).astype(int)]
    return params, x, onehot


OPTIMIZERS = {
    "sgd_nesterov": lambda: O.SGD(0.1, momentum=0.9, nesterov=True),
    "adam_schedule": lambda: O.Adam(S.CosineDecay(0.05, decay_steps=10, warmup_target=0.1, warmup_steps=3)),
    "adamw": lambda: O.AdamW(0.05, weight_decay=0.01),
    "rmsprop_centered": lambda: O.RMSprop(0.01, momentum=0.5, centered=True),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_compiled_step_gives_the_parameters_of_the_uncompiled_loop(name):
    """train_step on Variables vs GradientTape + apply_gradients (eager, nothing compiled for the update)."""
    init, x, onehot = mlp_problem()
    compiled_vars = [gt.Variable(p, name=f"p{k}") for k, p in enumerate(init)]
    eager_vars = [gt.Variable(p, name=f"p{k}") for k, p in enumerate(init)]
    compiled_opt, eager_opt = OPTIMIZERS[name](), OPTIMIZERS[name]()
    step = gt.train_step(mlp_loss, compiled_opt)
    for _ in range(12):
        loss = step(compiled_vars, x, onehot)
        with gt.GradientTape() as tape:
            eager_loss = mlp_loss(eager_vars, x, onehot)
        eager_opt.apply_gradients(zip(tape.gradient(eager_loss, eager_vars), eager_vars))
        assert isinstance(loss, float)
        assert loss == pytest.approx(float(eager_loss), rel=1e-10)
    for a, b in zip(compiled_vars, eager_vars):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)
    for slot in compiled_opt.slot_names:
        for a, b in zip(compiled_vars, eager_vars):
            np.testing.assert_allclose(compiled_opt.get_slot(a, slot), eager_opt.get_slot(b, slot), rtol=1e-9, atol=1e-12)
    assert compiled_opt.iterations == eager_opt.iterations == 12
    assert step.cache_info().traces == 1  # the schedule's values are arguments: no retrace


def test_numpy_parameters_are_updated_in_place_like_the_functional_loop():
    init, x, onehot = mlp_problem(1)
    params = [p.copy() for p in init]
    buffers = [p.ctypes.data for p in params]
    opt = O.Adam(0.05)
    step = gt.train_step(mlp_loss, opt)
    ref_opt = O.Adam(0.05)
    ref_params, state = [p.copy() for p in init], ref_opt.init(init)
    value_and_grad = gt.value_and_grad(mlp_loss)
    for _ in range(8):
        step(params, x, onehot)
        _, grads = value_and_grad(ref_params, x, onehot)
        ref_params, state = ref_opt.update(grads, state, ref_params)
    assert [p.ctypes.data for p in params] == buffers  # the same arrays, written in place
    for a, b in zip(params, ref_params):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    for a, b in zip(params, state["velocity"]):
        np.testing.assert_allclose(opt.get_slot(a, "velocity"), b, rtol=1e-10, atol=1e-16)


def test_slots_and_iterations_are_shared_with_apply_gradients():
    """A loop may switch between the compiled step and apply_gradients on the same optimizer."""
    init, x, onehot = mlp_problem(2)
    mixed = [gt.Variable(p) for p in init]
    eager = [gt.Variable(p) for p in init]
    opt, ref = O.SGD(0.1, momentum=0.9), O.SGD(0.1, momentum=0.9)
    step = gt.train_step(mlp_loss, opt)
    for k in range(6):
        if k % 2:
            step(mixed, x, onehot)
        else:
            with gt.GradientTape() as tape:
                loss = mlp_loss(mixed, x, onehot)
            opt.apply_gradients(zip(tape.gradient(loss, mixed), mixed))
        with gt.GradientTape() as tape:
            loss = mlp_loss(eager, x, onehot)
        ref.apply_gradients(zip(tape.gradient(loss, eager), eager))
    assert opt.iterations == 6
    for a, b in zip(mixed, eager):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-13)


@pytest.fixture
def counting_compiler(monkeypatch):
    """Compile natively in the caller and count every call of every compiled function."""

    class Counted:
        def __init__(self, compiled):
            self.compiled, self.calls = compiled, 0

        def __call__(self, *args, **kwargs):
            self.calls += 1
            return self.compiled(*args, **kwargs)

        def entry(self, *args):  # the raw entries train_step's hot path calls (same protocol)
            result = self.compiled.entry(*args)
            self.calls += result is not NotImplemented
            return result

        def entry_into(self, *args):
            result = self.compiled.entry_into(*args)
            self.calls += result is not NotImplemented
            return result

        @property
        def out_types(self):
            return self.compiled.out_types

    made = []

    def compiler(fn):
        made.append(Counted(runtime.compile_function(fn)))
        return made[-1]

    monkeypatch.setattr(program, "compiler", compiler)
    return made


def test_each_step_is_one_native_call(counting_compiler):
    init, x, onehot = mlp_problem(3)
    params = [gt.Variable(p) for p in init]
    step = gt.train_step(mlp_loss, O.Adam(0.01))
    for _ in range(10):
        step(params, x, onehot)
    assert len(counting_compiler) == 1  # loss, gradient and update: one compiled function
    (compiled,) = counting_compiler
    assert compiled.calls == 10 == step.calls
    assert compiled.compiled.native and compiled.compiled.call_path != "interpreter"
    info = step.cache_info()
    assert (info.hits + info.misses, info.compiles, info.traces) == (10, 1, 1)
    assert step._derivative.cache_info().compiles == 0  # inlined into the step, never compiled alone


def test_a_new_batch_shape_is_a_new_compiled_step(counting_compiler):
    def loss_fn(w, x, y):
        return gt.mean((x @ w - y) ** 2)

    w, x, y = np.zeros(3), np.ones((6, 3)), np.ones(6)
    step = gt.train_step(loss_fn, O.SGD(0.1))
    step(w, x, y)
    step(w, x[:4], y[:4])
    step(w, x, y)
    assert len(counting_compiler) == 2 and [c.calls for c in counting_compiler] == [2, 1]


def test_check_finite_stops_without_touching_parameters():
    def loss_fn(params, x):
        return gt.sum(gt.sqrt(params["scale"] * x)) + gt.sum(params["offset"] ** 2)

    params = {"offset": np.ones(2), "scale": np.array([1.0, 1.0])}
    opt = O.Adam(0.1)
    step = gt.train_step(loss_fn, opt, check_finite=True)
    step(params, np.array([1.0, 2.0]))
    before = {k: v.copy() for k, v in params.items()}
    slot_before = opt.get_slot(params["scale"], "momentum")
    with pytest.raises(FloatingPointError) as err:
        step(params, np.array([1.0, -2.0]))  # sqrt of a negative: NaN value and gradient
    assert isinstance(err.value, O.NonFiniteGradientError)
    assert re.search(r"parameter params\['scale'\] \(leaf 1\) is not finite in update 2 \(iterations == 1\)",
                     str(err.value))
    for k in params:
        np.testing.assert_array_equal(params[k], before[k])
    np.testing.assert_array_equal(opt.get_slot(params["scale"], "momentum"), slot_before)
    assert opt.iterations == 1


def test_check_finite_defaults_to_the_optimizers_setting():
    def loss_fn(w):
        return gt.sum(gt.sqrt(w))

    w = gt.Variable(np.array([1.0]), name="w")
    step = gt.train_step(loss_fn, O.SGD(2.0, check_finite=True))
    step(w)  # gradient 0.5 at 1: w becomes 0
    with pytest.raises(O.NonFiniteGradientError, match="variable 'w'"):
        step(w)  # the gradient 0.5 / sqrt(0) is inf
    assert w.numpy()[0] == 0.0
    unchecked = gt.train_step(loss_fn, O.SGD(2.0, check_finite=True), check_finite=False)
    with np.errstate(divide="ignore"):
        unchecked(w)
    assert w.numpy()[0] == -np.inf


def test_has_aux_returns_the_loss_and_aux():
    def loss_fn(w, x):
        z = x @ w
        return gt.sum(z ** 2), {"z": z, "norm": gt.sum(w * w)}

    w, x = np.ones(3), np.arange(6.0).reshape(2, 3)
    loss, aux = gt.train_step(loss_fn, O.SGD(0.01), has_aux=True)(w, x)
    z = x @ np.ones(3)
    assert loss == pytest.approx(np.sum(z ** 2))
    np.testing.assert_allclose(aux["z"], z)
    assert float(aux["norm"]) == pytest.approx(3.0)
    np.testing.assert_allclose(w, np.ones(3) - 0.01 * 2 * x.T @ z)
    aux = gt.train_step(loss_fn, O.SGD(0.01), has_aux=True, return_loss=False)(np.ones(3), x)
    np.testing.assert_allclose(aux["z"], z)


def test_any_python_callable_is_a_learning_rate_and_changes_take_effect():
    rates = []

    def lr(step):  # Python control flow on the step: evaluated outside the compiled code
        rate = 0.1 if step < 2 else 0.01
        rates.append(rate)
        return rate

    w = np.zeros(2)
    opt = O.SGD(lr)
    step = gt.train_step(lambda w: gt.sum((w - 1.0) ** 2), opt)
    for _ in range(3):
        step(w)
    expected = np.zeros(2)
    for rate in (0.1, 0.1, 0.01):
        expected = expected - rate * 2 * (expected - 1.0)
    np.testing.assert_allclose(w, expected)
    assert rates == [0.1, 0.1, 0.01]
    opt.learning_rate = 0.5  # a float set later is read at the next step, without retracing
    step(w)
    np.testing.assert_allclose(w, expected - 0.5 * 2 * (expected - 1.0))
    assert step.cache_info().traces == 1


def test_parameters_must_be_writeable_float_arrays_or_variables():
    step = gt.train_step(lambda p, x: gt.sum(p[0] * x), O.SGD(0.1))
    read_only = np.ones(2)
    read_only.flags.writeable = False
    with pytest.raises(TypeError, match=re.escape("parameter params[0] (leaf 0) is a read-only array")):
        step([read_only], np.ones(2))
    with pytest.raises(TypeError, match=re.escape("params[0] (leaf 0) has dtype int64")):
        step([np.arange(2)], np.ones(2))
    with pytest.raises(TypeError, match="is a Tensor; train_step updates parameters in place"):
        step([gt.constant(np.ones(2))], np.ones(2))
    with pytest.raises(TypeError, match="expects a gradtape.optimizers.Optimizer"):
        gt.train_step(lambda p: p, "adam")


def test_without_the_loss_the_step_is_the_same_update():
    init, x, onehot = mlp_problem(5)
    with_loss, without = [p.copy() for p in init], [p.copy() for p in init]
    step = gt.train_step(mlp_loss, O.Adam(0.05))
    quiet = gt.train_step(mlp_loss, O.Adam(0.05), return_loss=False)
    for _ in range(5):
        assert isinstance(step(with_loss, x, onehot), float)
        assert quiet(without, x, onehot) is None
    for a, b in zip(with_loss, without):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


# --- the hot path: after the first call, the step calls the compiled step's native entry itself ----

@pytest.fixture
def native_now(monkeypatch):
    """Compile in the caller, so the second call of a structure already runs native code."""
    monkeypatch.setattr(runtime.config, "async_compile", False)


@pytest.fixture
def staged_calls(monkeypatch):
    """Count the calls of every staged function (the hot path makes none)."""
    from gradtape.staging.staged import StagedFunction

    count = {"calls": 0}
    call = StagedFunction.__call__

    def counted(self, *args, **kwargs):
        if not any(isinstance(a, gt.Tensor) for a in args):  # not the derivative's call in a trace
            count["calls"] += 1
        return call(self, *args, **kwargs)

    monkeypatch.setattr(StagedFunction, "__call__", counted)
    return count


def squares_loss(w, x, y):
    return gt.mean((x @ w - y) ** 2)


def squares_grad(w, x, y):
    return 2 * x.T @ (x @ w - y) / len(y)


def test_after_the_first_call_steps_skip_the_staged_function(native_now, staged_calls):
    rng = np.random.default_rng(7)
    w, x, y = np.zeros(3), rng.normal(size=(6, 3)), rng.normal(size=6)
    step = gt.train_step(squares_loss, O.SGD(0.1), return_loss=False)
    expected = w.copy()
    for _ in range(5):
        x, y = x + 0.5, y - 0.25  # new batch arrays each step, as a data loader gives
        assert step(w, x, y) is None
        expected = expected - 0.1 * squares_grad(expected, x, y)
    np.testing.assert_allclose(w, expected, rtol=1e-12)
    assert staged_calls["calls"] == 1
    assert step.calls == 5 and sum(step.cache_info()[:2]) == 5


def test_batches_the_native_entry_declines_go_through_the_general_path(native_now, staged_calls):
    """A Fortran-ordered batch, a batch of another shape, a Tensor: each converted, or a new plan."""
    rng = np.random.default_rng(8)
    w, x, y = np.zeros(3), rng.normal(size=(6, 3)), rng.normal(size=6)
    step = gt.train_step(squares_loss, O.SGD(0.1))
    expected = w.copy()
    batches = [(x, y), (np.asfortranarray(x), y), (x[:4], y[:4]), (x, gt.constant(y)), (x, y), (x, y)]
    for bx, by in batches:
        loss = step(w, bx, by)
        bx, by = np.asarray(bx), np.asarray(by)
        assert loss == pytest.approx(np.mean((bx @ expected - by) ** 2), rel=1e-12)
        expected = expected - 0.1 * squares_grad(expected, bx, by)
    np.testing.assert_allclose(w, expected, rtol=1e-12)
    # All but the last two: x[:4], a second size, runs in the interpreter while its dynamic version
    # builds, so the hot path stays the 6-row one, and both (x, y) go straight in.
    assert staged_calls["calls"] == 4
    assert step.optimizer.iterations == 6


def test_a_batch_the_entry_declines_leaves_the_hot_path_for_the_next_call(native_now, staged_calls):
    rng = np.random.default_rng(11)
    w, x, y = np.zeros(3), rng.normal(size=(6, 3)), rng.normal(size=6)
    step = gt.train_step(squares_loss, O.SGD(0.1), return_loss=False)
    expected = w.copy()
    for k in range(6):
        bx = np.asfortranarray(x) if k % 2 else x  # converted by the staged function each time
        step(w, bx, y)
        expected = expected - 0.1 * squares_grad(expected, x, y)
    np.testing.assert_allclose(w, expected, rtol=1e-12)
    assert staged_calls["calls"] == 1 + 3  # the first call, and the Fortran-ordered ones


def test_a_schedule_is_called_once_per_step_when_the_hot_path_declines(native_now):
    rates = []

    def lr(iterations):
        rates.append(0.1 / (1 + iterations))
        return rates[-1]

    rng = np.random.default_rng(9)
    w, x, y = np.zeros(3), rng.normal(size=(8, 3)), rng.normal(size=8)
    step = gt.train_step(squares_loss, O.SGD(lr), return_loss=False)
    expected = w.copy()
    for k in range(6):
        n = 8 if k % 2 else 5  # every call but the first declined by the entry of the last call
        step(w, x[:n], y[:n])
        expected = expected - rates[k] * squares_grad(expected, x[:n], y[:n])
    assert len(rates) == 6
    np.testing.assert_allclose(w, expected, rtol=1e-12)


def test_new_parameter_objects_and_lists_changed_in_place_are_used(native_now):
    rng = np.random.default_rng(10)
    x, y = rng.normal(size=(6, 3)), rng.normal(size=6)

    def loss_fn(p, x, y):
        return gt.mean((x @ p[0] + p[1] - y) ** 2)

    params = [np.zeros(3), np.zeros(())]
    step = gt.train_step(loss_fn, O.SGD(0.1))
    ref_w, ref_b = np.zeros(3), 0.0
    for k in range(6):
        if k == 3:
            params[0] = params[0].copy()  # the same list, a new leaf
        if k == 4:
            params = [params[0], params[1].copy()]  # a new list
        step(params, x, y)
        r = x @ ref_w + ref_b - y
        ref_w, ref_b = ref_w - 0.1 * 2 * x.T @ r / 6, ref_b - 0.1 * 2 * np.mean(r)
    np.testing.assert_allclose(params[0], ref_w, rtol=1e-12)
    assert float(params[1]) == pytest.approx(ref_b, rel=1e-12)


def test_a_parameter_made_read_only_after_the_first_call_is_refused_before_any_change(native_now):
    w, x, y = np.zeros(3), np.ones((4, 3)), np.ones(4)
    opt = O.Adam(0.1)
    step = gt.train_step(squares_loss, opt)
    step(w, x, y)
    step(w, x, y)
    before, momentum = w.copy(), opt.get_slot(w, "momentum")
    w.flags.writeable = False
    with pytest.raises(TypeError, match=re.escape("parameter params (leaf 0) is a read-only array")):
        step(w, x, y)
    np.testing.assert_array_equal(w, before)
    np.testing.assert_array_equal(opt.get_slot(w, "momentum"), momentum)
    assert opt.iterations == 2 and step.calls == 2


def test_check_finite_and_aux_on_the_hot_path(native_now):
    def loss_fn(w, x):
        z = x @ w
        return gt.sum(gt.sqrt(z)), {"z": z}

    w, x = np.ones(2), np.eye(2)
    step = gt.train_step(loss_fn, O.SGD(1.0), has_aux=True, check_finite=True)
    loss, aux = step(w, x)  # gradient 0.5 / sqrt(1): w becomes 0.5
    loss, aux = step(w, x)  # the hot path: sqrt(0.5), w becomes 0.5 - 0.5 / sqrt(0.5) < 0
    assert loss == pytest.approx(2 * np.sqrt(0.5)) and float(aux["z"][0]) == pytest.approx(0.5)
    before = w.copy()
    with pytest.raises(O.NonFiniteGradientError, match=r"parameter params \(leaf 0\) is not finite in update 3"):
        with np.errstate(invalid="ignore"):
            step(w, x)  # sqrt of a negative: NaN gradient
    np.testing.assert_array_equal(w, before)
    assert step.optimizer.iterations == 2


def test_compiled_for_gives_the_native_entry_of_a_signature(native_now, monkeypatch):
    from gradtape import codegen

    f = gt.grad(squares_loss)
    w, x, y = np.ones(3), np.arange(6.0).reshape(2, 3), np.ones(2)
    assert f.compiled_for(w, x, y) is None  # not called yet
    g = f(w, x, y)
    compiled, assemble = f.compiled_for(w, x, y)
    np.testing.assert_array_equal(assemble(compiled.entry(w, x, y)), g)
    np.testing.assert_allclose(g, squares_grad(w, x, y), rtol=1e-12)
    assert compiled.entry(w, np.asfortranarray(x), y) is NotImplemented  # the caller falls back
    assert f.compiled_for(w, x, [1.0, 1.0]) is None  # not an array: the staged call decides
    assert f.compiled_for(w, x[:1], y[:1]) is None  # another signature
    monkeypatch.setattr(codegen, "CODEGEN_VERSION", codegen.CODEGEN_VERSION + 1)
    assert f.compiled_for(w, x, y) is None
