"""numpy.linalg on Tensors: bad input raises NumPy's exceptions, naming the function and the
shape, on the tape, in staged functions and in native code; degenerate derivatives are NaN
(documented in docs/numpy.md), never a silent finite number; the tape and staged
gradients agree with hand-written ones."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.runtime import compile_function

L = gt.linalg
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
STACK = np.stack([np.eye(2), SINGULAR])   # matrix (1,) of the stack is singular
NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])  # symmetric, eigenvalues 3 and -1


def _compiled(f, *args):
    cf = compile_function(gt.make_ir(f, *args))
    assert cf.native, cf.fallback_reason
    return cf


@pytest.mark.parametrize("name,f,arg,message", [
    ("inv", np.linalg.inv, STACK, r"numpy\.linalg\.inv: singular matrix .*shape \(2, 2, 2\), matrix \(1,\) of the stack"),
    ("solve", lambda a: np.linalg.solve(a, np.ones(2)), SINGULAR, r"numpy\.linalg\.solve: singular matrix .*shape \(2, 2\)"),
    ("cholesky", np.linalg.cholesky, NOT_PD, r"numpy\.linalg\.cholesky: matrix not positive definite .*shape \(2, 2\)"),
])
def test_singular_and_not_positive_definite_raise_linalgerror_in_every_mode(name, f, arg, message):
    with pytest.raises(np.linalg.LinAlgError, match=message):          # eager
        f(gt.constant(arg))
    x = gt.constant(arg)
    with gt.GradientTape() as tape, pytest.raises(np.linalg.LinAlgError, match=message):  # on a tape
        tape.watch(x)
        f(x)
    with pytest.raises(np.linalg.LinAlgError, match=message):          # staged (native, or interpreted first)
        gt.differentiable(lambda a: gt.sum(f(a)))(arg)
    with pytest.raises(np.linalg.LinAlgError, match=message):          # native code, LAPACK's info != 0
        _compiled(f, arg)(arg)


def test_native_code_recovers_after_a_failure():
    cf = _compiled(np.linalg.inv, SINGULAR)
    with pytest.raises(np.linalg.LinAlgError):
        cf(SINGULAR)
    good = np.array([[2.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(cf(good)[0], np.linalg.inv(good), rtol=1e-14)


@pytest.mark.parametrize("f", [np.linalg.inv, np.linalg.det, np.linalg.cholesky, np.linalg.eigh,
                               lambda a: np.linalg.solve(a, np.ones(3)), np.linalg.slogdet])
def test_non_square_raises_linalgerror_naming_the_shape(f):
    with pytest.raises(np.linalg.LinAlgError, match=r"numpy\.linalg\.\w+: .*square.*\(2, 3\)"):
        f(gt.constant(np.ones((2, 3))))


def test_one_dimensional_input_raises_linalgerror():
    with pytest.raises(np.linalg.LinAlgError, match=r"numpy\.linalg\.inv: 1-dimensional array .*\(3,\)"):
        np.linalg.inv(gt.constant(np.ones(3)))


def test_slogdet_and_det_of_a_singular_matrix_are_numpys_in_native_code_too():
    sign, logabsdet = np.linalg.slogdet(SINGULAR)
    assert (sign, logabsdet) == (0.0, -np.inf)
    packed = _compiled(lambda a: gt.stack(list(L.slogdet(a))), SINGULAR)(SINGULAR)[0]
    np.testing.assert_array_equal(packed, [0.0, -np.inf])
    assert L.det(gt.constant(SINGULAR)).numpy() == 0.0


def test_compiled_values_match_numpy_for_a_stack():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 5, 5)) + 4 * np.eye(5)
    spd = a @ np.swapaxes(a, -1, -2)
    cf = _compiled(lambda a, s: gt.concatenate([gt.reshape(np.linalg.inv(a), (-1,)),
                                                gt.reshape(np.linalg.cholesky(s), (-1,)),
                                                gt.reshape(np.linalg.eigh(s)[0], (-1,)),
                                                gt.reshape(np.linalg.slogdet(a)[1], (-1,))]), a, spd)
    want = np.concatenate([np.linalg.inv(a).ravel(), np.linalg.cholesky(spd).ravel(),
                           np.linalg.eigh(spd)[0].ravel(), np.linalg.slogdet(a)[1].ravel()])
    np.testing.assert_allclose(cf(a, spd)[0], want, rtol=1e-12, atol=1e-12)


def test_gradients_match_hand_written_ones_on_the_tape_and_staged():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal(4)
    x = gt.constant(a)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = np.linalg.slogdet(x)[1] + gt.sum(np.linalg.solve(x, b))
    inv = np.linalg.inv(a)
    hand = inv.T - np.outer(np.linalg.solve(a.T, np.ones(4)), np.linalg.solve(a, b))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), hand, rtol=1e-10)
    staged = gt.grad(lambda t: np.linalg.slogdet(t)[1] + gt.sum(np.linalg.solve(t, b)))(a)
    np.testing.assert_allclose(staged, hand, rtol=1e-10)


def test_eigh_with_a_repeated_eigenvalue_eigenvalue_loss_is_finite_eigenvector_loss_is_nan():
    a = np.diag([1.0, 1.0, 3.0])                                    # eigenvalue 1 twice
    g_values = gt.grad(lambda t: gt.sum(np.linalg.eigh(t)[0] ** 2))(a)
    np.testing.assert_allclose(g_values, np.diag([2.0, 2.0, 6.0]), atol=1e-12)
    w = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    g_vectors = gt.grad(lambda t: gt.sum(np.linalg.eigh(t)[1] * w))(a)  # turns inside the repeated pair
    assert np.isnan(g_vectors).any()


def test_svd_with_repeated_singular_values_values_are_finite_vectors_nan():
    a = np.eye(3)
    np.testing.assert_allclose(gt.grad(lambda t: np.linalg.norm(t, "nuc"))(a), np.eye(3), atol=1e-12)
    w = np.arange(9.0).reshape(3, 3)
    assert np.isnan(gt.grad(lambda t: gt.sum(np.linalg.svd(t)[0] * w))(a)).any()


def test_svd_full_matrices_of_a_non_square_matrix_refuses_derivatives():
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        gt.grad(lambda t: gt.sum(np.linalg.svd(t)[0]))(np.ones((3, 2)))


def test_qr_complete_of_a_tall_matrix_refuses_derivatives_and_wide_ones_differentiate():
    with pytest.raises(NotImplementedError, match=r"qr: derivatives are implemented for mode='reduced' \(and 'r'\); "
                       r"got a 3x2 matrix with mode='complete'"):
        gt.grad(lambda t: gt.sum(np.linalg.qr(t, mode="complete")[0]))(np.ones((3, 2)) + np.eye(3, 2))
    # Wide: R's right block is Q^T Y, so sum(R[:, 2:]) is linear in Y with gradient Q @ ones
    a = np.random.default_rng(3).standard_normal((2, 4))
    q = np.linalg.qr(a)[0]
    g = gt.grad(lambda t: gt.sum(np.linalg.qr(t)[1][:, 2:]))(a)
    np.testing.assert_allclose(g[:, 2:], q @ np.ones((2, 2)), rtol=1e-12)


def test_vmap_of_solve_matches_a_loop():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal(3)
    batched = gt.vmap(lambda m: np.linalg.solve(m, b))(a)
    np.testing.assert_allclose(batched, [np.linalg.solve(m, b) for m in a], rtol=1e-12)
    grads = gt.vmap(gt.grad(lambda m: np.linalg.slogdet(m)[1]))(a)
    np.testing.assert_allclose(grads, [np.linalg.inv(m).T for m in a], rtol=1e-10)


def test_lstsq_and_matrix_power_match_numpy():
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal(5)
    x, res, rank, s = L.lstsq(gt.constant(a), b)
    wx, wres, wrank, ws = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x.numpy(), wx, rtol=1e-12)
    np.testing.assert_allclose(res.numpy(), wres, rtol=1e-12)
    assert rank == wrank
    np.testing.assert_allclose(s.numpy(), ws, rtol=1e-12)
    m = rng.standard_normal((3, 3))
    assert np.linalg.matrix_power(gt.constant(m), 0).numpy().tolist() == np.eye(3).tolist()
    np.testing.assert_allclose(np.linalg.matrix_power(gt.constant(m), 7).numpy(), np.linalg.matrix_power(m, 7),
                               rtol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_native_decompositions_have_numpys_signs(shape):
    """Eigenvectors and singular vectors are defined up to sign: native code calls LAPACK as
    numpy.linalg does, so compiled, eager and staged code agree with NumPy element for element."""
    a = np.random.default_rng(7).standard_normal(shape)

    def flat(parts):
        return gt.concatenate([gt.reshape(p, (-1,)) for p in parts])

    cases = [(lambda t: flat(np.linalg.svd(t, full_matrices=False)), np.linalg.svd(a, full_matrices=False)),
             (lambda t: flat(np.linalg.svd(t)), np.linalg.svd(a)),
             (lambda t: flat(np.linalg.qr(t)), np.linalg.qr(a)),
             (lambda t: flat(np.linalg.qr(t, mode="complete")), np.linalg.qr(a, mode="complete"))]
    if shape[-1] == shape[-2]:
        s = a + np.swapaxes(a, -1, -2)
        cases.append((lambda t: flat(np.linalg.eigh(t + np.swapaxes(t, -1, -2))), np.linalg.eigh(s)))
    for f, parts in cases:
        want = np.concatenate([np.reshape(p, -1) for p in parts])
        np.testing.assert_allclose(_compiled(f, a)(a)[0], want, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(f(gt.constant(a)).numpy(), want, rtol=1e-12, atol=1e-13)


def test_float32_is_computed_in_double_as_numpy_does():
    """A rank-deficient float32 matrix: in single precision its zero singular value would be
    ~1e-7, above pinv's cutoff, and pinv would be ~1e7; NumPy computes in double (~1e-16, cut)."""
    a = np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]], np.float32)
    want = np.linalg.pinv(a)
    assert want.dtype == np.float32 and np.abs(want).max() < 1
    np.testing.assert_allclose(_compiled(np.linalg.pinv, a)(a)[0], want, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.pinv(gt.constant(a)).numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(np.linalg.svd(gt.constant(a), compute_uv=False).numpy(),
                                  np.linalg.svd(a, compute_uv=False))
