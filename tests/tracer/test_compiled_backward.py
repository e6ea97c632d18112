"""The backward-plan cache behind tape.gradient (gradtape/tracer/backward_cache.py).

The same recorded program must reuse one plan; any structural difference
must build a new one; and every cached gradient must equal the one computed
without the cache (`backward_cache.disabled()`: the plan built afresh and
run by the reference interpreter) and, where written out, NumPy by hand.
"""
import concurrent.futures
import gc
import weakref

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir, runtime
from gradtape.runtime import serving
from gradtape.runtime.dynamic_serving import DynamicServing
from gradtape.tracer import backward_cache, backward_plan
from gradtape.tracer.dispatch import bind


@pytest.fixture(autouse=True)
def fresh_cache():
    backward_cache.clear_cache()
    yield
    backward_cache.clear_cache()


def counts():
    info = backward_cache.cache_info()
    return info["hits"], info["misses"]


def assert_same(got, want, rtol=0.0):
    assert len(got) == len(want)
    for g, r in zip(got, want):
        if r is None:
            assert g is None
        else:
            assert g is not None and g.dtype == r.dtype
            np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=rtol, atol=0.0)


def cached_and_uncached(step, rtol=0.0):
    """step() records a fresh tape and returns its gradients; run it with and without the cache.

    Interpreted, they agree exactly; compiled code may sum in another order
    (rtol): native code serves the tests that use the real runtime.
    """
    got = step()
    with backward_cache.disabled():
        want = step()
    assert_same(got, want, rtol)
    return got


# --- a training loop ---------------------------------------------------------------


def mlp_loss(w, b, x, t):
    h = gt.tanh(x @ w + b)
    return gt.mean((h - t) ** 2)


def mlp_grads_by_hand(w, b, x, t):
    h = np.tanh(x @ w + b)
    dz = 2 * (h - t) / h.size * (1 - h * h)
    return x.T @ dz, dz.sum(axis=0)


