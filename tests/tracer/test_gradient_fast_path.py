"""tape.gradient's fast path (gradient_tape.py, backward.cached_plan): a training loop's
question (recorded targets, watched sources as one or a flat list or tuple, no
output_gradients, the plan cached) skips the general path's search for the plan.

Every test asks the same question three ways and compares the answers:
  - the fast path (the plan cached by an earlier step);
  - the general path with the same cached plan, forced by nesting the sources in a
    dict: the same arrays, exactly;
  - the general path without the cache (`backward_cache.disabled()`: the backward
    built afresh and interpreted), and NumPy where written out: equal up to
    rounding (compiled code may sum in another order).
Which path answered is seen by counting calls of the general path's backward_for.
"""
import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape import runtime
from gradtape.tracer import backward_cache, backward_plan, deferred, gradient_tape, tape_stack

X = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
T = np.array([0.5, -0.25, 1.0, 0.0])


@pytest.fixture(autouse=True)
def fresh_cache():
    backward_cache.clear_cache()
    yield
    backward_cache.clear_cache()


@pytest.fixture
def general_calls(monkeypatch):
    """The (targets, sources) of each backward the general path asks for."""
    calls = []
    real = gradient_tape.backward_for

    def counting(rec, targets, sources, **kwargs):
        calls.append((targets, sources))
        return real(rec, targets, sources, **kwargs)

    monkeypatch.setattr(gradient_tape, "backward_for", counting)
    return calls


@pytest.fixture(params=["interpreted", "compiled"])
def mode(request, monkeypatch):
    """Plans run by the interpreter, or compiled at their first run (and waited for), so
    that the fast path calls the compiled function's entry point."""
    if request.param == "compiled":
        monkeypatch.setattr(runtime.config, "async_compile", False)  # compiled in the first run
        monkeypatch.setattr(backward_plan, "compile_after_runs", 1)
    else:
        monkeypatch.setattr(backward_plan, "compile_after_runs", 10**9)
    return request.param


def ask(record, general_calls, nest=False, **kwargs):
    """(gradients, "fast" or "general") of a fresh recording: record() -> (tape, target,
    sources); with `nest`, the sources are asked for in a dict, and the answer unwrapped."""
    tape, target, sources = record()
    before = len(general_calls)
    if nest:
        grads = tape.gradient(target, {"nested": sources}, **kwargs)["nested"]
    else:
        grads = tape.gradient(target, sources, **kwargs)
    return grads, "general" if len(general_calls) > before else "fast"


def leaves(grads) -> list:
    if isinstance(grads, dict):
        return [grads[k] for k in sorted(grads)]
    return list(grads) if isinstance(grads, (list, tuple)) else [grads]


def assert_same(got, want, rtol=0.0):
    """Same structure; each gradient None in both, or of the same dtype and shape and
    equal (exactly with rtol 0)."""
    assert type(got) is type(want)
    for g, w in zip(leaves(got), leaves(want), strict=True):
        if w is None:
            assert g is None
            continue
        assert isinstance(g, gt.Tensor) and g.dtype == w.dtype and g.shape == w.shape
        if rtol:
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=1e-15)
        else:
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def three_ways(record, general_calls, **kwargs):
    """The gradients of record() by the fast path, checked against the general path with
    the same plan (exactly) and without the cache (up to rounding)."""
    first, path = ask(record, general_calls, **kwargs)
    assert path == "general"  # a new question: the general path builds its plan
    fast, path = ask(record, general_calls, **kwargs)
    assert path == "fast"
    assert_same(fast, first)
    same_plan, path = ask(record, general_calls, nest=True, **kwargs)
    assert path == "general"
    assert_same(fast, same_plan)
    with backward_cache.disabled():
        uncached, path = ask(record, general_calls, **kwargs)
    assert path == "general"
    assert_same(fast, uncached, rtol=1e-12)
    info = backward_cache.cache_info()
    assert (info["misses"], info["hits"], info["uncached"]) == (1, 2, 1)
    if backward_plan.compile_after_runs == 1:  # the "compiled" mode: so were both paths
        (plan,) = backward_cache._plans.values()
        assert plan._compiled is not None or not plan.fn.outvars
    return fast


