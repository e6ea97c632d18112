"""Op specs of numpy.linalg (ops solve, slogdet, cholesky, pinv, eigh, svd, qr), through
every front end: values against numpy.linalg, gradients against finite
differences to second order in both modes, vmap against a loop, native code.

Inputs are kept away from where the functions are not differentiable:
matrices well conditioned (a random matrix plus a multiple of the identity),
symmetric ones with well separated eigenvalues, rectangular ones with
distinct singular values. Losses of eigenvectors and singular vectors are
invariant to their signs (squares, or U S Vh products), which LAPACK picks.
"""
import numpy as np

import gradtape as gt
from gradtape.ir import ops
from gradtape.tracer.dispatch import bind

from .op_specs import OpSpec, args, normal

L = gt.linalg


def well_conditioned(*shape, dtype=np.float64):
    def make(rng):
        a = rng.standard_normal(shape)
        return (a + 3.0 * np.eye(shape[-1])).astype(dtype)
    return make


def spd(*shape, dtype=np.float64):
    """Symmetric positive definite, eigenvalues spread between about 1 and 6."""
    def make(rng):
        n = shape[-1]
        q, _ = np.linalg.qr(rng.standard_normal(shape))
        w = np.linspace(1.0, 6.0, n) + 0.1 * rng.uniform(size=shape[:-1])
        return ((q * w[..., None, :]) @ np.swapaxes(q, -1, -2)).astype(dtype)
    return make


def distinct_singular_values(m, n, dtype=np.float64):
    def make(rng):
        u, _ = np.linalg.qr(rng.standard_normal((m, m)))
        v, _ = np.linalg.qr(rng.standard_normal((n, n)))
        s = np.zeros((m, n))
        k = min(m, n)
        s[range(k), range(k)] = np.linspace(3.0, 1.0, k)
        return (u @ s @ v.T).astype(dtype)
    return make


def _spec(name, fn, makers, numpy_fn, ops, **kw):
    return OpSpec(name, fn, args(*makers), ops=ops, numpy_fn=numpy_fn, order=2, **kw)


def _flat(*parts):
    return gt.concatenate([gt.reshape(p, (-1,)) for p in parts])


def _np_flat(*parts):
    return np.concatenate([np.reshape(p, -1) for p in parts])


def _svd_loss(full):
    def f(a):
        u, s, vh = np.linalg.svd(a, full_matrices=full)
        return _flat(u * u, s, vh * vh, (u * s[..., None, :]) @ vh[..., : s.shape[-1], :])
    return f


def _np_svd_loss(full):
    def f(a):
        u, s, vh = np.linalg.svd(a, full_matrices=full)
        return _np_flat(u * u, s, vh * vh, (u * s[..., None, :]) @ vh[..., : s.shape[-1], :])
    return f


def _op(op, **params):
    """The op itself (numpy.linalg's front ends compute float32 input in float64, as NumPy does:
    these specs give the ops float32 operands, for their float32 native code)."""
    return lambda *xs: bind(op, *xs, **params)


def _packed_eigh(a, uplo="L"):
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return np.concatenate([w[..., None, :], v], axis=-2)


def _packed(parts_of):
    def f(a):
        parts = parts_of(a)
        return np.concatenate([p.reshape(a.shape[:-2] + (-1,)) for p in parts], axis=-1)
    return f


F32 = np.float32

