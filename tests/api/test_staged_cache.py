"""The signature cache of staged functions: hits, misses, traces, and what
makes a new signature (shape, dtype, rank, structure, static values,
transform, code generator version)."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import codegen


def counting(f):
    """f, and a list that grows by one each time f runs (i.e. is traced)."""
    runs = []

    def wrapped(*args):
        runs.append(1)
        return f(*args)

    return wrapped, runs


@pytest.mark.native
def test_same_signature_hits_without_tracing():
    fun, runs = counting(lambda x: gt.sum(x * x))
    f = gt.differentiable(fun)
    for _ in range(3):
        assert f(np.array([1.0, 2.0])) == 5.0
    assert len(runs) == 1
    info = f.cache_info()
    assert (info.hits, info.misses, info.traces, info.compiles) == (2, 1, 1, 1)


def test_new_shape_traces_once_more():
    fun, runs = counting(lambda x: gt.sum(x))
    f = gt.differentiable(fun)
    f(np.ones(2))
    f(np.ones(3))
    f(np.ones(3))
    f(np.ones(2))
    assert len(runs) == 2
    assert f.cache_info()[:3] == (2, 2, 2)


def test_dtype_rank_and_python_scalars_key_the_cache():
    fun, runs = counting(lambda x: x * 2)
    f = gt.differentiable(fun)
    assert f(np.ones(2)).dtype == np.float64
    assert f(np.ones(2, np.float32)).dtype == np.float32  # new dtype: retrace, right answer
    assert f(np.ones((1, 2))).shape == (1, 2)  # new rank
    assert f(np.array(3)).dtype == np.int64
    # A Python int or float is a weak scalar (it takes the dtype of the arrays it meets), so it
    # has its own entry, apart from NumPy's int64 and float64 scalars.
    assert f(3) == 6 and f(3).dtype == np.int64
    assert f(1.5) == 3.0 and f(2.5) == 5.0 and f(np.float64(2.0)) == 4.0
    assert len(runs) == 7


def test_pytree_structure_is_part_of_the_signature():
    fun, runs = counting(lambda t: gt.sum(tree_sum(t)))
    f = gt.differentiable(fun)
    a = np.ones(2)
    assert f([a, a]) == 4.0
    assert f((a, a)) == 4.0  # tuple, not list
    assert f({"x": a, "y": a}) == 4.0
    assert f({"x": a, "z": a}) == 4.0  # other keys
    assert f([a, a]) == 4.0
    assert f({"y": a, "x": a}) == 4.0  # same keys, other insertion order: same structure
    assert len(runs) == 4


def tree_sum(t):
    leaves = gt.tracer.tree.flatten(t)
    total = leaves[0]
    for leaf in leaves[1:]:
        total = total + leaf
    return total


def test_static_argument_values_key_the_cache():
    fun, runs = counting(lambda x, n: x * n)
    f = gt.differentiable(fun, static_argnums=(1,))
    assert f(2.0, 3) == 6.0
    assert f(2.0, 3) == 6.0
    assert f(2.0, 4) == 8.0
    assert f(2.0, 3.0) == 6.0  # 3.0 == 3, but another type: its own trace
    assert len(runs) == 3
    assert f.cache_info()[:3] == (1, 3, 3)


def test_static_values_change_the_program():
    f = gt.differentiable(lambda x, mode: gt.sin(x) if mode == "sin" else gt.cos(x), static_argnums=1)
    np.testing.assert_allclose(f(0.5, "sin"), np.sin(0.5))
    np.testing.assert_allclose(f(0.5, "cos"), np.cos(0.5))
    assert f.cache_info().traces == 2


def test_transforms_of_one_function_share_traces_but_not_entries():
    fun, runs = counting(lambda x: gt.sum(gt.exp(x)))
    f = gt.differentiable(fun)
    x = np.array([0.0, 1.0])
    f(x)
    f.grad(x)
    f.value_and_grad(x)
    f.grad(x)
    assert len(runs) == 1
    assert f.cache_info()[:2] == (0, 1)
    assert f.grad.cache_info()[:2] == (1, 1)
    assert f.value_and_grad.cache_info()[:2] == (0, 1)


def test_codegen_version_is_in_the_key(monkeypatch):
    fun, runs = counting(lambda x: x + 1.0)
    f = gt.differentiable(fun)
    f(1.0)
    monkeypatch.setattr(codegen, "CODEGEN_VERSION", codegen.CODEGEN_VERSION + 1000)
    f(1.0)
    assert f.cache_info().misses == 2
    assert len(runs) == 1  # the trace is independent of code generation; the compile is not


def test_tensor_and_array_arguments_share_an_entry():
    fun, runs = counting(lambda x: x * 3.0)
    f = gt.differentiable(fun)
    f(np.ones(2))
    f(gt.constant(np.ones(2)))
    assert len(runs) == 1
    assert f.cache_info().hits == 1


def test_nested_use_counts_in_the_inner_cache_and_compiles_nothing():
    inner = gt.grad(lambda x: gt.sum(x ** 2))
    outer = gt.differentiable(lambda x: inner(x) * 2.0)
    outer(np.ones(2))
    outer(np.ones(2))
    assert inner.cache_info()[:4] == (0, 1, 1, 0)
    assert outer.cache_info()[:2] == (1, 1)


def test_clear_cache_retraces():
    fun, runs = counting(lambda x: x)
    f = gt.differentiable(fun)
    f(1.0)
    f.clear_cache()
    f(1.0)
    assert len(runs) == 2


def test_failed_trace_leaves_no_entry():
    calls = []

    def fun(x):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return x

    f = gt.differentiable(fun)
    with pytest.raises(RuntimeError, match="boom"):
        f(1.0)
    assert f(1.0) == 1.0