def mlp_loss(w, b):
    h = gt.tanh(X @ w + b)
    return gt.mean((h - T) ** 2)


def mlp_grads_numpy(w, b):
    h = np.tanh(X @ w + b)
    dz = 2 * (h - T) / T.size * (1 - h * h)
    return X.T @ dz, dz.sum()


W0 = np.array([0.3, -0.2, 0.5])


# --- sources: one Variable, a list, a tuple, a dict ---------------------------------------


def test_single_variable(general_calls, mode):
    w = gt.Variable(W0)
    b = gt.Variable(0.1)

    def record():
        with gt.GradientTape() as tape:
            loss = mlp_loss(w, b)
        return tape, loss, w

    g = three_ways(record, general_calls)
    np.testing.assert_allclose(g.numpy(), mlp_grads_numpy(W0, 0.1)[0], rtol=1e-12)


@pytest.mark.parametrize("container", [list, tuple])
def test_list_and_tuple_of_variables(general_calls, mode, container):
    w = gt.Variable(W0)
    b = gt.Variable(0.1)

    def record():
        with gt.GradientTape() as tape:
            loss = mlp_loss(w, b)
        return tape, loss, container([w, b])

    gw, gb = three_ways(record, general_calls)
    want_w, want_b = mlp_grads_numpy(W0, 0.1)
    np.testing.assert_allclose(gw.numpy(), want_w, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), want_b, rtol=1e-12)


def test_dict_of_variables_takes_the_general_path_with_the_same_plan(general_calls):
    w = gt.Variable(W0)
    b = gt.Variable(0.1)

    def record(sources):
        with gt.GradientTape() as tape:
            loss = mlp_loss(w, b)
        return lambda: (tape, loss, sources)

    as_list, _ = ask(record([b, w]), general_calls)  # sorted keys: b, w
    as_dict, path = ask(record({"w": w, "b": b}), general_calls)
    assert path == "general" and list(as_dict) == ["w", "b"]
    assert_same(leaves(as_dict), as_list)
    assert backward_cache.cache_info()["misses"] == 1


def test_a_watched_constant_is_a_source_like_a_variable(general_calls, mode):
    x = gt.constant(W0)

    def record():
        with gt.GradientTape() as tape:
            tape.watch(x)
            loss = gt.sum(gt.sin(X @ x))
        return tape, loss, x

    g = three_ways(record, general_calls)
    np.testing.assert_allclose(g.numpy(), X.T @ np.cos(X @ W0), rtol=1e-12)


def test_tensor_constants_are_read_like_arrays(general_calls, mode):
    """Operands given as Tensors (not watched) are leaves holding a Tensor: the plan reads
    their arrays, as it reads the arrays of NumPy operands."""
    xc, tc = gt.constant(X), gt.constant(T)
    w = gt.Variable(W0)

    def record():
        with gt.GradientTape() as tape:
            loss = gt.sum((gt.tanh(xc @ w) - tc) ** 2)
        return tape, loss, w

    g = three_ways(record, general_calls)
    h = np.tanh(X @ W0)
    np.testing.assert_allclose(g.numpy(), X.T @ (2 * (h - T) * (1 - h * h)), rtol=1e-12)


# --- targets ------------------------------------------------------------------------


@pytest.mark.parametrize("container", [list, tuple])
def test_several_targets_are_summed(general_calls, mode, container):
    w = gt.Variable(W0)

    def record():
        with gt.GradientTape() as tape:
            z = X @ w
            targets = container([gt.sum(z * z), gt.sum(gt.exp(z))])
        return tape, targets, w

    g = three_ways(record, general_calls)
    z = X @ W0
    np.testing.assert_allclose(g.numpy(), X.T @ (2 * z + np.exp(z)), rtol=1e-12)


def test_non_scalar_target_counts_as_its_sum(general_calls, mode):
    w = gt.Variable(W0)

    def record():
        with gt.GradientTape() as tape:
            h = gt.tanh(X @ w)
        return tape, h, w

    g = three_ways(record, general_calls)
    h = np.tanh(X @ W0)
    np.testing.assert_allclose(g.numpy(), X.T @ (1 - h * h), rtol=1e-12)