def test_training_loop_builds_one_plan_and_matches_the_uncached_gradients():
    rng = np.random.default_rng(0)
    w = gt.Variable(rng.normal(size=(3, 2)), name="w")
    b = gt.Variable(np.zeros(2), name="b")
    for step in range(20):
        x, t = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))  # a new batch each step

        def record():
            with gt.GradientTape() as tape:
                loss = mlp_loss(w, b, x, t)
            return tape.gradient(loss, [w, b])

        gw, gb = cached_and_uncached(record, rtol=1e-13)
        dw, db = mlp_grads_by_hand(w.numpy(), b.numpy(), x, t)
        np.testing.assert_allclose(gw.numpy(), dw, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(gb.numpy(), db, rtol=1e-12, atol=1e-14)
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
        assert counts() == (step, 1)
    assert backward_cache.cache_info()["entries"] == 1
    assert backward_cache.cache_info()["uncached"] == 20  # the reference gradients


def test_training_loop_runs_the_runtimes_compiled_backward(monkeypatch):
    """The real runtime (native or not, whatever it is today), waited for so
    that every step after the second runs the CompiledFunction."""
    compiled = []
    real = serving.compile_function_async

    def compile_and_wait(fn):
        future = concurrent.futures.Future()
        future.set_result(real(fn).result())
        compiled.append(future.result())
        return future

    monkeypatch.setattr(serving, "compile_function_async", compile_and_wait)
    monkeypatch.setattr(runtime.config, "async_compile", True)
    monkeypatch.setattr(backward_plan, "compile_after_runs", 2)
    w = gt.Variable(np.linspace(-1, 1, 6).reshape(3, 2))
    x = np.arange(6.0).reshape(2, 3) / 6
    for step in range(4):

        def record():
            with gt.GradientTape() as tape:
                loss = gt.sum(gt.tanh(x @ w) ** 2)
            return tape.gradient(loss, [w])

        (g,) = cached_and_uncached(record, rtol=1e-13)
        h = np.tanh(x @ w.numpy())
        np.testing.assert_allclose(g.numpy(), x.T @ (2 * h * (1 - h * h)), rtol=1e-12)
        w.assign_add(np.full((3, 2), 0.01))
        assert len(compiled) == (0 if step == 0 else 1)
    assert counts() == (3, 1)


# --- what the key tells apart -----------------------------------------------------------


def grads_of(f, xs, sources=None, persistent=False):
    """Record f on watched constants xs; gradient of the result w.r.t. `sources` (default xs)."""
    xs = [gt.constant(v) for v in xs]
    with gt.GradientTape(persistent=persistent) as tape:
        tape.watch(xs)
        y = f(*xs)
    src = xs if sources is None else [xs[i] for i in sources]
    return tape.gradient(y, src)


A = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
B = np.array([[1.0, 2.0, -3.0], [0.5, -0.5, 4.0]])


def base(x, y):
    return gt.sum(gt.tanh(x) * y, axis=0)


STRUCTURAL_CHANGES = {
    "op": (lambda x, y: gt.sum(gt.sin(x) * y, axis=0), [A, B], None),
    "shape": (base, [A[:, :2], B[:, :2]], None),
    "dtype": (base, [A.astype(np.float32), B.astype(np.float32)], None),
    "param": (lambda x, y: gt.sum(gt.tanh(x) * y, axis=1), [A, B], None),
    "wiring": (lambda x, y: gt.sum(gt.tanh(y) * x, axis=0), [A, B], None),
    "literal": (lambda x, y: gt.sum(gt.tanh(x) * y * 2.0, axis=0), [A, B], None),
    "sources": (base, [A, B], [0]),
    "source order": (base, [A, B], [1, 0]),
    "extra op": (lambda x, y: gt.sum(gt.tanh(x) * y, axis=0) + 0.0, [A, B], None),
}


@pytest.mark.parametrize("change", sorted(STRUCTURAL_CHANGES))
def test_a_structural_change_misses_and_is_still_right(change):
    cached_and_uncached(lambda: grads_of(base, [A, B]))
    cached_and_uncached(lambda: grads_of(base, [A + 1, B - 1]))  # new values: a hit
    assert counts() == (1, 1)
    f, xs, sources = STRUCTURAL_CHANGES[change]
    cached_and_uncached(lambda: grads_of(f, xs, sources))
    assert counts() == (1, 2)
    cached_and_uncached(lambda: grads_of(f, xs, sources))  # and that one is reused
    assert counts() == (2, 2)


def test_changes_that_keep_every_type_still_miss():
    square = np.array([[1.0, 2.0], [3.0, 4.0]])
    weights = np.array([10.0, 100.0])
    # Only a param differs: d sum_j(w_j * sum_i x_ij) / dx = w broadcast along the summed axis.
    (g0,) = grads_of(lambda x: gt.sum(x, axis=0) * weights, [square])
    (g1,) = grads_of(lambda x: gt.sum(x, axis=1) * weights, [square])
    np.testing.assert_array_equal(g0.numpy(), [[10, 100], [10, 100]])
    np.testing.assert_array_equal(g1.numpy(), [[10, 10], [100, 100]])
    # Only a scalar literal differs.
    (g2,) = grads_of(lambda x: x * 2.0, [square])
    (g3,) = grads_of(lambda x: x * 3.0, [square])
    np.testing.assert_array_equal(g2.numpy(), np.full((2, 2), 2.0))
    np.testing.assert_array_equal(g3.numpy(), np.full((2, 2), 3.0))
    assert counts() == (0, 4)


def test_the_target_is_part_of_the_key():
    x = gt.constant(A)

    def record(pick):
        with gt.GradientTape() as tape:
            tape.watch(x)
            u = gt.sin(x)
            v = gt.exp(x)
        return tape.gradient(pick(u, v), x)

    np.testing.assert_allclose(record(lambda u, v: u).numpy(), np.cos(A))
    np.testing.assert_allclose(record(lambda u, v: v).numpy(), np.exp(A))
    assert counts() == (0, 2)


def test_a_constant_that_is_watched_differs_from_one_that_is_not():
    x, c = gt.constant(A), gt.constant(B)

    def record(watch_c):
        with gt.GradientTape() as tape:
            tape.watch(x)
            if watch_c:
                tape.watch(c)
            y = x * c
        return tape.gradient(y, [x, c])

    assert_same(record(False), [gt.constant(B), None])
    assert_same(record(True), [gt.constant(B), gt.constant(A)])
    assert counts() == (0, 2)


def test_one_tensor_used_twice_differs_from_two_equal_tensors():
    x = gt.constant(A)
    c1, c2 = gt.constant(B), gt.constant(B)

    def record(second):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = x * c1 + second
        return tape.gradient(y, x)

    record(c1)
    record(c2)
    assert counts() == (0, 2)


def test_the_number_of_reads_of_a_variable_is_part_of_the_key():
    w = gt.Variable(A)

    def record(assign_between):
        with gt.GradientTape() as tape:
            y = w * w
            if assign_between:
                w.assign(B)  # the next read is a new leaf, evaluated at B
            z = y * w
        return tape.gradient(z, w)

    # d(w^3) = 3w^2; with an assign between: d(a*a*b) summed over both reads
    # = 2ab (first read, at a = A) + a^2 (second read, at b = B).
    np.testing.assert_allclose(record(False).numpy(), 3 * A**2)
    w.assign(A)
    np.testing.assert_allclose(record(True).numpy(), 2 * A * B + A**2)
    w.assign(A)
    np.testing.assert_allclose(record(True).numpy(), 2 * A * B + A**2)
    assert counts() == (1, 2)


def test_negative_zero_literal_is_not_positive_zero():
    # d(x / c)/dx = 1 / c: +inf for c = 0.0, -inf for c = -0.0.
    for c, want in [(0.0, np.inf), (-0.0, -np.inf), (0.0, np.inf)]:
        (g,) = grads_of(lambda x: x / c, [np.array([1.0, 2.0])])
        np.testing.assert_array_equal(g.numpy(), [want, want])
    assert counts() == (1, 2)


def test_nan_literal_hits_itself():
    for _ in range(2):
        (g,) = grads_of(lambda x: x * np.nan, [np.array([1.0])])
        assert np.isnan(g.numpy()).all()
    assert counts() == (1, 1)


# --- what the key ignores ----------------------------------------------------------------


def test_output_gradients_share_a_plan_and_unit_seeds_get_their_own():
    x, u = gt.constant(A), gt.constant(B)

    def record(**kw):
        with gt.GradientTape() as tape:
            tape.watch([x, u])
            y = gt.exp(x) * 2.0
        return tape.gradient(y, [x, u], **kw)

    g, n = record()
    np.testing.assert_allclose(g.numpy(), 2 * np.exp(A))
    assert n is None
    assert counts() == (0, 1)  # seeds of ones: baked into the plan's function
    seed = np.arange(6.0).reshape(2, 3)
    g, z = record(output_gradients=gt.constant(seed), unconnected_gradients="zero")
    np.testing.assert_allclose(g.numpy(), 2 * np.exp(A) * seed)
    np.testing.assert_array_equal(z.numpy(), np.zeros_like(B))
    g, _ = record(output_gradients=gt.constant(2 * seed))  # seeds are inputs of that plan
    np.testing.assert_allclose(g.numpy(), 4 * np.exp(A) * seed)
    assert counts() == (1, 2)


def test_float32_seed_is_cast_to_the_target_dtype():
    x = gt.constant(A)
    for _ in range(2):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        g = tape.gradient(y, x, output_gradients=np.ones((2, 3), np.float32))
        assert g.dtype == np.float64
        np.testing.assert_allclose(g.numpy(), 2 * A)
    assert counts() == (1, 1)


def test_unconnected_sources_and_unrecorded_targets_are_cached_too():
    x, u = gt.constant(A), gt.constant(B)
    for _ in range(2):
        with gt.GradientTape() as tape:
            tape.watch([x, u])
            y = gt.exp(x)
        assert tape.gradient(y, u) is None
    for _ in range(2):
        with gt.GradientTape() as tape:
            tape.watch(x)
            gt.exp(x)
        # A target computed off the tape contributes nothing, as in TF.
        z = tape.gradient(gt.constant(1.0), x, unconnected_gradients="zero")
        np.testing.assert_array_equal(z.numpy(), np.zeros_like(A))
    assert counts() == (2, 2)


# --- tape semantics ----------------------------------------------------------------------


def test_persistent_tape_reuses_plans_per_question():
    x = gt.constant(A)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.sin(x)
        z = y * y
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), 2 * np.sin(A) * np.cos(A))
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), 2 * np.sin(A) * np.cos(A))
    np.testing.assert_allclose(tape.gradient(z, y).numpy(), 2 * np.sin(A))  # an intermediate source
    assert counts() == (1, 2)


