"""gradtape's complex derivatives against JAX's: grad, jvp and vjp of complex losses through
numpy.linalg (eig, eigvals, inv, solve, det, slogdet, eigh, cholesky, svd, qr, pinv, lstsq, norm), numpy.roots,
sort_complex, arcsinh and the FFT, and hessian(holomorphic=True) and hvp.

Skipped where JAX is not installed (the default environment); to run it, install JAX:
`pip install jax` (the bench extra, `.[bench]`), then `python -m pytest tests/complex/test_against_jax.py`.
Each loss is written once against a NumPy-like module `xp`: NumPy's (gradtape's
functions are found through NumPy's dispatch) or jax.numpy. JAX's eigh and
cholesky symmetrize their input where NumPy reads one triangle, so their losses
build a Hermitian matrix first; the eigenvector losses do not depend on the
eigenvectors' phases or order (docs/complex.md).
"""
import numpy as np
import pytest

import gradtape as gt

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RNG = np.random.default_rng(28)


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


A = _c(3, 3) * 0.5 + 2.0 * np.eye(3)
X = RNG.standard_normal((3, 3)) + 2.0 * np.eye(3)
B = _c(3)
W = _c(3, 3)
ROW_WEIGHTS = RNG.standard_normal(3)
P = np.array([1.0 + 0.2j, -0.5 + 1.0j, 0.3 - 0.4j, 0.7 + 0.1j])
Z = _c(6) * 0.5
SIGNAL = RNG.standard_normal(8)


def _hermitian(xp, a):
    return a + xp.conj(xp.swapaxes(a, -1, -2))


def _positive(xp, a):
    return a @ xp.conj(xp.swapaxes(a, -1, -2)) + xp.eye(a.shape[-1])


def _roots(xp, p):
    return xp.roots(p, strip_zeros=False) if xp is jnp else xp.roots(p)


def _eig(xp, a):
    """(w, V); JAX differentiates eigenvectors only when asked to (enable_eigvec_derivs), as their
    derivative holds for phase-invariant losses only, the ones here."""
    if xp is jnp:
        return jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return np.linalg.eig(a)


def _expm_by_eig(xp, a):
    w, v = _eig(xp, a)
    return xp.linalg.solve(xp.swapaxes(v, -1, -2), xp.swapaxes(v * xp.exp(w)[None, :], -1, -2))


# name: (loss(xp, z) -> real scalar, the point z)
LOSSES = {
    "inv": (lambda xp, a: xp.sum(xp.abs(xp.linalg.inv(a)) ** 2), A),
    "solve": (lambda xp, a: xp.real(xp.sum(xp.linalg.solve(a, B) * W[0])), A),
    "det_abs": (lambda xp, a: xp.abs(xp.linalg.det(a)), A),
    "det_rotated_real_part": (lambda xp, a: xp.real(xp.linalg.det(a) * (1 - 2j)), A),
    "slogdet_logabsdet": (lambda xp, a: xp.linalg.slogdet(a)[1], A),
    "slogdet_sign": (lambda xp, a: xp.imag(xp.linalg.slogdet(a)[0] * (0.3 + 1j)), A),
    "eigvalsh": (lambda xp, a: xp.sum(xp.linalg.eigvalsh(_hermitian(xp, a)) * xp.arange(1.0, 4.0)), A),
    "eigh_vectors": (lambda xp, a: xp.sum(xp.abs(xp.linalg.eigh(_hermitian(xp, a))[1]) ** 2 * xp.real(W)), A),
    "cholesky": (lambda xp, a: xp.real(xp.sum(xp.linalg.cholesky(_positive(xp, a)) * W)), A),
    "eigvals": (lambda xp, a: xp.sum(xp.abs(xp.linalg.eigvals(a)) ** 3), A),
    "eigvals_of_real": (lambda xp, x: xp.sum(xp.real(xp.linalg.eigvals(x) ** 2) + xp.abs(xp.linalg.eigvals(x))), X),
    "eig_expm": (lambda xp, a: xp.real(xp.sum(_expm_by_eig(xp, a) * W)), A),
    "eig_vector_weights": (lambda xp, a: xp.sum(
        (ROW_WEIGHTS @ xp.abs(_eig(xp, a)[1]) ** 2) * xp.abs(_eig(xp, a)[0])), A),
    "eig_vectors_of_real": (lambda xp, x: xp.sum(
        (ROW_WEIGHTS @ xp.abs(_eig(xp, x)[1])) * xp.real(_eig(xp, x)[0])), X),
    "svdvals": (lambda xp, a: xp.sum(xp.linalg.svd(a, compute_uv=False) ** 3), A),
    "svd_reassembled": (lambda xp, a: xp.real(xp.sum(
        (lambda u, s, vh: (u * s ** 2) @ vh)(*xp.linalg.svd(a, full_matrices=False)) * W)), A),
    "svd_tall_projector": (lambda xp, a: xp.real(xp.sum(
        (lambda u: u @ xp.conj(u).T)(xp.linalg.svd(a, full_matrices=False)[0]) * (1 + 1j))), A[:, :2]),
    "qr_q": (lambda xp, a: xp.real(xp.sum(xp.linalg.qr(a)[0] * W)), A),
    "qr_tall_r": (lambda xp, a: xp.real(xp.sum(xp.linalg.qr(a)[1] * W[:2, :2])), A[:, :2]),
    "pinv_tall": (lambda xp, a: xp.real(xp.sum(xp.linalg.pinv(a) * W[:2])), A[:, :2]),
    "lstsq": (lambda xp, a: xp.sum(xp.abs(xp.linalg.lstsq(a, B)[0]) ** 2), A[:, :2]),
    "norm_2": (lambda xp, a: xp.linalg.norm(a, 2), A),
    "norm_nuc_wide": (lambda xp, a: xp.linalg.norm(a, "nuc"), A[:2]),
    "norm_fro": (lambda xp, a: xp.linalg.norm(a), A),
    "norm_1_rows": (lambda xp, a: xp.sum(xp.linalg.norm(a, 1, axis=1) * ROW_WEIGHTS), A),
    "roots": (lambda xp, p: xp.sum(xp.abs(_roots(xp, p)) ** 2), P),
    "arcsinh": (lambda xp, z: xp.sum(xp.abs(xp.arcsinh(z)) ** 2), Z),
    "sort_complex": (lambda xp, z: xp.real(xp.sum(xp.sort_complex(z) * xp.arange(1.0, 7.0) * (1 + 1j))), Z),
    "fft": (lambda xp, z: xp.sum(xp.abs(xp.fft.fft(z)) ** 2 * xp.arange(6.0)), Z),
    "rfft_irfft": (lambda xp, x: xp.sum(xp.fft.irfft(xp.fft.rfft(x) * (1 + 0.5j), n=8) ** 3), SIGNAL),
}


