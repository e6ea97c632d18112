"""sparse_jacobian and sparse_hessian: values against finite differences of
NumPy references and against the dense Jacobian/Hessian, the result
formats, the cache, and the errors."""
import numpy as np
import pytest
import scipy.sparse

import gradtape as gt
from gradtape.staging import sparse as sparse_module


def fd_jacobian(f, x, eps=1e-6):
    """Central differences of a NumPy function: (out.size, x.size)."""
    x = np.asarray(x, np.float64)
    cols = []
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = eps
        step = step.reshape(x.shape)
        cols.append((np.ravel(f(x + step)) - np.ravel(f(x - step))) / (2 * eps))
    return np.stack(cols, axis=1)


# --- the functions, each in gradtape and in NumPy ------------------------------------

def banded(x, xp):
    return x[:-2] - 2.0 * x[1:-1] + x[2:] + xp.sin(x[1:-1]) * x[2:]


def broyden_tridiagonal(x, xp):
    """r_i = (3 - 2 x_i) x_i - x_{i-1} - 2 x_{i+1} + 1, with x_0 = x_{n+1} = 0."""
    y = xp.pad(x, (1, 1))
    return (3.0 - 2.0 * x) * x - y[:-2] - 2.0 * y[2:] + 1.0


TRIDIAGONAL = np.diag(np.full(7, 4.0)) + np.diag(np.full(6, -1.0), 1) + np.diag(np.full(6, -1.5), -1)


def tridiagonal_system(x, xp):
    """A x + x^3 - b with a constant tridiagonal A."""
    return TRIDIAGONAL @ x + x ** 3 - np.arange(7.0)


def grid_stencil(x, xp):
    """A 5-point stencil on a 4 x 5 grid with its border kept, flattened again."""
    g = xp.reshape(x, (4, 5))
    inner = 4.0 * g[1:-1, 1:-1] - g[:-2, 1:-1] - g[2:, 1:-1] - g[1:-1, :-2] - g[1:-1, 2:] + g[1:-1, 1:-1] ** 3
    middle = xp.concatenate([g[1:-1, :1], inner, g[1:-1, -1:]], axis=1)
    return xp.reshape(xp.concatenate([g[:1] * 2.0, middle, xp.exp(g[-1:])], axis=0), (20,))


def rosenbrock(x, xp):
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def gt_version(fn):
    def f(x):
        return fn(x, gt)

    f.__name__ = fn.__name__
    return f


def np_version(fn):
    return lambda x: fn(x, np)


JACOBIAN_CASES = [
    (banded, 9, 3),
    (broyden_tridiagonal, 8, 3),
    (tridiagonal_system, 7, 3),
    (grid_stencil, 20, None),
]


@pytest.mark.parametrize("fn,n,colours", JACOBIAN_CASES, ids=[c[0].__name__ for c in JACOBIAN_CASES])
def test_sparse_jacobian_matches_finite_differences_and_the_dense_jacobian(fn, n, colours):
    x = np.random.default_rng(0).uniform(-1.5, 1.5, n)
    jac = gt.sparse_jacobian(gt_version(fn))
    J = jac(x)
    assert isinstance(J, scipy.sparse.csr_array)
    np.testing.assert_allclose(J.toarray(), fd_jacobian(np_version(fn), x), rtol=1e-7, atol=1e-7)
    dense = gt.jacobian(gt_version(fn))(x)
    np.testing.assert_allclose(J.toarray(), np.reshape(dense, J.shape), rtol=1e-13, atol=1e-13)
    info = jac.sparsity(x)
    assert info.pattern.nnz == J.nnz < J.shape[0] * J.shape[1]
    if colours is not None:
        assert info.n_colours == colours
    assert info.n_colours < n