def test_non_persistent_tape_is_still_used_up():
    x = gt.constant(A)
    for _ in range(2):  # the second time from a cached plan
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        tape.gradient(y, x)
        with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
            tape.gradient(y, x)
    assert counts() == (1, 1)


def test_intermediate_source_hits_and_leaves_the_other_sources_right():
    x = gt.constant(A)
    for _ in range(3):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.exp(x)
            z = gt.sum(y * x)
        gx, gy = tape.gradient(z, [x, y])
        np.testing.assert_allclose(gy.numpy(), A)
        np.testing.assert_allclose(gx.numpy(), np.exp(A) * (1 + A))
    assert counts() == (2, 1)


def test_nested_tapes_replay_and_give_second_derivatives():
    x = gt.constant(np.array([0.5, -2.0]))
    for _ in range(2):
        with gt.GradientTape() as outer:
            outer.watch(x)
            with gt.GradientTape() as inner:
                inner.watch(x)
                y = x * x * x
            g = inner.gradient(y, x)  # replayed: the outer tape records it
        np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
        np.testing.assert_allclose(outer.gradient(g, x).numpy(), 6 * x.numpy())
    info = backward_cache.cache_info()
    assert info["replayed"] == 2
    assert counts() == (1, 1)  # the outer gradients, the second from the cache