def _close(got, want, rtol=1e-9):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=rtol * max(1.0, np.max(np.abs(want))))


def _tangent(z):
    return RNG.standard_normal(z.shape) + (1j * RNG.standard_normal(z.shape) if z.dtype.kind == "c" else 0)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_grad_is_jaxs(name):
    loss, z = LOSSES[name]
    _close(gt.grad(lambda a: loss(np, a))(z), jax.grad(lambda a: loss(jnp, a))(z))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_jvp_is_jaxs(name):
    loss, z = LOSSES[name]
    t = _tangent(z)
    got = gt.jvp(lambda a: loss(np, a), (z,), (t,))
    want = jax.jvp(lambda a: loss(jnp, a), (z,), (t,))
    _close(got[0], want[0])
    _close(got[1], want[1])


# complex-valued functions: vjp with a complex cotangent (JAX's pairing, no conjugation)
FUNCTIONS = {
    "inv": (lambda xp, a: xp.linalg.inv(a), A),
    "solve": (lambda xp, a: xp.linalg.solve(a, B), A),
    "det": (lambda xp, a: xp.linalg.det(a), A),
    "eigvals_sum_of_squares": (lambda xp, a: xp.sum(xp.linalg.eigvals(a) ** 2), A),
    "eigvals_of_real_product": (lambda xp, x: xp.prod(xp.linalg.eigvals(x)), X),
    "cholesky": (lambda xp, a: xp.linalg.cholesky(_positive(xp, a)), A),
    "fft": (lambda xp, z: xp.fft.fft(z), Z),
    "qr_q": (lambda xp, a: xp.linalg.qr(a)[0], A),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_vjp_is_jaxs(name):
    f, z = FUNCTIONS[name]
    out = np.asarray(f(np, z))
    ct = _tangent(out.astype(complex))
    got = gt.vjp(lambda a: f(np, a), z)[1](ct)[0]
    want = jax.vjp(lambda a: f(jnp, a), z)[1](ct)[0]
    _close(got, want)


def test_holomorphic_hessian_is_jaxs():
    f = lambda xp, z: xp.sum(xp.exp(z) * z[0] + z ** 3)  # noqa: E731
    _close(gt.hessian(lambda z: f(np, z), holomorphic=True)(Z),
           jax.hessian(lambda z: f(jnp, z), holomorphic=True)(Z))


@pytest.mark.parametrize("name", ["eig_expm", "eig_vector_weights", "inv", "slogdet_sign", "cholesky",
                                  "svd_reassembled"])
def test_hvp_is_the_jvp_of_jaxs_gradient(name):
    loss, z = LOSSES[name]
    t = _tangent(z)
    want = jax.jvp(jax.grad(lambda a: loss(jnp, a)), (z,), (t,))[1]
    _close(gt.hvp(lambda a: loss(np, a))(z, t), want)


def test_tape_gradient_is_the_conjugate_of_jaxs():
    loss, z = LOSSES["eig_expm"]
    x = gt.constant(z)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = loss(np, x)
    _close(tape.gradient(y, x).numpy(), np.conj(jax.grad(lambda a: loss(jnp, a))(z)))
