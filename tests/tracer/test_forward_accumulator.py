"""gradtape.ForwardAccumulator (tracer/forward_accumulator.py) with TensorFlow's semantics:
JVPs against finite differences and against the staged gt.jvp, nesting with GradientTape
both ways and with another accumulator, and TF's edge cases (unconnected and integer
tensors, ops outside the context, variables, dtypes, malformed arguments)."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer import backward_cache, backward_plan
from gradtape.tracer.deferred import is_pending

RNG = np.random.default_rng(21)
A = RNG.normal(size=(4, 3)) / 2


def numeric_jvp(f, xs, ts, eps=1e-6):
    plus = f(*[x + eps * t for x, t in zip(xs, ts)])
    minus = f(*[x - eps * t for x, t in zip(xs, ts)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


FUNCTIONS = {
    "tanh_matvec": (lambda x, y: gt.tanh(A @ x) * gt.sum(y), lambda x, y: np.tanh(A @ x) * np.sum(y)),
    "indexing": (lambda x, y: 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - y[-1]) ** 2,
                 lambda x, y: 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - y[-1]) ** 2),
    "reductions": (lambda x, y: gt.logsumexp(x[:, None] * y[None, :], axis=0),
                   lambda x, y: np.log(np.sum(np.exp(x[:, None] * y[None, :]), axis=0))),
    "division": (lambda x, y: x / (1.0 + y[:3] ** 2) - gt.sqrt(gt.exp(x)), lambda x, y: x / (1.0 + y[:3] ** 2) -
                 np.sqrt(np.exp(x))),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_matches_finite_differences_and_staged_jvp(name):
    f, f_np = FUNCTIONS[name]
    x0, y0 = RNG.normal(size=3), RNG.normal(size=5)
    tx, ty = RNG.normal(size=3), RNG.normal(size=5)
    x, y = gt.constant(x0), gt.constant(y0)
    with gt.ForwardAccumulator([x, y], [tx, ty]) as acc:
        out = f(x, y)
    jvp = acc.jvp(out)
    np.testing.assert_allclose(jvp.numpy(), numeric_jvp(f_np, [x0, y0], [tx, ty]), rtol=1e-6, atol=1e-8)
    value, staged = gt.jvp(f, (x0, y0), (tx, ty))
    np.testing.assert_allclose(jvp.numpy(), staged, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out.numpy(), value, rtol=1e-12)
    # Only x moving: the JVP with respect to one primal.
    with gt.ForwardAccumulator(x, tx) as acc:
        out = f(x, y)
    np.testing.assert_allclose(acc.jvp(out).numpy(), numeric_jvp(lambda p: f_np(p, y0), [x0], [tx]),
                               rtol=1e-6, atol=1e-8)


def test_a_training_loop_compiles_one_plan_and_stays_right(monkeypatch):
    monkeypatch.setattr(backward_plan, "compile_after_runs", 1)
    monkeypatch.setattr(gt.runtime.config, "async_compile", False)
    backward_cache.clear_cache()
    w = gt.Variable(RNG.normal(size=3))
    t = RNG.normal(size=3)
    for step in range(4):
        with gt.ForwardAccumulator(w, t) as acc:
            loss = gt.sum(gt.softplus(A @ w))
        assert is_pending(loss)                    # alone on the stack, the accumulator defers
        jvp = acc.jvp(loss)
        assert not is_pending(loss)                # its value came with the JVP
        z = A @ w.numpy()
        np.testing.assert_allclose(jvp.numpy(), np.sum(1 / (1 + np.exp(-z)) * (A @ t)), rtol=1e-12)
        np.testing.assert_allclose(loss.numpy(), np.sum(np.logaddexp(0.0, z)), rtol=1e-12)
        w.assign(w.numpy() - 0.1)
    info = backward_cache.cache_info()
    assert (info["misses"], info["hits"]) == (1, 3)
    plan = next(iter(backward_cache._plans.values()))
    assert plan._compiled is not None and plan._compiled.native
    backward_cache.clear_cache()


def test_a_changed_structure_gets_its_own_plan():
    x0, t = RNG.normal(size=3), RNG.normal(size=3)
    x = gt.constant(x0)
    for step in range(6):
        with gt.ForwardAccumulator(x, t) as acc:
            y = gt.sin(x) if step % 2 else gt.cos(x) * 2.0
        want = np.cos(x0) * t if step % 2 else -2.0 * np.sin(x0) * t
        np.testing.assert_allclose(acc.jvp(y).numpy(), want, rtol=1e-13)


# --- TensorFlow's edge cases -------------------------------------------------------------

def test_unconnected_integer_and_outside_tensors_get_none_or_zeros():
    x, other = gt.constant([1.0, 2.0]), gt.constant([3.0, 4.0, 5.0])
    before = x * 2.0                                    # computed before the context
    with gt.ForwardAccumulator(x, gt.constant([1.0, 1.0])) as acc:
        y = x * 3.0
        unrelated = other * 2.0
        count = gt.argmax(x)                            # an integer result
    after = x * 4.0                                     # computed after the context
    assert acc.jvp(unrelated) is None and acc.jvp(before) is None and acc.jvp(after) is None
    assert acc.jvp(count) is None
    zeros = acc.jvp([unrelated, y, count], unconnected_gradients="zero")
    np.testing.assert_array_equal(zeros[0].numpy(), np.zeros(3))
    np.testing.assert_array_equal(zeros[1].numpy(), [3.0, 3.0])
    assert zeros[2].dtype == count.dtype and zeros[2].numpy() == 0
    z = acc.jvp({"y": y, "x": x}, unconnected_gradients=gt.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(z["x"].numpy(), [1.0, 1.0])   # a primal's JVP: its tangent
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'sometimes'"):
        acc.jvp(y, unconnected_gradients="sometimes")
    with pytest.raises(TypeError, match="ForwardAccumulator.jvp: expected Tensors, got ndarray at position 0"):
        acc.jvp(np.ones(2))


def test_zero_derivative_is_unconnected_like_a_stopped_gradient():
    x = gt.constant([1.5, -2.5])
    with gt.ForwardAccumulator(x, gt.constant([1.0, 1.0])) as acc:
        y = gt.stop_gradient(x) * 2.0
    assert acc.jvp(y) is None
    np.testing.assert_array_equal(acc.jvp(y, unconnected_gradients="zero").numpy(), [0.0, 0.0])


def test_malformed_arguments_are_refused():
    x = gt.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="got 2 primals and 1 tangents"):
        gt.ForwardAccumulator([x, x], [np.ones(2)])
    with pytest.raises(ValueError, match=r"a tangent of shape \(3,\) was given for a primal of shape \(2,\)"):
        gt.ForwardAccumulator(x, np.ones(3))
    with pytest.raises(TypeError, match="primals must be Tensors or Variables, got ndarray"):
        gt.ForwardAccumulator(np.ones(2), np.ones(2))
    with pytest.warns(UserWarning, match="must be floating"):
        acc = gt.ForwardAccumulator(gt.constant([1, 2]), np.ones(2))
    acc = gt.ForwardAccumulator(x, np.ones(2))
    with acc:
        with pytest.raises(ValueError, match="already recording"):
            acc.__enter__()


def test_tangents_take_the_primals_dtype():
    x = gt.constant(np.array([0.5, 1.5], np.float32))
    with gt.ForwardAccumulator(x, np.array([1.0, 2.0])) as acc:     # a float64 tangent
        y = gt.exp(x)
    jvp = acc.jvp(y)
    assert jvp.dtype == np.float32
    np.testing.assert_allclose(jvp.numpy(), np.exp([0.5, 1.5]) * [1.0, 2.0], rtol=1e-6)


def test_variables_are_watched_through_reads_and_assigns():
    v = gt.Variable([1.0, 2.0])
    t = gt.constant([0.5, -1.0])
    with gt.ForwardAccumulator(v, t) as acc:
        first = v * v                       # reads the old value
        v.assign([3.0, 4.0])
        second = gt.sum(v * first)          # reads the new value, and first
    np.testing.assert_allclose(acc.jvp(first).numpy(), 2 * np.array([1.0, 2.0]) * t.numpy())
    # d/dt sum(v_new * v_old^2) with both reads moving along t
    old, new = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_allclose(acc.jvp(second).numpy(), np.sum(t.numpy() * old ** 2 + new * 2 * old * t.numpy()))


def test_untracked_variables_are_constants():
    v, w = gt.Variable([1.0, 2.0]), gt.Variable([5.0, 7.0])
    with gt.ForwardAccumulator(v, gt.constant([1.0, 0.0])) as acc:
        y = v * w                            # w is trainable, but an accumulator watches its primals only
    np.testing.assert_array_equal(acc.jvp(y).numpy(), [5.0, 0.0])


# --- nesting -------------------------------------------------------------------------------

def test_forward_over_backward_is_a_hessian_vector_product():
    # TensorFlow's documented example.
    v = gt.Variable([1.0, 2.0])
    with gt.ForwardAccumulator(v, gt.constant([1.0, 0.0])) as acc:
        with gt.GradientTape() as tape:
            y = gt.sum(v ** 3.0)
        backward = tape.gradient(y, v)
    np.testing.assert_array_equal(backward.numpy(), [3.0, 12.0])
    np.testing.assert_array_equal(acc.jvp(backward).numpy(), [6.0, 0.0])


def hvp_reference(x, A, t):
    """H t for f(x) = sum(tanh(x)^2 * x) + 0.5 sum((A x)^2), by hand."""
    th = np.tanh(x)
    s = 1.0 - th * th
    d2 = 2.0 * s * s * x - 4.0 * th * th * s * x + 4.0 * th * s
    return d2 * t + A.T @ (A @ t)


def f_hvp(x, M):
    return gt.sum(gt.tanh(x) ** 2 * x) + 0.5 * gt.sum((M @ x) ** 2)


@pytest.mark.parametrize("order", ["forward_over_reverse", "reverse_over_forward"])
def test_hessian_vector_products_both_ways_match_staged_hvp(order):
    M = RNG.normal(size=(5, 3))
    for step in range(3):
        x0, t0 = RNG.normal(size=3), RNG.normal(size=3)
        x, t = gt.constant(x0), gt.constant(t0)
        if order == "forward_over_reverse":
            with gt.ForwardAccumulator(x, t) as acc:
                with gt.GradientTape() as tape:
                    tape.watch(x)                   # a watch inside the accumulator's context
                    y = f_hvp(x, M)
                g = tape.gradient(y, x)
            hv = acc.jvp(g)
        else:
            with gt.GradientTape() as tape:
                tape.watch(x)
                with gt.ForwardAccumulator(x, t) as acc:
                    y = f_hvp(x, M)
                jv = acc.jvp(y)                     # recorded on the tape
            hv = tape.gradient(jv, x)
        np.testing.assert_allclose(hv.numpy(), hvp_reference(x0, M, t0), rtol=1e-12)
        np.testing.assert_allclose(hv.numpy(), gt.hvp(f_hvp)(x0, t0, M), rtol=1e-12)


def test_jvp_read_inside_its_own_context_is_not_recorded_on_itself():
    x = gt.constant([0.5, 1.0])
    with gt.ForwardAccumulator(x, gt.constant([1.0, 1.0])) as acc:
        y = gt.sin(x)
        dy = acc.jvp(y)                      # cos(x), computed from x: not an op the accumulator watches
        z = y * 2.0
    np.testing.assert_allclose(dy.numpy(), np.cos([0.5, 1.0]), rtol=1e-14)
    assert acc.jvp(dy) is None
    np.testing.assert_allclose(acc.jvp(z).numpy(), 2 * np.cos([0.5, 1.0]), rtol=1e-14)


def test_forward_over_forward_gives_second_directional_derivatives():
    x0, t, u = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3)
    x = gt.constant(x0)
    with gt.ForwardAccumulator(x, u) as outer:
        with gt.ForwardAccumulator(x, t) as inner:
            y = gt.sum(gt.sin(x) * x)
        d1 = inner.jvp(y)                    # recorded by the outer accumulator
    d2 = outer.jvp(d1)
    np.testing.assert_allclose(d1.numpy(), np.sum((np.cos(x0) * x0 + np.sin(x0)) * t), rtol=1e-13)
    np.testing.assert_allclose(d2.numpy(), np.sum((-np.sin(x0) * x0 + 2 * np.cos(x0)) * t * u), rtol=1e-12)


def test_a_tape_inside_an_accumulator_still_gives_gradients():
    x = gt.constant([0.3, 0.7])
    with gt.ForwardAccumulator(x, gt.constant([1.0, 0.0])) as acc:
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.sum(gt.exp(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.exp([0.3, 0.7]), rtol=1e-14)
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.exp(0.3), rtol=1e-14)
    assert gt.GradientTape.current() is None
    with acc:
        assert gt.GradientTape.current() is None   # an accumulator is not a tape


def test_reverse_over_forward_records_the_jvp_as_a_call_and_compiles_one_plan(compile_at_once):
    M = RNG.normal(size=(5, 3))
    for step in range(3):
        x0, t0 = RNG.normal(size=3), RNG.normal(size=3)
        x = gt.constant(x0)
        with gt.GradientTape() as tape:
            tape.watch(x)
            with gt.ForwardAccumulator(x, t0) as acc:
                y = f_hvp(x, M)
            assert is_pending(y)                     # deferred on both recorders
            jv = acc.jvp(y)
            assert is_pending(jv)                    # a call, deferred on the tape
            assert [e.op.name for e in tape._tape.eqns[-1:]] == ["call"]
        hv = tape.gradient(jv, x)
        np.testing.assert_allclose(hv.numpy(), hvp_reference(x0, M, t0), rtol=1e-12)
        np.testing.assert_allclose(jv.numpy(), np.dot(_grad_f(x0, M), t0),
                                   rtol=1e-12)
    compiled = [p for p in backward_cache._plans.values() if p._compiled is not None]
    assert compiled and all(p._compiled.native for p in compiled)


def _grad_f(x, M):
    th = np.tanh(x)
    return 2 * th * (1 - th * th) * x + th * th + M.T @ (M @ x)


def test_a_primal_listed_twice_is_refused_as_in_tensorflow():
    x, v = gt.constant([1.0, 2.0]), gt.Variable([3.0])
    with pytest.raises(ValueError, match=r"primals 0 and 1 are the same Tensor \(shape \(2,\), float64\); "
                                         "list each primal once"):
        gt.ForwardAccumulator((x, x), (np.ones(2), np.zeros(2)))
    with pytest.raises(ValueError, match=r"primals 1 and 2 are the same Variable"):
        gt.ForwardAccumulator([x, v, v], [np.ones(2), np.ones(1), np.ones(1)])


def test_watching_a_primal_again_adds_the_tangents_as_tensorflows_watch():
    # TF's private _watch (its C++ ForwardAccumulator::Watch) aggregates the tangents of a tensor
    # watched in two calls; the constructor refuses a duplicate, so only _watch can do it.
    x = gt.constant([1.0, 2.0])
    acc = gt.ForwardAccumulator(x, np.array([1.0, 0.0]))
    acc._watch(x, gt.constant([0.5, 2.0]))
    with acc:
        y = x ** 3
    np.testing.assert_allclose(acc.jvp(y).numpy(), 3 * np.array([1.0, 4.0]) * [1.5, 2.0])


@pytest.mark.parametrize("wrap", [np.asarray, gt.constant], ids=["array", "tensor"])
def test_a_complex_tangent_of_a_real_primal_is_refused(wrap):
    x = gt.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="a tangent of dtype complex128 was given for a primal of dtype float64; "
                                        "a tangent must be real"):
        gt.ForwardAccumulator(x, wrap(np.array([1.0 + 1.0j, 0.0])))


def test_a_tangent_of_the_primals_size_but_another_shape_is_refused():
    x = gt.constant([1.0, 2.0])
    with pytest.raises(ValueError, match=r"a tangent of shape \(2, 1\) was given for a primal of shape \(2,\)"):
        gt.ForwardAccumulator(x, np.ones((2, 1)))
    with pytest.raises(ValueError, match=r"a tangent of shape \(\) was given for a primal of shape \(2,\)"):
        gt.ForwardAccumulator(x, 1.0)