def test_a_target_read_before_the_gradient_gets_its_own_plan(general_calls, mode):
    """Reading the target computes the deferred forward values: its plan reads them
    instead of recomputing them, and alternating the two never mixes the plans up."""
    w = gt.Variable(W0)

    def record(read):
        with gt.GradientTape() as tape:
            loss = gt.sum(gt.tanh(X @ w) ** 2)
        if read:
            float(loss)
        return tape, loss, w

    questions = 2 if deferred.enabled else 1  # (GRADTAPE_DEFER_EAGER=0: one plan for both)
    want = None
    for step in range(6):
        g, path = ask(lambda: record(step % 2 == 1), general_calls)
        assert path == ("general" if step < questions else "fast")
        if want is None:
            want = g
        assert_same(g, want, rtol=1e-13)
    np.testing.assert_allclose(want.numpy(), X.T @ (2 * np.tanh(X @ W0) * (1 - np.tanh(X @ W0) ** 2)), rtol=1e-12)
    assert backward_cache.cache_info()["misses"] == questions


def test_a_target_not_recorded_has_no_gradient(general_calls):
    w = gt.Variable(W0)
    c = gt.constant(2.0)

    def record():
        with gt.GradientTape() as tape:
            gt.sum(X @ w)
        return tape, c, w

    assert three_ways(record, general_calls) is None


def test_an_integer_target_has_no_gradient_on_either_path(general_calls):
    w = gt.Variable(W0)

    def record():
        with gt.GradientTape() as tape:
            i = gt.argmax(X @ w)
        return tape, i, [w]

    for _ in range(3):
        g, path = ask(record, general_calls)
        assert g == [None] and path == "general"  # the fast key never names this plan
    with backward_cache.disabled():
        assert ask(record, general_calls)[0] == [None]


# --- unconnected sources ------------------------------------------------------------


@pytest.mark.parametrize("unconnected", ["none", "zero"])
def test_unconnected_watched_source(general_calls, mode, unconnected):
    w = gt.Variable(W0)
    v = gt.Variable(np.ones((2, 2), np.float32))
    enum = gt.UnconnectedGradients(unconnected)

    def record():
        with gt.GradientTape() as tape:
            v * 2.0  # watched, recorded, but not on the way to the loss
            loss = gt.sum(X @ w)
        return tape, loss, [w, v]

    gw, gv = three_ways(record, general_calls, unconnected_gradients=enum)
    np.testing.assert_allclose(gw.numpy(), X.sum(axis=0))
    if unconnected == "none":
        assert gv is None
    else:
        assert gv.dtype == np.float32 and gv.shape == (2, 2) and not gv.numpy().any()
    # the spelling as a string takes the general path, with the same answer
    by_name, path = ask(record, general_calls, unconnected_gradients=unconnected)
    assert path == "general"
    assert_same(by_name, [gw, gv])


def test_a_source_never_read_takes_the_general_path(general_calls):
    w = gt.Variable(W0)
    unread = gt.Variable(1.0)

    def record():
        with gt.GradientTape() as tape:
            loss = gt.sum(X @ w)
        return tape, loss, [w, unread]

    for zero in [False, True]:
        kwargs = {"unconnected_gradients": gt.UnconnectedGradients.ZERO} if zero else {}
        for _ in range(2):
            (gw, gu), path = ask(record, general_calls, **kwargs)
            assert path == "general"
            np.testing.assert_allclose(gw.numpy(), X.sum(axis=0))
            assert (gu is None) if not zero else (gu.numpy() == 0.0)


# --- sources read more than once ------------------------------------------------------


def test_a_source_read_twice(general_calls, mode):
    w = gt.Variable(W0)

    def record():
        with gt.GradientTape() as tape:
            loss = gt.sum(gt.tanh(X @ w)) * gt.sum(w * w)
        return tape, loss, w

    g = three_ways(record, general_calls)
    h = np.tanh(X @ W0)
    want = X.T @ (1 - h * h) * np.sum(W0 * W0) + h.sum() * 2 * W0
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)


def test_the_same_source_twice_in_the_list(general_calls, mode):
    w = gt.Variable(W0)

    def record():
        with gt.GradientTape() as tape:
            loss = gt.sum(gt.exp(X @ w))
        return tape, loss, [w, w]

    g1, g2 = three_ways(record, general_calls)
    np.testing.assert_allclose(g1.numpy(), X.T @ np.exp(X @ W0), rtol=1e-12)
    assert_same([g2], [g1])