def test_persistent_tape_inside_its_context_replays():
    x = gt.constant(2.0)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        with pytest.warns(UserWarning, match="inside its context"):
            g = tape.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), 12.0)
    np.testing.assert_allclose(tape.gradient(g, x).numpy(), 12.0)  # d(3x^2) = 6x
    assert backward_cache.cache_info()["replayed"] == 1
    assert counts() == (0, 1)


def test_custom_gradient_is_never_cached():
    @gt.custom_gradient
    def clipped_identity(x):
        def grad_fn(upstream):
            return upstream * 0.5
        return x * 1.0, grad_fn

    x = gt.constant(A)
    for _ in range(3):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = clipped_identity(x) * 3.0
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.full_like(A, 1.5))
    info = backward_cache.cache_info()
    assert (info["hits"], info["misses"], info["uncached"], info["entries"]) == (0, 0, 3, 0)


def test_unhashable_params_are_computed_uncached():
    x = gt.constant(A)
    for _ in range(2):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = bind(ir.all_ops["reshape"], x, shape=[3, 2])  # a list: no hash
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.ones_like(A))
    assert backward_cache.cache_info()["uncached"] == 2
    assert counts() == (0, 0)


def test_the_plan_keeps_no_forward_value_alive():
    x = gt.constant(A)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.tanh(x)
        z = y * y
    tape.gradient(z, x)
    alive = weakref.ref(y)
    del tape, y, z
    gc.collect()
    assert alive() is None
    assert backward_cache.cache_info()["entries"] == 1


# --- call equations ------------------------------------------------------------------------


def scale_by(values):
    """{ a:f64[3] . b = mul a const -> b } with `values` as the constant."""
    builder = ir.Builder()
    a = builder.input(ir.TensorType((3,), np.float64))
    return builder.build([a], [a * builder.literal(np.asarray(values, np.float64))])


