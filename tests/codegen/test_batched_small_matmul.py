"""Batched small matrix products, (b, k, k) @ (b, k, m) with k, m from 1 to 6: one loop nest
over the whole batch (no BLAS call per point: each product is below BLAS_MIN_MNK), equal to
np.matmul for both float dtypes, odd sizes, views that are not contiguous and batches of 0
and 1 points; and the forward-mode Jacobian whose tangents make that product."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.codegen import contract as contract_lowering
from gradtape.ir import ops

from .lower_helpers import assert_matches, compiled

SHAPES = [(0, 3, 4), (1, 2, 2), (1, 5, 3), (7, 3, 3), (33, 4, 6), (1001, 6, 5), (64, 1, 6)]  # (b, k, m)


def _matmul_fn(a_shape, x_shape, dtype, a_perm=None):
    b = ir.Builder()
    a, x = b.input(ir.TensorType(a_shape, dtype)), b.input(ir.TensorType(x_shape, dtype))
    aa = a if a_perm is None else ops.transpose(a, a_perm)
    return b.build([a, x], [ops.contract(aa, x, "bij,bjk->bik")])


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("b, k, m", SHAPES)
def test_batched_small_products_are_one_loop_nest_equal_to_matmul(b, k, m, dtype):
    rng = np.random.default_rng(b * 100 + k * 10 + m)
    a = rng.standard_normal((b, k, k)).astype(dtype)
    x = rng.standard_normal((b, k, m)).astype(dtype)
    assert k * k * m < contract_lowering.BLAS_MIN_MNK
    fn = _matmul_fn(a.shape, x.shape, dtype)
    (got,) = compiled(fn)(a, x)
    assert_matches(got, np.matmul(a, x), what=f"{b} x ({k},{k})@({k},{m})")
    assert "cblas" not in str(compiled(fn).lowered.module)
    # A read transposed in place (a view of the operand with permuted strides)
    fn_t = _matmul_fn(a.shape, x.shape, dtype, a_perm=(0, 2, 1))
    (got_t,) = compiled(fn_t)(a, x)
    assert_matches(got_t, np.matmul(np.swapaxes(a, 1, 2), x), what="A transposed")


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: np.dtype(d).name)
def test_staged_batched_products_of_views_that_are_not_contiguous(dtype):
    rng = np.random.default_rng(3)
    big_a = rng.standard_normal((40, 7, 9)).astype(dtype)
    big_x = rng.standard_normal((5, 40, 8)).astype(dtype)
    a = big_a[::3, 1:5, 2:6]                      # (14, 4, 4), strided in every axis
    x = np.swapaxes(big_x[:4, ::3, :], 0, 1)      # (14, 4, 8) transposed view
    x = x[:, :, ::2]                              # (14, 4, 4) every other column
    assert not a.flags.c_contiguous and not x.flags.c_contiguous
    staged = gt.differentiable(lambda a, x: a @ x)
    got = np.asarray(staged(a, x))
    assert_matches(got, np.matmul(a, x), what="strided views")
    for b in (0, 1):
        got = np.asarray(staged(a[:b], x[:b]))
        assert got.shape == (b, 4, 4)
        assert_matches(got, np.matmul(a[:b], x[:b]), what=f"b={b}")


@pytest.mark.parametrize("k, n_params", [(3, 4), (2, 5), (5, 3)])
def test_forward_jacobian_of_per_point_products(k, n_params):
    # r(theta)[p] = A(theta) @ x_p(theta): the tangents form (b, k, k) @ (b, k, n_params)
    rng = np.random.default_rng(k * 10 + n_params)
    b = 57
    base = rng.standard_normal((b, k, k))
    basis = rng.standard_normal((n_params, k, k))
    w = rng.standard_normal((b, k))
    pick = rng.standard_normal((k, n_params))
    theta = rng.standard_normal(n_params)

    def r(np_, t):
        a = base + np_.einsum("q,qij->ij", t, basis)
        return np_.einsum("pij,pj->pi", a, w * (pick @ t))

    got = np.asarray(gt.jacfwd(lambda t: r(gt, t))(theta))
    a = base + np.einsum("q,qij->ij", theta, basis)
    want = np.matmul(a, w[:, :, None] * pick[None]) + np.einsum("qij,pj->piq", basis, w * (pick @ theta))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    rev = np.asarray(gt.jacrev(lambda t: r(gt, t))(theta))
    np.testing.assert_allclose(got, rev, rtol=1e-12, atol=1e-12)
