"""numpy.linalg.eig and eigvals beyond the table of complex_specs.py: NumPy's result
dtypes (real for real input with real eigenvalues, where the values are known), the
errors, and what the derivatives do at repeated eigenvalues (docs/complex.md)."""
import numpy as np
import pytest

import gradtape as gt

ROTATION = np.array([[0.0, -2.0], [1.0, 0.5]])         # a conjugate pair of eigenvalues
TRIANGULAR = np.array([[2.0, 1.0], [0.0, 3.0]])        # real eigenvalues


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("a", [ROTATION, TRIANGULAR], ids=["complex_pair", "real_values"])
def test_eager_dtypes_and_values_are_numpys(a, dtype):
    a = a.astype(dtype)
    want_w, want_v = np.linalg.eig(a)
    got_w, got_v = np.linalg.eig(gt.constant(a))
    assert got_w.dtype == want_w.dtype and got_v.dtype == want_v.dtype
    tol = 1e-6 if np.finfo(dtype).bits == 32 else 1e-14
    np.testing.assert_allclose(got_w.numpy(), want_w, rtol=tol, atol=tol)
    np.testing.assert_allclose(got_v.numpy(), want_v, rtol=tol, atol=tol)
    assert np.linalg.eigvals(gt.constant(a)).dtype == np.linalg.eigvals(a).dtype


def test_staged_results_of_real_input_stay_complex():
    staged = gt.differentiable(lambda a: np.linalg.eigvals(a))
    got = staged(TRIANGULAR)
    assert got.dtype == np.complex128  # the values are unknown while tracing (JAX's dtype)
    np.testing.assert_allclose(got, np.linalg.eigvals(TRIANGULAR), rtol=1e-14)
    assert gt.vmap(np.linalg.eigvals)(np.stack([TRIANGULAR.astype(np.float32)] * 2)).dtype == np.complex64


def test_non_finite_input_raises_linalg_error():
    with pytest.raises(np.linalg.LinAlgError, match="numpy.linalg.eig: Eigenvalues did not converge"):
        np.linalg.eig(gt.constant(np.array([[1.0, np.inf], [0.0, 1.0]])))
    with pytest.raises(np.linalg.LinAlgError, match="numpy.linalg.eigvals"):
        gt.differentiable(np.linalg.eigvals)(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        np.linalg.eig(gt.constant(np.ones((2, 3))))


def test_repeated_eigenvalues_symmetric_losses_are_finite_and_right_vector_losses_nan():
    a = np.diag([2.0, 2.0, 5.0]) + 0j
    # the sum (trace) and the product (det) of the eigenvalues are differentiable: I and det(a) inv(a)^T
    np.testing.assert_allclose(gt.grad(lambda m: np.real(np.sum(np.linalg.eigvals(m))))(a), np.eye(3), atol=1e-14)
    np.testing.assert_allclose(gt.grad(lambda m: np.real(np.prod(np.linalg.eigvals(m))))(a),
                               np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-14, atol=1e-14)
    weights = np.arange(9.0).reshape(3, 3)
    g = gt.grad(lambda m: np.real(np.sum(np.linalg.eig(m).eigenvectors * weights)))(a)
    assert np.isnan(g).all()  # it reads how the repeated pair's eigenvectors turn: no derivative, NaN
    np.testing.assert_allclose(  # a loss of the other eigenvector does not couple the pair: finite
        gt.grad(lambda m: np.sum(np.abs(np.linalg.eig(m).eigenvectors[:, 2]) ** 2 * weights[0]))(a), 0, atol=1e-14)


def test_roots_follow_numpy_and_strip_zeros_where_known():
    p = np.array([0.0, 1.0, -3.0, 2.0, 0.0])
    np.testing.assert_allclose(np.sort(np.roots(gt.constant(p)).numpy()), np.sort(np.roots(p)), atol=1e-14)
    assert np.roots(gt.constant(p)).dtype == np.roots(p).dtype == np.float64
    with pytest.raises(np.linalg.LinAlgError):  # staged: a leading zero makes the companion matrix infinite
        gt.differentiable(np.roots)(p)
    # d(root)/d(coefficients) of x^2 - 3x + 2 = (x - 1)(x - 2): -r^(2-k) / p'(r) per coefficient k
    roots_grad = gt.jacobian(lambda c: np.real(np.roots(c)))(np.array([1.0, -3.0, 2.0]))
    r = np.real(np.roots(np.array([1.0, -3.0, 2.0])))
    want = np.stack([-(ri ** np.arange(2, -1, -1)) / (2 * ri - 3) for ri in r])
    np.testing.assert_allclose(roots_grad, want, rtol=1e-12)