def test_call_functions_key_by_text_and_literal_values():
    x = gt.constant(np.array([1.0, 2.0, 3.0]))

    def record(fn):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = bind(ir.all_ops["call"], x, fn=fn)
        return tape.gradient(y, x).numpy()

    first, same, other = scale_by([1, 2, 3]), scale_by([1, 2, 3]), scale_by([4, 5, 6])
    assert str(first) == str(other)  # the text alone cannot tell them apart
    np.testing.assert_allclose(record(first), [1, 2, 3])
    np.testing.assert_allclose(record(same), [1, 2, 3])
    np.testing.assert_allclose(record(other), [4, 5, 6])
    assert counts() == (1, 2)


# --- jacobians ---------------------------------------------------------------------------


def test_jacobian_uses_one_plan_for_all_rows():
    x = gt.constant(np.array([0.3, -0.7, 1.1]))

    def record():
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.sin(x) * x[0]
        return tape.jacobian(y, x)

    jac = record()
    assert counts() == (0, 1)  # three rows, one plan
    with backward_cache.disabled():
        want = record()
    np.testing.assert_array_equal(jac.numpy(), want.numpy())
    v = x.numpy()
    by_hand = np.diag(np.cos(v) * v[0])
    by_hand[:, 0] += np.sin(v)
    np.testing.assert_allclose(jac.numpy(), by_hand)
    record()
    assert counts() == (1, 1)


def test_batch_jacobian_uses_one_plan():
    x = gt.constant(np.array([[0.1, 0.2], [0.3, -0.4], [1.0, 2.0]]))

    def record():
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.tanh(x) * 2.0
        return tape.batch_jacobian(y, x)

    jac = record()
    with backward_cache.disabled():
        want = record()
    np.testing.assert_array_equal(jac.numpy(), want.numpy())
    record()
    assert counts() == (1, 1)


# --- compiling in the background -------------------------------------------------------


class StubCompiled:
    """Stands for a CompiledFunction: runs the interpreter, counts calls."""

    def __init__(self, fn):
        self.fn = fn
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return ir.eval_function(self.fn, list(args))


@pytest.fixture
def compiles(monkeypatch):
    """Replace the runtime's compiles (the ones the tape's compile hook, runtime.serving,
    makes) by StubCompiled; returns the list of (fn, future) asked for."""
    asked = []

    def compile_later(fn):
        future = concurrent.futures.Future()
        asked.append((fn, future))
        return future

    monkeypatch.setattr(serving, "compile_function_async", compile_later)
    monkeypatch.setattr(serving, "compile_function", StubCompiled)
    monkeypatch.setattr(runtime.config, "async_compile", True)
    monkeypatch.setattr(backward_plan, "compile_after_runs", 2)
    return asked


def test_the_package_root_gives_the_tape_the_runtimes_compile_policy():
    # ServedFunction's policy, plans that differ only in a size sharing a dynamic version
    assert isinstance(backward_plan.serve, DynamicServing)
    served = backward_plan.serve(gt.make_ir(lambda x: gt.exp(x), A), compile_after=3)
    assert isinstance(served.served, serving.ServedFunction) and served.compiled is None


def test_without_a_compile_hook_plans_are_interpreted(monkeypatch):
    monkeypatch.setattr(backward_plan, "serve", None)
    monkeypatch.setattr(backward_plan, "compile_after_runs", 1)
    for _ in range(3):
        (g,) = grads_of(lambda x: gt.exp(x) * x, [A])
        np.testing.assert_allclose(g.numpy(), np.exp(A) * (1 + A))
    (plan,) = backward_cache._plans.values()
    assert plan._compiled is None and plan._served is None


def test_interpreter_serves_until_the_background_compile_is_done(compiles):
    x = gt.constant(A)

    def record():
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.exp(x) * x
        return tape.gradient(y, x).numpy()

    want = np.exp(A) * (1 + A)
    np.testing.assert_allclose(record(), want)  # met once: interpreted, not compiled
    assert compiles == []
    np.testing.assert_allclose(record(), want)  # warm: compiling, the interpreter serves
    np.testing.assert_allclose(record(), want)
    (fn, future), = compiles
    compiled = StubCompiled(fn)
    future.set_result(compiled)
    np.testing.assert_allclose(record(), want)
    np.testing.assert_allclose(record(), want)
    assert compiled.calls == 2
    assert len(compiles) == 1
    assert counts() == (4, 1)


