"""NumPy's functions on complex tensors give NumPy's numbers or refuse with a TypeError
naming the function: never a number NumPy would not give (a complex value silently cast
to real, say). Eager values; the derivatives of the differentiable ones are in
complex_specs.py's table."""
import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir

_RNG = np.random.default_rng(0)
Z = _RNG.standard_normal((3, 4)) + 1j * _RNG.standard_normal((3, 4))
WITH_SPECIAL_VALUES = Z.copy()
WITH_SPECIAL_VALUES[0, 0], WITH_SPECIAL_VALUES[1, 1] = complex(np.nan, 1), complex(np.inf, -np.inf)
X = _RNG.standard_normal((2, 4))

SAME_AS_NUMPY = {
    "var": np.var, "std": lambda a: np.std(a, axis=0), "nan_to_num": np.nan_to_num,
    "cumsum": lambda a: np.cumsum(a, axis=1), "cumprod": lambda a: np.cumprod(a, axis=1), "diff": np.diff,
    "average": lambda a: np.average(a, axis=1, weights=np.arange(1.0, 5.0)),
    "vector_norm": lambda a: np.linalg.vector_norm(a, axis=1), "vector_norm_ord1": lambda a: np.linalg.vector_norm(a, ord=1),
    "trace": np.trace, "kron": lambda a: np.kron(a[0], a[1]), "cross": lambda a: np.cross(a[0, :3], a[1, :3]),
    "convolve": lambda a: np.convolve(a[0], a[1]), "correlate": lambda a: np.correlate(a[0], a[1], "full"),
    "inner": lambda a: np.inner(a, a), "outer": lambda a: np.outer(a[0], a[1]), "vdot": lambda a: np.vdot(a[0], a[1]),
    "tensordot": lambda a: np.tensordot(a, a, axes=([1], [1])), "einsum": lambda a: np.einsum("ij,kj->ik", a, a),
    "interp": lambda a: np.interp(X[0], np.arange(4.0), a[0]), "polyval": lambda a: np.polyval(a[0], a[1]),
    "polyint": lambda a: np.polyint(a[0]), "polyder": lambda a: np.polyder(a[0]), "poly": lambda a: np.poly(a[0]),
    "polydiv": lambda a: np.polydiv(a[0], a[1, :2])[0], "polymul": lambda a: np.polymul(a[0], a[1]),
    "square": np.square, "reciprocal": np.reciprocal, "positive": np.positive, "isnan": np.isnan,
    "isfinite": np.isfinite, "isinf": np.isinf, "tile": lambda a: np.tile(a, 2), "roll": lambda a: np.roll(a, 1),
    "triu": np.triu, "diagonal": np.diagonal, "nansum": np.nansum, "nanmean": np.nanmean,
    "isclose": lambda a: np.isclose(a, a), "real_if_close": np.real_if_close, "angle_deg": lambda a: np.angle(a, deg=True),
    "astype_float": lambda a: a.astype(np.float64), "astype_complex64": lambda a: a.astype(np.complex64),
    "astype_bool": lambda a: (a * np.array([0, 1j, 1, 0])).astype(bool), "astype_int32": lambda a: (a * 3).astype(np.int32),
    "attributes": lambda a: a.real + a.imag * a.conj(), "complex_of_an_element": lambda a: complex(a[0, 0]),
    "arcsinh": np.arcsinh, "linalg.inv": lambda a: np.linalg.inv(a[:, :3]),
    "linalg.det": lambda a: np.linalg.det(a[:, :3]), "linalg.solve": lambda a: np.linalg.solve(a[:, :3], a[:, 3]),
    "linalg.slogdet_sign": lambda a: np.linalg.slogdet(a[:, :3]).sign,
    "linalg.slogdet_logabsdet": lambda a: np.linalg.slogdet(a[:, :3]).logabsdet, "linalg.eigvals": lambda a: np.linalg.eigvals(a[:, :3]),
    "linalg.eig": lambda a: np.linalg.eig(a[:, :3]).eigenvectors, "linalg.eigvalsh": lambda a: np.linalg.eigvalsh(a[:, :3]),
    "linalg.eigh": lambda a: np.linalg.eigh(a[:, :3], UPLO="U").eigenvectors, "roots": lambda a: np.roots(a[0]),
    "linalg.cholesky": lambda a: np.linalg.cholesky(a[:, :3] @ np.conj(a[:, :3]).T + np.eye(3)),
    "linalg.cholesky_upper": lambda a: np.linalg.cholesky(a[:, :3] @ np.conj(a[:, :3]).T + np.eye(3), upper=True),
    "linalg.norm": np.linalg.norm, "linalg.norm_1": lambda a: np.linalg.norm(a, 1),
    "linalg.norm_inf_rows": lambda a: np.linalg.norm(a, np.inf, axis=1), "linalg.norm_fro": lambda a: np.linalg.norm(a, "fro"),
    "sort_complex": np.sort_complex, "linalg.svdvals": lambda a: np.linalg.svd(a, compute_uv=False),
    "linalg.svd_u": lambda a: np.linalg.svd(a).U, "linalg.svd_vh": lambda a: np.linalg.svd(a, full_matrices=False).Vh,
    "linalg.norm_2": lambda a: np.linalg.norm(a, 2), "linalg.norm_nuc": lambda a: np.linalg.norm(a, "nuc"),
    "linalg.pinv": np.linalg.pinv, "linalg.qr_q": lambda a: np.linalg.qr(a).Q, "linalg.qr_r": lambda a: np.linalg.qr(a.T).R, "linalg.lstsq": lambda a: np.linalg.lstsq(a.T, a[0])[0],
    "linalg.lstsq_residuals": lambda a: np.linalg.lstsq(a.T, a[0])[1], "linalg.cond": lambda a: np.linalg.cond(a[:, :3]),
}

