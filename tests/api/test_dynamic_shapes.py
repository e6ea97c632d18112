"""Dynamic shapes: one compile for many sizes, the same numbers as per-size compiles.

Each test runs a staged function over many sizes of one dimension and
checks every result against the same function compiled per size
(dynamic=False) and against NumPy. Products small enough for the
specialized code's loop nests go to BLAS in the dynamic version (its sizes
are taken as large), so those agree to rounding; everything else is equal
bit for bit.
"""
import logging

import numpy as np
import pytest

import gradtape as gt
from gradtape.staging.dynamic_versions import INTERPRETED_RUNS
from gradtape.codegen.dynamic_generalize import generalize

pytestmark = pytest.mark.native

SIZES = [64, 100, 2, 3, 7, 31, 64, 129, 250, 1, 0, 17]


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = gt.tanh(x @ w1 + b1)
    return gt.mean((h @ w2 + b2 - y) ** 2)


def mlp_numpy(params, x, y):
    """The loss and its gradient, by hand."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    r = h @ w2 + b2 - y
    dr = 2 * r / r.size
    dh = dr @ w2.T * (1 - h * h)
    return np.mean(r ** 2), (x.T @ dh, dh.sum(0), h.T @ dr, dr.sum(0))


def _params(rng):
    return (rng.normal(size=(5, 8)), rng.normal(size=8), rng.normal(size=(8, 3)), rng.normal(size=3))


def _flat(result):
    value, grads = result
    return [np.asarray(value), *grads]


@pytest.mark.filterwarnings("ignore::gradtape.staging.compile_log.RetraceWarning")  # the specialized one's
def test_mlp_value_and_grad_many_batch_sizes_few_compiles():
    rng = np.random.default_rng(0)
    params = _params(rng)
    dynamic = gt.value_and_grad(mlp_loss)
    specialized = gt.value_and_grad(mlp_loss, dynamic=False)
    for n in SIZES:
        x, y = rng.normal(size=(n, 5)), rng.normal(size=(n, 3))
        got, want = _flat(dynamic(params, x, y)), _flat(specialized(params, x, y))
        if n == 0:  # the mean of nothing: NaN, and zero gradients
            assert np.isnan(got[0]) and np.isnan(want[0])
            for g, w in zip(got[1:], want[1:]):
                np.testing.assert_array_equal(g, w)
            continue
        value, grads = mlp_numpy(params, x, y)
        for g, w, r in zip(got, want, [value, *grads]):
            assert g.shape == w.shape == np.shape(r)
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-14)
    distinct = len(set(SIZES))
    assert specialized.cache_info().compiles == distinct
    # the first size, the dynamic version, and sizes 0 and 1 (specialized: N >= 2 only)
    assert dynamic.cache_info().compiles == 4
    assert dynamic.cache_info().traces == distinct


def test_elementwise_gradient_is_bit_for_bit_the_specialized_one():
    f = lambda x: gt.sum(gt.sin(x) * x + gt.exp(-x * x))  # noqa: E731
    dynamic, specialized = gt.grad(f), gt.grad(f, dynamic=False)
    rng = np.random.default_rng(1)
    for n in [1000, 1500, 2, 3, 17, 4096, 10001]:
        x = rng.normal(size=n)
        got = dynamic(x)
        if n == 1500:  # the second size: interpreted while the dynamic version compiles, then that
            for _ in range(INTERPRETED_RUNS - 1):
                np.testing.assert_array_equal(dynamic(x), got)  # the interpreter still
            interpreted, got = got, dynamic(x)
            np.testing.assert_allclose(interpreted, got, rtol=1e-14, atol=1e-16)
        if n >= 1000:
            np.testing.assert_array_equal(got, specialized(x))
        else:  # a short loop of known length compiles to other vector code (libmvec's sin or not)
            np.testing.assert_allclose(got, specialized(x), rtol=1e-14, atol=1e-16)
        np.testing.assert_allclose(got, np.cos(x) * x + np.sin(x) - 2 * x * np.exp(-x * x), rtol=1e-13, atol=1e-15)
    assert dynamic.cache_info().compiles == 2


@pytest.mark.parametrize("axis", [0, 1, None])
def test_reductions_over_and_across_the_dynamic_axis(axis):
    def f(x, w):
        return gt.sum(gt.max(x * w, axis=axis)) + gt.mean(x, axis=axis).sum() + gt.sum(x ** 2)

    dynamic, specialized = gt.value_and_grad(f), gt.value_and_grad(f, dynamic=False)
    rng = np.random.default_rng(2)
    w = rng.normal(size=4)
    for n in [40, 60, 2, 5, 33]:
        x = rng.normal(size=(n, 4))
        (v, g), (v2, g2) = dynamic(x, w), specialized(x, w)
        ref = np.sum(np.max(x * w, axis=axis)) + np.mean(x, axis=axis).sum() + np.sum(x ** 2)
        np.testing.assert_allclose(v, v2, rtol=1e-14)
        np.testing.assert_allclose(v, ref, rtol=1e-12)
        np.testing.assert_allclose(g, g2, rtol=1e-13, atol=1e-15)
    assert dynamic.cache_info().compiles == 2


def test_broadcasting_and_an_outer_product_of_the_dynamic_size():
    def f(x, b):
        centered = x - gt.mean(x, axis=0)  # (N, 3) - (3,)
        gram = centered @ centered.T  # (N, N): sizes N**2
        return gt.sum(gt.tanh(gram)) + gt.sum(x[:, :, None] * b[None, None, :])

    dynamic, specialized = gt.grad(f), gt.grad(f, dynamic=False)
    rng = np.random.default_rng(3)
    b = rng.normal(size=2)
    for n in [20, 30, 2, 9, 41]:
        x = rng.normal(size=(n, 3))
        c = x - x.mean(0)
        t = 1 - np.tanh(c @ c.T) ** 2
        dc = (t + t.T) @ c
        ref = dc - dc.mean(0) + b.sum()
        np.testing.assert_allclose(dynamic(x, b), specialized(x, b), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(dynamic(x, b), ref, rtol=1e-10, atol=1e-12)
    assert dynamic.cache_info().compiles == 2


def test_a_size_the_program_depends_on_in_python_is_checked_at_each_size():
    def f(x):
        k = min(x.shape[0], 40)  # the same 40 at the first two sizes: not N
        return gt.sum(x[:k] ** 2)

    staged = gt.grad(f)
    for n in [64, 100, 300, 10, 3]:
        x = np.arange(float(n))
        expected = np.where(np.arange(n) < 40, 2 * x, 0.0)
        np.testing.assert_array_equal(staged(x), expected)
    # sizes 10 and 3 do not match the dynamic version (x[:10], x[:3]): compiled each
    assert staged.cache_info().compiles == 4


def test_control_flow_falls_back_to_specialized_versions(caplog):
    def f(x):
        return gt.cond(gt.sum(x) > 0, lambda v: gt.sum(v * v), lambda v: gt.sum(gt.sin(v)), x)

    staged = gt.grad(f)
    caplog.set_level(logging.INFO, logger="gradtape")
    for n in [10, 20, 30]:
        x = np.linspace(-1, 2, n)
        np.testing.assert_allclose(staged(x), 2 * x, rtol=1e-15)
    assert staged.cache_info().compiles == 3
    assert "no dynamic version of grad(f)" in caplog.text
    assert "control flow" in caplog.text


def test_two_sizes_changing_at_once_compile_per_shape():
    f = gt.differentiable(lambda x, y: gt.sum(x) * gt.sum(y))
    for n, m in [(10, 4), (20, 5), (30, 6)]:
        x, y = np.ones(n), np.ones(m)
        assert f(x, y) == n * m
    assert f.cache_info().compiles == 3


def test_dynamic_up_front_compiles_one_version_from_the_first_call(caplog):
    caplog.set_level(logging.INFO, logger="gradtape")
    staged = gt.value_and_grad(mlp_loss, dynamic={(1, 0), (2, 0)})
    rng = np.random.default_rng(4)
    params = _params(rng)
    for n in [50, 70, 90]:
        x, y = rng.normal(size=(n, 5)), rng.normal(size=(n, 3))
        value, grads = staged(params, x, y)
        ref_value, ref_grads = mlp_numpy(params, x, y)
        np.testing.assert_allclose(value, ref_value, rtol=1e-12)
        for g, r in zip(grads, ref_grads):
            np.testing.assert_allclose(g, r, rtol=1e-11, atol=1e-14)
    assert staged.cache_info().compiles == 1
    assert "compile value_and_grad(mlp_loss) dynamic for" in caplog.text
    assert "f64[N,5], f64[N,3]" in caplog.text
    assert "with its dynamic version at N=70 (no compile)" in caplog.text
    staged(params, rng.normal(size=(1, 5)), rng.normal(size=(1, 3)))
    assert "x: f64[1,5], y: f64[1,3]): N=1 (the dynamic version is for N >= 2)" in caplog.text


def test_dynamic_true_marks_the_batch_axis():
    staged = gt.differentiable(lambda w, x: gt.sum(gt.tanh(x @ w)), dynamic=True)
    rng = np.random.default_rng(5)
    w = rng.normal(size=(3, 2))
    for n in [6, 8, 11]:
        x = rng.normal(size=(n, 3))
        np.testing.assert_allclose(staged(w, x), np.tanh(x @ w).sum(), rtol=1e-13)
    assert staged.cache_info().compiles == 1
    assert staged.dynamic is True
    assert gt.grad(staged).dynamic is True


def test_dynamic_false_and_bad_policies():
    f = gt.differentiable(lambda x: gt.sum(x), dynamic=False)
    for n in [3, 4, 5]:
        assert f(np.ones(n)) == n
    assert f.cache_info().compiles == 3
    with pytest.raises(TypeError, match=r"differentiable\(<lambda>\): dynamic='batch' is not one of None"):
        gt.differentiable(lambda x: x, dynamic="batch")
    with pytest.raises(TypeError, match=r"needs at least one \(argnum, axis\) pair"):
        gt.grad(lambda x: x, dynamic=[(-1, 0)])


def test_generalize_finds_sizes_and_the_mean_count():
    def trace(n):
        rng = np.random.default_rng(0)
        x, y = rng.normal(size=(n, 5)), rng.normal(size=(n, 3))
        staged = gt.value_and_grad(mlp_loss, dynamic=False)
        staged(_params(rng), x, y)
        ((_, program),) = staged.programs()
        return program.fn

    sym = generalize(trace(64), 64, trace(100), 100)
    assert "f64[N,5]" in str(sym.fn) and "f64[N,3]" in str(sym.fn)
    # the mean's 3N and 1/(3N) are inputs computed per size
    assert [float(v) for v in sym.scalars(10)] == [30.0, 1 / 30]
    assert sym.matches(trace(37), 37)
    # from neighbouring sizes too, where an inexact form (0.333.../N) fits both by luck
    assert generalize(trace(64), 64, trace(65), 65).matches(trace(100), 100)
    assert not sym.matches(trace(1), 1)
    other = gt.make_ir(lambda x: gt.sum(x[:5]), np.ones(64))
    assert generalize(other, 64, gt.make_ir(lambda x: gt.sum(x[:6]), np.ones(100)), 100) is None


def test_slices_of_the_dynamic_axis_sizes_n_minus_one():
    def rosen(x):
        return gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    def rosen_grad(x):  # each term's derivative w.r.t. its left and its right element
        d = x[1:] - x[:-1] ** 2
        left, right = -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1]), 200.0 * d
        return np.concatenate([left, [0.0]]) + np.concatenate([[0.0], right])

    dynamic, specialized = gt.grad(rosen), gt.grad(rosen, dynamic=False)
    rng = np.random.default_rng(6)
    for n in [3000, 4000, 2, 3, 4, 5, 33, 5001]:
        x = rng.uniform(-1, 1, n)
        got = dynamic(x)
        np.testing.assert_allclose(got, specialized(x), rtol=1e-15, atol=1e-13)
        np.testing.assert_allclose(got, rosen_grad(x), rtol=1e-12, atol=1e-12)
    assert dynamic.cache_info().compiles == 2


def test_pickled_after_dynamic_sizes_keeps_policy_and_results():
    import pickle

    staged = gt.value_and_grad(mlp_loss, dynamic={(1, 0), (2, 0)})
    rng = np.random.default_rng(7)
    params = _params(rng)
    data = {n: (rng.normal(size=(n, 5)), rng.normal(size=(n, 3))) for n in (12, 20)}
    before = {n: _flat(staged(params, *xy)) for n, xy in data.items()}
    copy = pickle.loads(pickle.dumps(staged))
    assert copy.dynamic == frozenset({(1, 0), (2, 0)})
    for n, xy in data.items():  # the receiver compiles these sizes from their IR: equal to rounding
        for a, b in zip(_flat(copy(params, *xy)), before[n]):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_float32_and_a_size_used_as_a_value():
    def f(x):
        n = x.shape[0]
        return gt.sum(gt.tanh(x)) / n + gt.sum(x * x) * (n - 1)

    dynamic, specialized = gt.value_and_grad(f), gt.value_and_grad(f, dynamic=False)
    rng = np.random.default_rng(8)
    for n in [300, 500, 2, 7, 1000]:
        x = rng.normal(size=n).astype(np.float32)
        (v, g), (v2, g2) = dynamic(x), specialized(x)
        assert v.dtype == g.dtype == np.float32
        np.testing.assert_allclose(v, v2, rtol=1e-6)
        np.testing.assert_allclose(g, g2, rtol=1e-6, atol=1e-7)
        x64 = x.astype(np.float64)
        np.testing.assert_allclose(g, (1 - np.tanh(x64) ** 2) / n + 2 * x64 * (n - 1), rtol=1e-5, atol=1e-6)
    # at n = 2 the factor n - 1 is 1 and the optimizer drops it: another program, compiled for itself
    assert dynamic.cache_info().compiles == 3


def test_an_array_constant_of_the_size_falls_back():
    def f(x):
        return gt.sum(x * np.arange(x.shape[0], dtype=np.float64))

    staged = gt.grad(f)
    for n in [10, 20, 30]:
        np.testing.assert_array_equal(staged(np.ones(n)), np.arange(n, dtype=np.float64))
    assert staged.cache_info().compiles == 3