def test_rosenbrock_sparse_hessian_is_tridiagonal_and_matches_the_dense_one():
    x = np.random.default_rng(1).uniform(-1.5, 1.5, 9)
    hes = gt.sparse_hessian(gt_version(rosenbrock))
    H = hes(x)
    assert H.shape == (9, 9)
    assert np.array_equal(H.toarray() != 0, np.abs(np.subtract.outer(np.arange(9), np.arange(9))) <= 1)
    np.testing.assert_allclose(H.toarray(), fd_jacobian(rosenbrock_grad, x), rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(H.toarray(), gt.hessian(gt_version(rosenbrock))(x), rtol=1e-13, atol=1e-12)
    assert hes.sparsity(x).n_colours == 3


def test_sparse_hessian_of_a_function_with_a_dense_row():
    def f(x):
        return gt.sum(x ** 2 * x[0]) + gt.sum(gt.sin(x[1:] * x[:-1]))

    x = np.random.default_rng(2).uniform(-1, 1, 6)
    H = gt.sparse_hessian(f, format="triple")(x)
    np.testing.assert_allclose(H.toarray(), gt.hessian(f)(x), rtol=1e-12, atol=1e-12)


def test_matrix_argument_and_other_arguments():
    def f(w, x, scale):
        return gt.tanh(w @ x) * scale

    rng = np.random.default_rng(3)
    w, x, scale = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=3)
    J = gt.sparse_jacobian(f)(w, x, scale)  # w.r.t. w: row i depends on w[i, :] only
    assert J.shape == (3, 12) and J.nnz == 12
    fd = fd_jacobian(lambda w_: np.tanh(w_ @ x) * scale, w)
    np.testing.assert_allclose(J.toarray(), fd, rtol=1e-7, atol=1e-8)
    Jx = gt.sparse_jacobian(f, argnums=1)(w, x, scale)
    np.testing.assert_allclose(Jx.toarray(), fd_jacobian(lambda x_: np.tanh(w @ x_) * scale, x), rtol=1e-7, atol=1e-8)


def test_float32_scalar_output_and_no_dependence():
    x = np.linspace(0.1, 1.0, 5).astype(np.float32)
    J = gt.sparse_jacobian(lambda x: x * x * 3.0, format="triple")(x)
    assert J.data.dtype == np.float32
    np.testing.assert_allclose(J.toarray(), np.diag(6.0 * x), rtol=1e-6)
    total = gt.sparse_jacobian(lambda x: gt.sum(x[1:3]))(x.astype(np.float64))
    assert total.shape == (1, 5) and np.array_equal(total.toarray(), [[0, 1, 1, 0, 0]])
    constant = gt.sparse_jacobian(lambda x, y: y * 2.0)(x, np.ones(2, np.float32))
    assert constant.shape == (2, 5) and constant.nnz == 0


def test_formats():
    x = np.random.default_rng(4).uniform(-1, 1, 6)
    f = gt_version(banded)
    want = gt.sparse_jacobian(f, format="csr")(x).toarray()
    coo = gt.sparse_jacobian(f, format="coo")(x)
    assert isinstance(coo, scipy.sparse.coo_array) and np.array_equal(coo.toarray(), want)
    triple = gt.sparse_jacobian(f, format="triple")(x)
    assert isinstance(triple, gt.COOTriple)
    values, (rows, cols), shape = triple
    assert shape == (4, 6) and len(values) == len(rows) == len(cols) == 12
    assert np.array_equal(triple.toarray(), want)
    assert np.array_equal(scipy.sparse.coo_array(triple[:2], shape=triple.shape).toarray(), want)


def test_results_do_not_share_the_cached_indices():
    x = np.random.default_rng(5).uniform(-1, 1, 6)
    jac = gt.sparse_jacobian(gt_version(banded))
    first = jac(x)
    first.indices[:] = 0
    first.data[:] = 0
    np.testing.assert_allclose(jac(x).toarray(), fd_jacobian(np_version(banded), x), rtol=1e-7, atol=1e-7)


