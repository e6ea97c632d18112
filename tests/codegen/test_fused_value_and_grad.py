"""value_and_grad of an elementwise sum runs its sum and its gradient in one split loop
(codegen/parallel_fill_reduce.py), and other split steps over the same data unit by unit
together (parallel_together.py): right values against NumPy and the unfused functions, the same
bits for 1, 2 and 3 threads, and a dynamic version's bits equal to the specialized version's."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape.codegen.lowering import SubFunction
from gradtape.codegen.parallel import UNIT_ELEMENTS, ParallelStep

from .parallel_helpers import restore_settings, rosen, rosen_numpy, same_bits_for_any_thread_count  # noqa: F401

U = UNIT_ELEMENTS
SIZES = [U + 1, 2 * U, 2 * U + 1, 3 * U + 7, 7 * U + 5]


def _split_kinds(f, *args) -> list:
    steps = SubFunction(gt.make_ir(f, *args)).ctx.steps
    return [type(s.split).__name__ for s in steps if isinstance(s, ParallelStep)]


def sin_sum(x):
    return gt.sum(gt.sin(x) * x)


def sin_sum_numpy(x):
    return np.sum(np.sin(x) * x), np.cos(x) * x + np.sin(x)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("f, reference", [(rosen, rosen_numpy), (sin_sum, sin_sum_numpy)], ids=["rosen", "sin"])
def test_value_and_grad_is_one_loop_and_right(f, reference, n):
    x = np.random.default_rng(n).uniform(-1, 1, n)
    vg = gt.value_and_grad(f, dynamic=False)
    value, grad = same_bits_for_any_thread_count(vg, x)
    want_value, want_grad = reference(x)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    # The unfused sum (a split reduction of its own) adds in another order: equal within rounding.
    np.testing.assert_allclose(value, gt.differentiable(f, dynamic=False)(x), rtol=1e-13)
    np.testing.assert_array_equal(grad, gt.grad(f, dynamic=False)(x))  # elementwise: the same bits
    if n >= 2 * U:  # (below, the gradient's fill is too short to split; the sum alone may be)
        assert _split_kinds(gt.value_and_grad(f), x) == ["_FillAndReduce"]


def test_float32_value_and_grad_sums_in_float64():
    x = np.random.default_rng(1).uniform(-1, 1, 3 * U + 1).astype(np.float32)
    value, grad = same_bits_for_any_thread_count(gt.value_and_grad(sin_sum, dynamic=False), x)
    terms = (np.sin(x) * x).astype(np.float64)
    assert value.dtype == np.float32 and grad.dtype == np.float32
    np.testing.assert_allclose(value, terms.sum(), rtol=1e-6)
    np.testing.assert_allclose(grad, np.cos(x) * x + np.sin(x), rtol=1e-6, atol=1e-6)


def test_dynamic_value_and_grad_is_fused_and_the_same_for_any_thread_count():
    # Its gradient is the specialized version's, bit for bit (elementwise); its value adds in
    # units of its own (the specialized version leaves short loops whole): equal within rounding.
    rng = np.random.default_rng(2)
    vg = gt.value_and_grad(rosen)
    for n in (40_000, 50_000):  # the second size makes the dynamic version
        vg(rng.uniform(-1, 1, n))
    for n in [3, 1000] + SIZES:
        x = rng.uniform(-1, 1, n)
        want_value, want_grad = gt.value_and_grad(rosen, dynamic=False)(x)
        value, grad = same_bits_for_any_thread_count(vg, x)
        np.testing.assert_array_equal(grad, want_grad)
        np.testing.assert_allclose(value, want_value, rtol=1e-13)
        np.testing.assert_allclose(value, rosen_numpy(x)[0], rtol=1e-12)
    assert vg.cache_info().compiles == 2


def test_an_expensive_value_the_sum_and_gradient_share_is_computed_in_their_loop():
    # sin(x) is read by the sum and by the gradient: inlined into their one loop, never stored.
    x = np.random.default_rng(5).uniform(-1, 1, 4 * U)
    lowered = SubFunction(gt.make_ir(gt.value_and_grad(sin_sum), x))
    assert len(lowered.ctx.steps) == 1 and lowered.arena_bytes <= 64  # the 4 partial sums alone
    # Not when the gradient needs the sum (a softmax's normalization): then exp(x) is stored.
    def softmax_like(x):
        e = gt.exp(x)
        return e / gt.sum(e)

    assert SubFunction(gt.make_ir(softmax_like, x)).arena_bytes >= 8 * x.size


def test_row_sums_and_a_map_of_the_same_matrix_run_unit_by_unit_together():
    # Rows of 16 elements: units of 1024 rows for the row sums, of 16,384 elements for the map.
    x = np.random.default_rng(3).normal(size=(3 * U // 16 + 5, 16))
    f = lambda x: (gt.sum(gt.exp(x), axis=1), gt.exp(x) * 2.0)  # noqa: E731
    assert _split_kinds(f, x) == ["_TogetherSplit"]
    sums, doubled = same_bits_for_any_thread_count(gt.differentiable(f, dynamic=False), x)
    np.testing.assert_allclose(sums, np.exp(x).sum(axis=1), rtol=1e-14)
    np.testing.assert_allclose(doubled, np.exp(x) * 2.0, rtol=1e-15)


def test_steps_that_depend_on_each_other_are_not_merged():
    # The map reads the sum: it cannot run in the sum's units.
    x = np.random.default_rng(4).normal(size=3 * U)
    f = lambda x: gt.exp(x) / gt.sum(gt.exp(x))  # noqa: E731
    assert "_TogetherSplit" not in _split_kinds(f, x) and "_FillAndReduce" not in _split_kinds(f, x)
    (got,) = same_bits_for_any_thread_count(gt.differentiable(f, dynamic=False), x)
    np.testing.assert_allclose(got, np.exp(x) / np.exp(x).sum(), rtol=1e-13)