REFUSED = {
    "sign": np.sign, "round": np.round, "rint": np.rint, "trunc": np.trunc, "fix": np.fix, "floor": np.floor,
    "sinc": np.sinc, "deg2rad": np.deg2rad, "cbrt": np.cbrt, "fabs": np.fabs,
    "logaddexp": lambda a: np.logaddexp(a, a), "logaddexp2": lambda a: np.logaddexp2(a, a),
    "heaviside": lambda a: np.heaviside(a, a), "hypot": lambda a: np.hypot(a, a), "copysign": lambda a: np.copysign(a, a),
    "floor_divide": lambda a: a // 2, "remainder": lambda a: a % 2, "ldexp": lambda a: np.ldexp(a, 2),
    "frexp": lambda a: np.frexp(a)[0], "modf": lambda a: np.modf(a)[0], "i0": np.i0, "median": np.median,
    "percentile": lambda a: np.percentile(a, 30), "nanvar": np.nanvar, "trapezoid": np.trapezoid,
    "gradient": lambda a: np.gradient(a[0]), "histogram": lambda a: np.histogram(a)[0], "cov": np.cov,

    "softmax": gt.softmax, "sigmoid": gt.sigmoid, "erf": gt.erf,
}


def _value(out):
    return out.numpy() if isinstance(out, gt.Tensor) else np.asarray(out)


@pytest.mark.parametrize("name", sorted(SAME_AS_NUMPY))
def test_complex_input_gives_numpys_values(name):
    fn = SAME_AS_NUMPY[name]
    z = WITH_SPECIAL_VALUES if name == "nan_to_num" else Z
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        want = np.asarray(fn(z))
    got = _value(fn(gt.constant(z)))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_functions_of_real_numbers_refuse_complex_input(name):
    with pytest.raises((TypeError, ir.DTypeError), match="complex (input|operands) (is|are) not supported|"
                                                         "expected real numbers"):
        REFUSED[name](gt.constant(Z))