def test_compile_after_runs_sets_when_a_plan_compiles(compiles, monkeypatch):
    monkeypatch.setattr(backward_plan, "compile_after_runs", 4)
    for n_compiles in [0, 0, 0, 1, 1]:
        (g,) = grads_of(gt.sin, [A])
        np.testing.assert_allclose(g.numpy(), np.cos(A))
        assert len(compiles) == n_compiles


def test_failed_background_compile_is_retried_in_the_foreground(compiles, monkeypatch):
    foreground = []
    monkeypatch.setattr(serving, "compile_function", lambda fn: foreground.append(StubCompiled(fn)) or foreground[-1])
    for _ in range(2):
        (g,) = grads_of(lambda x: x * x, [A])
        np.testing.assert_allclose(g.numpy(), 2 * A)
    (fn, future), = compiles
    future.set_exception(RuntimeError("compiler crashed"))
    (g,) = grads_of(lambda x: x * x, [A])
    np.testing.assert_allclose(g.numpy(), 2 * A)
    assert len(foreground) == 1 and foreground[0].calls == 1


def test_without_background_compiles_the_runtime_compiles_at_once(compiles, monkeypatch):
    monkeypatch.setattr(runtime.config, "async_compile", False)
    built = []
    monkeypatch.setattr(serving, "compile_function", lambda fn: built.append(StubCompiled(fn)) or built[-1])
    for n_built in [0, 1, 1]:
        (g,) = grads_of(gt.sin, [A])
        np.testing.assert_allclose(g.numpy(), np.cos(A))
        assert len(built) == n_built
    assert built[0].calls == 2
    assert compiles == []  # nothing went to the background
    assert counts() == (2, 1)


def test_jacobian_rows_warm_the_plan(compiles):
    """With the loop (no pfor) every row is a run: two rows compile from the second."""
    x = gt.constant(np.array([0.3, -0.7]))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gt.exp(x)
    jac = tape.jacobian(y, x, experimental_use_pfor=False)
    np.testing.assert_allclose(jac.numpy(), np.diag(np.exp(x.numpy())))
    assert len(compiles) == 1


def test_a_vectorized_jacobian_is_one_run_of_one_batched_plan(compiles):
    """All rows in one run: the second Jacobian of the same structure compiles it, and its
    function takes only the leaf: the basis is made inside (backward_jacobian.py)."""
    for step in range(2):
        x = gt.constant(np.array([0.3, -0.7, 0.1]) + step)
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.exp(x)
        np.testing.assert_allclose(tape.jacobian(y, x).numpy(), np.diag(np.exp(x.numpy())))
    assert len(compiles) == 1
    fn, _ = compiles[0]
    assert [v.type.shape for v in fn.invars] == [(3,)]


def test_threads_share_plans_and_get_their_own_gradients():
    def train(seed):
        rng = np.random.default_rng(seed)
        w = gt.Variable(rng.normal(size=(3, 2)))
        b = gt.Variable(np.zeros(2))
        for _ in range(10):
            x, t = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
            with gt.GradientTape() as tape:
                loss = mlp_loss(w, b, x, t)
            gw, gb = tape.gradient(loss, [w, b])
            dw, db = mlp_grads_by_hand(w.numpy(), b.numpy(), x, t)
            np.testing.assert_allclose(gw.numpy(), dw, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(gb.numpy(), db, rtol=1e-12, atol=1e-14)
            w.assign_sub(0.1 * gw)
            b.assign_sub(0.1 * gb)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(train, range(4)))
    hits, misses = counts()
    assert hits + misses == 40
    assert 1 <= misses <= 4  # threads missing at the same moment each build one
    assert backward_cache.cache_info()["entries"] == 1


# --- the bound and the counters --------------------------------------------------------------