SPECS = [
    # solve, inv (solve against I), det and slogdet
    _spec("solve_vec", L.solve, [well_conditioned(3, 3), normal(3)], np.linalg.solve, ("solve",)),
    _spec("solve_mat", np.linalg.solve, [well_conditioned(3, 3), normal(3, 2)], np.linalg.solve, ("solve",)),
    _spec("tensorsolve", lambda a, b: np.linalg.tensorsolve(np.reshape(a, (2, 3, 3, 2)), b, axes=(2,)),
          [well_conditioned(6, 6), normal(2, 3)],
          lambda a, b: np.linalg.tensorsolve(np.reshape(a, (2, 3, 3, 2)), b, axes=(2,)), ("solve",)),
    _spec("solve_stack_broadcast", L.solve, [well_conditioned(2, 3, 3), normal(3, 2)], np.linalg.solve,
          ("solve", "broadcast_to")),
    _spec("solve_f32", L.solve, [well_conditioned(3, 3, dtype=np.float32), normal(3, 2, dtype=np.float32)],
          np.linalg.solve, ("solve",)),
    _spec("inv", np.linalg.inv, [well_conditioned(3, 3)], np.linalg.inv, ("solve",)),
    _spec("inv_stack", L.inv, [well_conditioned(2, 3, 3)], np.linalg.inv, ("solve",)),
    _spec("det", np.linalg.det, [well_conditioned(3, 3)], np.linalg.det, ("slogdet",)),
    _spec("det_stack_f32", L.det, [well_conditioned(2, 3, 3, dtype=np.float32)], np.linalg.det, ("slogdet",)),
    _spec("slogdet", lambda a: L.slogdet(a).logabsdet * L.slogdet(a).sign, [well_conditioned(2, 3, 3)],
          lambda a: np.linalg.slogdet(a)[1] * np.linalg.slogdet(a)[0], ("slogdet",)),
    # cholesky (reads the lower triangle only: the upper one's derivative is 0)
    _spec("cholesky", np.linalg.cholesky, [spd(3, 3)], np.linalg.cholesky, ("cholesky",)),
    _spec("cholesky_stack_f32", L.cholesky, [spd(2, 3, 3, dtype=np.float32)], np.linalg.cholesky,
          ("cholesky",)),
    _spec("cholesky_upper", lambda a: L.cholesky(a, upper=True), [spd(3, 3)],
          lambda a: np.linalg.cholesky(a, upper=True), ("cholesky",)),
    # eigh: eigenvalues, and eigenvectors through sign-invariant squares
    _spec("eigh_values", lambda a: L.eigh(a).eigenvalues, [spd(3, 3)], lambda a: np.linalg.eigh(a)[0], ("eigh",)),
    _spec("eigh_vectors", lambda a: np.linalg.eigh(a)[1] ** 2, [spd(3, 3)], lambda a: np.linalg.eigh(a)[1] ** 2,
          ("eigh",)),
    _spec("eigh_upper_stack_f32", lambda a: _flat(*(x ** 2 for x in L.eigh(a, UPLO="U"))),
          [spd(2, 3, 3, dtype=np.float32)], lambda a: _np_flat(*(x ** 2 for x in np.linalg.eigh(a, UPLO="U"))),
          ("eigh",)),
    _spec("eigvalsh", L.eigvalsh, [spd(3, 3)], np.linalg.eigvalsh, ("eigh",)),
    # eig (general matrices: complex eigenvalues, real input): values, and eigenvectors through
    # their phase-invariant |v|^2 (docs/complex.md). Not float32 here: the finite differences'
    # float32 step (3e-2) reorders geev's eigenvalues; tests/complex checks complex64 gradients.
    _spec("eig_values", lambda a: _flat(np.real(L.eigvals(a)), np.imag(L.eigvals(a))), [well_conditioned(3, 3)],
          lambda a: _np_flat(np.real(np.linalg.eigvals(a)), np.imag(np.linalg.eigvals(a))), ("eig",)),
    _spec("eig_vectors_stack", lambda a: _flat(np.abs(L.eig(a).eigenvalues), np.abs(L.eig(a).eigenvectors) ** 2),
          [well_conditioned(2, 3, 3)],
          lambda a: _np_flat(np.abs(np.linalg.eig(a)[0]), np.abs(np.linalg.eig(a)[1]) ** 2), ("eig",)),
    # svd: square, tall and wide, reduced and full, values only
    _spec("svd_square", _svd_loss(True), [distinct_singular_values(3, 3)], _np_svd_loss(True), ("svd",)),
    _spec("svd_tall", _svd_loss(False), [distinct_singular_values(4, 3)], _np_svd_loss(False), ("svd",)),
    _spec("svd_wide_f32", _svd_loss(False), [distinct_singular_values(2, 4, dtype=np.float32)],
          _np_svd_loss(False), ("svd",)),
    _spec("svdvals", lambda a: np.linalg.svd(a, compute_uv=False), [distinct_singular_values(3, 2)],
          lambda a: np.linalg.svd(a, compute_uv=False), ("svd",)),
    _spec("norm_2", lambda a: np.linalg.norm(a, 2), [distinct_singular_values(3, 4)],
          lambda a: np.linalg.norm(a, 2), ("svd", "reduce_max")),
    _spec("norm_minus_2", lambda a: L.norm(a, -2), [distinct_singular_values(3, 3)],
          lambda a: np.linalg.norm(a, -2), ("svd", "reduce_min")),
    _spec("norm_nuc_axes", lambda a: L.norm(a, "nuc", axis=(2, 0)), [normal(3, 2, 4)],
          lambda a: np.linalg.norm(a, "nuc", axis=(2, 0)), ("svd",)),
    # qr (Householder signs are continuous: Q and R themselves are smooth)
    _spec("qr_tall", lambda a: _flat(*L.qr(a)), [normal(4, 3)], lambda a: _np_flat(*np.linalg.qr(a)), ("qr",)),
    _spec("qr_square_stack_f32", lambda a: _flat(*np.linalg.qr(a)), [well_conditioned(2, 3, 3, dtype=np.float32)],
          lambda a: _np_flat(*np.linalg.qr(a)), ("qr",)),
    _spec("qr_r", lambda a: np.linalg.qr(a, mode="r"), [normal(3, 2)], lambda a: np.linalg.qr(a, mode="r"),
          ("qr",)),
    # wide (m < n): A = [X | Y], X's QR and R's right block Q^T Y
    _spec("qr_wide", lambda a: _flat(*L.qr(a)), [normal(2, 4)], lambda a: _np_flat(*np.linalg.qr(a)), ("qr",)),
    _spec("qr_wide_stack_r", lambda a: np.linalg.qr(a, mode="r") ** 2, [normal(2, 3, 5)],
          lambda a: np.linalg.qr(a, mode="r") ** 2, ("qr",)),
    # pinv, lstsq (pinv @ b), matrix_power, multi_dot
    _spec("pinv_tall", np.linalg.pinv, [distinct_singular_values(4, 3)], np.linalg.pinv, ("pinv",)),
    _spec("pinv_wide_stack_f32", L.pinv, [normal(2, 2, 3, dtype=np.float32)], np.linalg.pinv, ("pinv",)),
    _spec("lstsq_residuals", lambda a, b: L.lstsq(a, b)[1], [normal(5, 3), normal(5, 2)],
          lambda a, b: np.linalg.lstsq(a, b)[1], ("pinv",)),
    _spec("lstsq", lambda a, b: L.lstsq(a, b)[0], [normal(4, 2), normal(4)], lambda a, b: np.linalg.lstsq(a, b)[0],
          ("pinv",)),
    _spec("matrix_power_5", lambda a: np.linalg.matrix_power(a, 5), [normal(3, 3)],
          lambda a: np.linalg.matrix_power(a, 5), ("contract",)),
    _spec("matrix_power_minus_2", lambda a: L.matrix_power(a, -2), [well_conditioned(2, 3, 3)],
          lambda a: np.linalg.matrix_power(a, -2), ("solve", "contract")),
    _spec("multi_dot", lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]),
          [normal(3), normal(3, 5), normal(5, 2), normal(2)], lambda *xs: np.linalg.multi_dot(xs), ("contract",)),
    # the ops in float32
    _spec("solve_op_f32", _op(ops.solve_p, name="solve"), [well_conditioned(3, 3, dtype=F32), normal(3, 2, dtype=F32)],
          np.linalg.solve, ("solve",)),
    _spec("slogdet_op_f32", _op(ops.slogdet_p), [well_conditioned(2, 3, 3, dtype=F32)],
          lambda a: np.stack(np.linalg.slogdet(a), axis=-1), ("slogdet",)),
    _spec("cholesky_op_f32", _op(ops.cholesky_p), [spd(3, 3, dtype=F32)], np.linalg.cholesky, ("cholesky",)),
    _spec("eigh_op_f32", _op(ops.eigh_p, uplo="L", vectors=True), [spd(3, 3, dtype=F32)], _packed_eigh, ("eigh",)),
    _spec("eigh_op_upper_f32", _op(ops.eigh_p, uplo="U", vectors=True), [spd(3, 3, dtype=F32)],
          lambda a: _packed_eigh(a, "U"), ("eigh",)),
    _spec("eigvalsh_op_upper_f32", _op(ops.eigh_p, uplo="U", vectors=False), [spd(2, 3, 3, dtype=F32)],
          lambda a: np.linalg.eigvalsh(a, UPLO="U"), ("eigh",)),
    _spec("svd_op_f32", _op(ops.svd_p, full_matrices=False), [distinct_singular_values(3, 2, dtype=F32)],
          _packed(lambda a: np.linalg.svd(a, full_matrices=False)), ("svd",)),
    _spec("qr_op_f32", _op(ops.qr_p, complete=False), [distinct_singular_values(3, 2, dtype=F32)],
          _packed(lambda a: np.linalg.qr(a)), ("qr",)),
    _spec("pinv_op_f32", _op(ops.pinv_p, rcond=1e-15, name="pinv"), [distinct_singular_values(2, 3, dtype=F32)],
          np.linalg.pinv, ("pinv",)),
]