def test_a_variable_assigned_mid_tape_sums_both_reads(general_calls, mode):
    """Each read after an assign is a leaf of its own; the gradient adds them up, each at
    the value that read saw."""
    w = gt.Variable(W0)

    def record():
        w.assign(W0)
        with gt.GradientTape() as tape:
            a = gt.sum(gt.sin(X @ w))
            w.assign_add(np.full(3, 0.5))
            loss = a + gt.sum(w * w)
        return tape, loss, w

    g = three_ways(record, general_calls)
    np.testing.assert_allclose(g.numpy(), X.T @ np.cos(X @ W0) + 2 * (W0 + 0.5), rtol=1e-12)


def test_an_intermediate_source_takes_the_general_path(general_calls):
    w = gt.Variable(W0)

    def record():
        with gt.GradientTape() as tape:
            z = X @ w
            loss = gt.sum(z * z)
        return tape, loss, [z, w]

    for _ in range(2):
        (gz, gw), path = ask(record, general_calls)
        assert path == "general"
        np.testing.assert_allclose(gz.numpy(), 2 * X @ W0)
        np.testing.assert_allclose(gw.numpy(), X.T @ (2 * X @ W0))


# --- tapes: persistent, inside their context, nested --------------------------------------


def test_persistent_tape_asked_twice(general_calls, mode):
    w = gt.Variable(W0)
    b = gt.Variable(0.1)

    def record():
        with gt.GradientTape(persistent=True) as tape:
            loss = mlp_loss(w, b)
        return tape, loss

    tape, loss = record()
    first = tape.gradient(loss, [w, b])  # builds the plan
    again = [tape.gradient(loss, [w, b]) for _ in range(2)]
    assert len(general_calls) == 1
    for g in again:
        assert_same(g, first)
    assert tape.watched_variables() == (w, b)
    with backward_cache.disabled():
        tape, loss = record()
        assert_same(first, tape.gradient(loss, [w, b]), rtol=1e-12)


def test_gradient_inside_the_tapes_context_pops_it(general_calls):
    w = gt.Variable(W0)

    def ask_inside():
        with gt.GradientTape() as tape:
            loss = gt.sum(gt.exp(X @ w))
            g = tape.gradient(loss, w)
            assert tape_stack.active() == [] and not tape.is_recording
            assert gt.sum(X @ w).__class__ is gt.Tensor  # no longer recorded
        return g

    first = ask_inside()
    again = ask_inside()
    assert len(general_calls) == 1
    assert_same(again, first)
    np.testing.assert_allclose(again.numpy(), X.T @ np.exp(X @ W0), rtol=1e-12)


def test_persistent_tape_inside_its_context_replays_on_the_general_path(general_calls):
    w = gt.Variable(W0)
    with gt.GradientTape(persistent=True) as tape:
        loss = gt.sum(gt.exp(X @ w))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gs = [tape.gradient(loss, w) for _ in range(2)]
    assert len(general_calls) == 2
    assert backward_cache.cache_info()["replayed"] == 2
    for g in gs:
        np.testing.assert_allclose(g.numpy(), X.T @ np.exp(X @ W0), rtol=1e-12)


def test_an_outer_tape_recording_takes_the_general_path_and_sees_the_gradient(general_calls):
    x = gt.Variable(0.7)
    for _ in range(2):
        with gt.GradientTape() as outer:
            with gt.GradientTape() as inner:
                y = x * x * x
            dy = inner.gradient(y, x)  # the outer tape records this gradient
        d2y = outer.gradient(dy, x)
        np.testing.assert_allclose(dy.numpy(), 3 * 0.7**2)
        np.testing.assert_allclose(d2y.numpy(), 6 * 0.7)
    # the inner gradient is replayed on the outer tape; each outer one: general, then fast
    assert len(general_calls) == 3


# --- no plan is given to another question -------------------------------------------------