def test_least_recently_used_plans_are_dropped():
    previous = backward_cache.set_max_plans(2)
    try:
        fs = [gt.sin, gt.cos, gt.exp]
        for f in fs:
            grads_of(f, [A])
        assert backward_cache.cache_info()["entries"] == 2
        grads_of(gt.exp, [A])  # the most recent: kept
        assert counts() == (1, 3)
        grads_of(gt.sin, [A])  # the oldest: dropped
        assert counts() == (1, 4)
    finally:
        backward_cache.set_max_plans(previous)


def test_max_plans_zero_turns_the_cache_off():
    previous = backward_cache.set_max_plans(0)
    try:
        for _ in range(2):
            (g,) = grads_of(gt.sin, [A])
            np.testing.assert_allclose(g.numpy(), np.cos(A))
        info = backward_cache.cache_info()
        assert (info["hits"], info["misses"], info["uncached"], info["entries"]) == (0, 0, 2, 0)
    finally:
        backward_cache.set_max_plans(previous)
    with pytest.raises(ValueError, match="must be >= 0, got -1"):
        backward_cache.set_max_plans(-1)


def test_cache_info_and_clear_cache():
    grads_of(gt.sin, [A])
    grads_of(gt.sin, [A])
    info = backward_cache.cache_info()
    assert info == {
        "hits": 1, "misses": 1, "uncached": 0, "replayed": 0, "entries": 1, "max_plans": 256,
    }
    backward_cache.clear_cache()
    assert backward_cache.cache_info()["entries"] == 0
    assert counts() == (0, 0)


def test_alternating_structures_each_get_their_own_plan():
    # The cache compares the most recently used key first; alternating questions
    # must not be served the other one's plan.
    x = gt.constant(A)

    def grad(f):
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.sum(f(x))
        return tape.gradient(y, x).numpy()

    for _ in range(3):
        np.testing.assert_allclose(grad(gt.sin), np.cos(A), rtol=1e-14)
        np.testing.assert_allclose(grad(gt.exp), np.exp(A), rtol=1e-14)
    assert counts() == (4, 2)


def test_the_most_recent_plan_is_dropped_with_the_cache():
    x = gt.constant(A)

    def grad():
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.sum(x * x)
        return tape.gradient(y, x).numpy()

    grad()
    previous = backward_cache.set_max_plans(0)
    try:
        np.testing.assert_allclose(grad(), 2 * A)
        info = backward_cache.cache_info()
        assert (info["hits"], info["misses"], info["uncached"], info["entries"]) == (0, 1, 1, 0)
    finally:
        backward_cache.set_max_plans(previous)
    np.testing.assert_allclose(grad(), 2 * A)
    assert counts() == (0, 2)  # built again: the cache forgot it, the shortcut too


def test_the_structure_key_is_one_tuple_until_more_is_recorded_and_hashed_once():
    # A first gradient looks its structure up twice (cached_plan, then lookup): the same tuple,
    # hashed once (backward_cache._structure_hash).
    x = gt.Variable(A)
    with gt.GradientTape(persistent=True) as tape:
        y = gt.sum(gt.tanh(x) * B)
        rec = tape._tape
        first = rec.structure_key()
        assert rec.structure_key() is first and first == tuple(rec.structure)
        z = y * 2.0
        longer = rec.structure_key()
        assert longer is not first and len(longer) == len(first) + 1 and longer == tuple(rec.structure)
    (g,) = tape.gradient(z, [x])
    assert backward_cache._hashed[0] is longer and backward_cache._hashed[1] == hash(longer)
    np.testing.assert_allclose(g.numpy(), 2.0 * B * (1.0 - np.tanh(A) ** 2), rtol=1e-14)
    with gt.GradientTape() as tape:  # another recording of the same structure: a hit
        z = gt.sum(gt.tanh(x) * B) * 2.0
    hits, misses = counts()
    (g_again,) = tape.gradient(z, [x])
    assert counts() == (hits + 1, misses)
    np.testing.assert_array_equal(g_again.numpy(), g.numpy())