def test_without_scipy_the_default_is_the_triple(monkeypatch):
    monkeypatch.setattr(sparse_module, "_scipy_available", lambda: False)
    J = gt.sparse_jacobian(lambda x: x[1:] * x[:-1])(np.arange(1.0, 4.0))
    assert isinstance(J, gt.COOTriple)
    np.testing.assert_allclose(J.toarray(), [[2.0, 1.0, 0.0], [0.0, 3.0, 2.0]])
    with pytest.raises(ImportError, match=r"sparse_jacobian: format='csr' needs scipy.*format='triple'"):
        gt.sparse_jacobian(lambda x: x, format="csr")


@pytest.mark.native
def test_compiled_once_per_signature():
    jac = gt.sparse_jacobian(gt_version(broyden_tridiagonal))
    x = np.random.default_rng(6).uniform(-1, 1, 8)
    first = jac(x).toarray()
    for _ in range(3):
        np.testing.assert_array_equal(jac(x + 0.0).toarray(), first)
    assert jac.cache_info() == (3, 1, 1, 1)
    np.testing.assert_allclose(first, fd_jacobian(np_version(broyden_tridiagonal), x), rtol=1e-7, atol=1e-7)
    jac(np.ones(5))  # a new shape: a new trace and compile
    assert jac.cache_info() == (3, 2, 2, 2)
    with pytest.raises(TypeError, match="must be one float array, got a list of 5 values"):
        jac([0.5, 1.0, 2.0, 3.0, 4.0])
    assert jac.cache_info() == (3, 2, 2, 2)


# --- errors ------------------------------------------------------------------------------

def test_errors_name_the_function_and_what_was_received():
    def f(x):
        return x * 2.0

    with pytest.raises(TypeError, match=r"sparse_jacobian\(f\) requires a float array: argument 0 has dtype int64"):
        gt.sparse_jacobian(f)(np.arange(3))
    with pytest.raises(TypeError, match=r"sparse_jacobian\(f\): argument 0 must be one float array, got a tuple of 2 values"):
        gt.sparse_jacobian(f)((np.ones(2), np.ones(2)))
    with pytest.raises(TypeError, match=r"sparse_jacobian\(f\): argument 0 is a str"):
        gt.sparse_jacobian(f)("x")
    with pytest.raises(ValueError, match=r"sparse_jacobian\(f\): argnums 1 is out of range for a call with 1"):
        gt.sparse_jacobian(f, argnums=1)(np.ones(2))
    with pytest.raises(TypeError, match=r"sparse_jacobian: argnums must be one non-negative int .* got \(0, 1\)"):
        gt.sparse_jacobian(f, argnums=(0, 1))
    with pytest.raises(ValueError, match=r"format must be one of \('csr', 'coo', 'triple'\), got 'dense'"):
        gt.sparse_jacobian(f, format="dense")
    with pytest.raises(TypeError, match=r"sparse_hessian expects a function, got a int"):
        gt.sparse_hessian(3)
    with pytest.raises(TypeError, match=r"keyword arguments are not supported"):
        gt.sparse_jacobian(f)(x=np.ones(2))


def test_output_errors():
    with pytest.raises(TypeError, match=r"sparse_hessian\(f\): the Hessian is defined for scalar-output functions, but f returned shape \(3,\)"):
        def f(x):
            return x * 2.0

        gt.sparse_hessian(f)(np.ones(3))
    with pytest.raises(TypeError, match=r"sparse_jacobian\(pair\): pair must return one array, but it returned a tuple of 2 values"):
        def pair(x):
            return x, x

        gt.sparse_jacobian(pair)(np.ones(3))
    with pytest.raises(TypeError, match=r"sparse_jacobian\(flags\): flags must return a float array, but its output is bool\[3\]"):
        def flags(x):
            return x > 0

        gt.sparse_jacobian(flags)(np.ones(3))


def test_cannot_be_called_inside_a_trace():
    jac = gt.sparse_jacobian(lambda y: y * 2.0)
    with pytest.raises(TypeError, match=r"cannot be called on abstract tensors inside a trace"):
        gt.make_ir(lambda x: jac(x), np.ones(3))