def test_alternating_structures_in_a_loop(general_calls, mode):
    """Two losses, two orders of sources and two batch shapes, interleaved: each step's
    gradients are its own question's (checked against NumPy), and each question has one plan."""
    w = gt.Variable(W0)
    b = gt.Variable(0.1)
    X2 = X[:2]

    def loss_of(kind, x):
        if kind == "mlp":
            return gt.mean((gt.tanh(x @ w + b) - 0.5) ** 2)
        return gt.sum(gt.exp(x @ w) * b)

    def want_of(kind, x, wv, bv):
        if kind == "mlp":
            h = np.tanh(x @ wv + bv)
            dz = 2 * (h - 0.5) / h.size * (1 - h * h)
            return x.T @ dz, dz.sum()
        e = np.exp(x @ wv)
        return x.T @ e * bv, e.sum()

    questions = [(kind, x, order) for kind in ["mlp", "exp"] for x in [X, X2] for order in ["wb", "bw"]]
    for step in range(3 * len(questions)):
        kind, x, order = questions[step % len(questions)]
        with gt.GradientTape() as tape:
            loss = loss_of(kind, x)
        before = len(general_calls)
        grads = tape.gradient(loss, [w, b] if order == "wb" else (b, w))
        assert (len(general_calls) > before) == (step < len(questions))
        gw, gb = grads if order == "wb" else grads[::-1]
        want_w, want_b = want_of(kind, x, w.numpy(), b.numpy())
        np.testing.assert_allclose(gw.numpy(), want_w, rtol=1e-12)
        np.testing.assert_allclose(gb.numpy(), want_b, rtol=1e-12)
        assert isinstance(grads, list if order == "wb" else tuple)
        w.assign_sub(0.01 * gw.numpy())
    assert backward_cache.cache_info()["misses"] == len(questions)


def test_a_loop_with_the_cache_dropped_or_off_still_answers(general_calls):
    w = gt.Variable(W0)

    def record():
        with gt.GradientTape() as tape:
            loss = gt.sum(gt.exp(X @ w))
        return tape, loss, w

    want = X.T @ np.exp(X @ W0)
    paths = []
    for step in range(6):
        if step == 2:
            backward_cache.clear_cache()
        if step == 4:
            backward_cache.set_max_plans(0)
        g, path = ask(record, general_calls)
        paths.append(path)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)
    backward_cache.set_max_plans(256)
    assert paths == ["general", "fast", "general", "fast", "general", "general"]


# --- errors ------------------------------------------------------------------------------


def error_of(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


BAD_CALLS = {
    "target None": lambda tape, loss, w: tape.gradient(None, w),
    "array in the targets": lambda tape, loss, w: tape.gradient([loss, np.ones(2)], w),
    "array in the sources": lambda tape, loss, w: tape.gradient(loss, [w, np.ones(2)]),
    "bare array source": lambda tape, loss, w: tape.gradient(loss, np.ones(2)),
    "unknown unconnected_gradients": lambda tape, loss, w: tape.gradient(loss, w, unconnected_gradients="some"),
    "output_gradients of the wrong length": lambda tape, loss, w: tape.gradient(loss, w, output_gradients=[1.0, 2.0]),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_errors_are_the_general_paths_and_leave_the_tape_usable(general_calls, name):
    w = gt.Variable(W0)

    def record():
        with gt.GradientTape() as tape:
            loss = gt.sum(gt.exp(X @ w))
        return tape, loss

    tape, loss = record()
    tape.gradient(loss, w)  # the plan is cached: the fast path would answer a good call
    tape, loss = record()
    got = error_of(lambda: BAD_CALLS[name](tape, loss, w))
    with backward_cache.disabled():
        reference_tape, reference_loss = record()
        assert got == error_of(lambda: BAD_CALLS[name](reference_tape, reference_loss, w))
    g = tape.gradient(loss, w)  # nothing was used up
    np.testing.assert_allclose(g.numpy(), X.T @ np.exp(X @ W0), rtol=1e-12)


def test_a_used_tape_says_so_on_the_fast_path_too(general_calls):
    w = gt.Variable(W0)
    for _ in range(2):
        with gt.GradientTape() as tape:
            loss = gt.sum(gt.exp(X @ w))
        tape.gradient(loss, w)
    assert len(general_calls) == 1  # the second was the fast path
    kind, message = error_of(lambda: tape.gradient(loss, w))
    assert kind is RuntimeError and message.startswith("A non-persistent GradientTape can only be used")
    assert tape.watched_variables() == (w,)
