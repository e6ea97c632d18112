"""numpy.linalg.eigh and eigvalsh with UPLO='U' and 'L': NumPy's eigenvectors, signs included
(each is its own LAPACK call; 'U' computed as 'L' on A^T flipped the signs of most), eager, staged
and in native code, in both float dtypes; derivatives see only the triangle read."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.runtime import compile_function
from gradtape.testing import check_grads

TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=1e-4, atol=1e-5)}


def _symmetric_stack(dtype, count=50, n=4):
    a = np.random.default_rng(25).standard_normal((count, n, n))
    return (a + np.swapaxes(a, -1, -2)).astype(dtype)


def _packed(t, uplo):
    w, v = np.linalg.eigh(t, UPLO=uplo)
    return gt.concatenate([w[..., None, :], v], axis=-2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("uplo", ["U", "L"])
def test_eigenvectors_are_numpys_signs_included(uplo, dtype):
    a = _symmetric_stack(dtype)
    w, v = np.linalg.eigh(a, UPLO=uplo)
    want = np.concatenate([w[..., None, :], v], axis=-2)
    eager = np.linalg.eigh(gt.constant(a), UPLO=uplo)
    assert eager.eigenvectors.dtype == dtype
    np.testing.assert_allclose(eager.eigenvectors.numpy(), v, **TOL[dtype])
    np.testing.assert_allclose(eager.eigenvalues.numpy(), w, **TOL[dtype])
    staged = gt.differentiable(lambda t: _packed(t, uplo))
    for _ in range(3):          # interpreted first, then native (served.py's policy)
        np.testing.assert_allclose(np.asarray(staged(a)), want, **TOL[dtype])
    native = compile_function(gt.make_ir(lambda t: _packed(t, uplo), a))
    assert native.native, native.fallback_reason
    np.testing.assert_allclose(native(a)[0], want, **TOL[dtype])
    np.testing.assert_allclose(np.linalg.eigvalsh(gt.constant(a), UPLO=uplo).numpy(), w, **TOL[dtype])


def _loss(eigh):
    def f(a):
        w, v = eigh(a)
        return (w * np.array([1.0, -2.0, 0.5])).sum() + (v ** 2 * np.arange(9.0).reshape(3, 3)).sum()
    return f


def _central_differences(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[i] = eps
        g[i] = (f(a + step) - f(a - step)) / (2 * eps)
    return g


@pytest.mark.parametrize("uplo", ["U", "L"])
def test_gradient_of_a_non_symmetric_input_lives_in_the_triangle_read(uplo):
    a = np.array([[2.0, 0.7, -1.2], [5.0, -1.0, 0.3], [-4.0, 9.0, 0.5]])   # triangles disagree
    want = _central_differences(_loss(lambda t: np.linalg.eigh(t, UPLO=uplo)), a)
    other = "L" if uplo == "U" else "U"
    unread = np.tril(np.ones((3, 3)), -1) if uplo == "U" else np.triu(np.ones((3, 3)), 1)
    assert np.all(want[unread == 1] == 0) and np.abs(want).max() > 0.1
    x = gt.constant(a)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = _loss(lambda t: np.linalg.eigh(t, UPLO=uplo))(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), want, rtol=1e-6, atol=1e-8)
    staged = gt.grad(_loss(lambda t: np.linalg.eigh(t, UPLO=uplo)))(a)
    np.testing.assert_allclose(staged, want, rtol=1e-6, atol=1e-8)
    assert np.all(staged[unread == 1] == 0)
    assert not np.allclose(staged, gt.grad(_loss(lambda t: np.linalg.eigh(t, UPLO=other)))(a))
    check_grads(_loss(lambda t: np.linalg.eigh(t, UPLO=uplo)), [a], order=2)


def test_forward_mode_on_the_tape_reads_the_upper_triangle():
    a = np.array([[2.0, 0.7, -1.2], [5.0, -1.0, 0.3], [-4.0, 9.0, 0.5]])
    t = np.random.default_rng(2).standard_normal((3, 3))
    x = gt.constant(a)
    with gt.ForwardAccumulator(x, t) as acc:
        y = _loss(lambda m: np.linalg.eigh(m, UPLO="U"))(x)
    f = _loss(lambda m: np.linalg.eigh(m, UPLO="U"))
    eps = 1e-6
    want = (f(a + eps * t) - f(a - eps * t)) / (2 * eps)
    np.testing.assert_allclose(acc.jvp(y).numpy(), want, rtol=1e-6)


def test_a_bad_uplo_names_the_function():
    with pytest.raises(ValueError, match=r"numpy\.linalg\.eigvalsh: UPLO must be 'L' or 'U', got 'u'"):
        np.linalg.eigvalsh(gt.constant(np.eye(2)), UPLO="u")


@pytest.mark.parametrize("uplo", ["U", "L"])
def test_eigvalsh_is_numpys_bit_for_bit_not_eighs_values(uplo):
    # NumPy computes eigvalsh without the eigenvectors (LAPACK's JOBZ='N'), whose values differ
    # from eigh's in the last bits; gradtape calls it the same way.
    a = _symmetric_stack(np.float64, count=20, n=5)
    want = np.linalg.eigvalsh(a, UPLO=uplo)
    assert not np.array_equal(want, np.linalg.eigh(a, UPLO=uplo)[0])
    np.testing.assert_array_equal(np.linalg.eigvalsh(gt.constant(a), UPLO=uplo).numpy(), want)
    native = compile_function(gt.make_ir(lambda t: np.linalg.eigvalsh(t, UPLO=uplo), a))
    assert native.native, native.fallback_reason
    np.testing.assert_array_equal(native(a)[0], want)
    g = gt.grad(lambda t: gt.sum(np.linalg.eigvalsh(t, UPLO=uplo) * np.arange(1.0, 6.0)))(a[0])
    w, v = np.linalg.eigh(a[0], UPLO=uplo)
    hand = (v * np.arange(1.0, 6.0)) @ v.T              # V diag(c) V^T, on the triangle read
    hand = np.triu(hand) + np.triu(hand, 1) if uplo == "U" else np.tril(hand) + np.tril(hand, -1)
    np.testing.assert_allclose(g, hand, rtol=1e-10, atol=1e-12)
