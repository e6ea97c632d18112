"""numpy.linalg on matrices with a NaN or an infinity: every LAPACK-backed function does what
NumPy does with the same input (the same values, NaN where NumPy's are, or LinAlgError with
NumPy's message), eagerly, in staged functions and in native code."""
import re
import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape.runtime import compile_function
from gradtape.testing import check_grads

L = np.linalg
B = np.array([1.0, -2.0, 0.5])
BASE = np.array([[2.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 4.0]])


def _flat(parts):
    if isinstance(parts, gt.Tensor):
        return parts
    return gt.concatenate([gt.reshape(p, (-1,)) for p in parts])


def _np_flat(parts):
    return np.concatenate([np.ravel(p) for p in parts]) if isinstance(parts, tuple) else np.asarray(parts)


FUNCTIONS = {
    "svd": lambda a: tuple(L.svd(a)),
    "svd_reduced": lambda a: tuple(L.svd(a, full_matrices=False)),
    "svdvals": lambda a: L.svd(a, compute_uv=False),
    "pinv": L.pinv,
    "lstsq": lambda a: L.lstsq(a, B)[0],
    "eigh": lambda a: tuple(L.eigh(a)),
    "eigh_upper": lambda a: tuple(L.eigh(a, UPLO="U")),
    "eigvalsh": L.eigvalsh,
    "eigvalsh_upper": lambda a: L.eigvalsh(a, UPLO="U"),
    "cholesky": L.cholesky,
    "qr": lambda a: tuple(L.qr(a)),
    "solve": lambda a: L.solve(a, B),
    "inv": L.inv,
    "det": L.det,
    "slogdet": lambda a: tuple(L.slogdet(a)),
    "norm_2": lambda a: L.norm(a, 2),
    "norm_minus_2": lambda a: L.norm(a, -2),
    "norm_nuc": lambda a: L.norm(a, "nuc"),
    "cond": L.cond,
    "cond_fro": lambda a: L.cond(a, "fro"),
    "cond_nuc": lambda a: L.cond(a, "nuc"),
    "matrix_power_minus_1": lambda a: L.matrix_power(a, -1),
}

# (1, 1) is in both triangles; (0, 2) only in the upper one (eigh and cholesky read the lower).
# Some other places of an inf make OpenBLAS's ?gesdd loop forever, NumPy's svd too: not tested.
INPUTS = {f"{kind}_at_{i}{j}": (i, j, value) for kind, value in (("nan", np.nan), ("inf", np.inf), ("minus_inf", -np.inf))
          for i, j in ((1, 1), (0, 2))}


# What NumPy 2.5 changed, and gradtape does on every NumPy: the SVD refuses an infinity as it
# refuses a NaN (older OpenBLAS gave NaN values), and cond gives NaN for a matrix with a NaN
# (its SVD-based p raised) and inf for one with an infinity (cond(x, 'nuc') raised).
_SVD_BASED = {"svd", "svd_reduced", "svdvals", "pinv", "norm_2", "norm_minus_2", "norm_nuc"}
_NUMPY_25 = np.lib.NumpyVersion(np.__version__) >= "2.5.0"


def _numpy(f, a, name=None):
    """NumPy's outcome: ("values", array) or ("error", its LinAlgError message); NumPy 2.5's
    where an older NumPy is installed."""
    if not _NUMPY_25 and not np.isfinite(a).all():
        if name in _SVD_BASED:
            return "error", "SVD did not converge"
        if name in ("cond", "cond_nuc"):
            return "values", np.array(np.nan if np.isnan(a).any() else np.inf)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return "values", _np_flat(f(a))
        except np.linalg.LinAlgError as e:
            return "error", str(e)


# NumPy's messages that gradtape words its own way (it names the function and the shape either way);
# NumPy's "... did not converge ..." are kept word for word.
_REWORDED = {"Matrix is not positive definite": "matrix not positive definite", "Singular matrix": "singular matrix"}


def _assert_like_numpy(run, want):
    kind, expected = want
    if kind == "error":
        with pytest.raises(np.linalg.LinAlgError, match=re.escape(_REWORDED.get(expected, expected))):
            run()
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = np.asarray(run())
    assert got.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("where", list(INPUTS))
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_like_numpy_eager_staged_and_native(name, where):
    i, j, value = INPUTS[where]
    a = BASE.copy()
    a[i, j] = value
    f = FUNCTIONS[name]
    want = _numpy(f, a, name)
    _assert_like_numpy(lambda: _flat(f(gt.constant(a))).numpy(), want)
    _assert_like_numpy(lambda: gt.differentiable(lambda t: _flat(f(t)))(a), want)
    native = compile_function(gt.make_ir(lambda t: _flat(f(t)), a))
    assert native.native, native.fallback_reason
    _assert_like_numpy(lambda: native(a)[0], want)


def test_the_failing_matrix_of_a_stack_is_named():
    stack = np.stack([BASE, BASE])
    stack[1, 0, 2] = np.inf
    native = compile_function(gt.make_ir(lambda t: L.lstsq(t[1], B)[0] + L.pinv(t)[0] @ B, stack))
    with pytest.raises(np.linalg.LinAlgError, match=r"numpy\.linalg\.lstsq: SVD did not converge in Linear Least "
                                                     r"Squares \(input of shape \(3, 3\)\); check the input for NaN"):
        native(stack)
    with pytest.raises(np.linalg.LinAlgError, match=r"numpy\.linalg\.eigvalsh: Eigenvalues did not converge \(input "
                                                     r"of shape \(2, 3, 3\), matrix \(1,\) of the stack\)"):
        compile_function(gt.make_ir(lambda t: L.eigvalsh(t, UPLO="U"), stack))(stack)


@pytest.mark.parametrize("value", [np.nan, np.inf], ids=["nan", "inf"])
def test_lstsq_with_a_non_finite_right_hand_side_gives_numpys_nans(value):
    # NumPy: an inf in b makes every column of the solution NaN (?gelsd scales b by its
    # largest magnitude), a NaN only its own column
    b = np.ones((3, 2))
    b[1, 0] = value
    want = _numpy(lambda t: L.lstsq(BASE, t)[0].ravel(), b)
    assert np.isnan(want[1]).sum() == (6 if value == np.inf else 3)
    solution = lambda a, t: L.lstsq(a, t)[0]          # noqa: E731
    _assert_like_numpy(lambda: solution(gt.constant(BASE), b).numpy().ravel(), want)
    _assert_like_numpy(lambda: np.ravel(gt.differentiable(solution)(BASE, b)), want)
    native = compile_function(gt.make_ir(solution, BASE, b))
    assert native.native, native.fallback_reason
    _assert_like_numpy(lambda: native(BASE, b)[0].ravel(), want)


def test_native_code_recovers_after_a_nan():
    native = compile_function(gt.make_ir(L.pinv, BASE))
    bad = BASE.copy()
    bad[1, 1] = np.nan
    with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
        native(bad)
    np.testing.assert_allclose(native(BASE)[0], L.pinv(BASE), rtol=1e-12)


@pytest.mark.parametrize("p", [1, -1, np.inf, -np.inf, "fro"])
def test_cond_of_a_singular_matrix_is_inf_as_numpys(p):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    stack = np.stack([singular, np.array([[2.0, 1.0], [0.5, 3.0]])])
    want = L.cond(stack, p)
    assert want[0] == np.inf and np.isfinite(want[1])
    np.testing.assert_allclose(L.cond(gt.constant(stack), p).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(gt.differentiable(lambda t: L.cond(t, p))(stack), want, rtol=1e-12)
    native = compile_function(gt.make_ir(lambda t: L.cond(t, p), stack))
    assert native.native, native.fallback_reason
    np.testing.assert_allclose(native(stack)[0], want, rtol=1e-12)
    check_grads(lambda t: L.cond(t, p), [stack[1]], order=1)
