"""gradtape.scipy.minimize: SciPy's minimizers with compiled gradients and Hessian-vector products."""
import sys
import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape import runtime
from gradtape.staging import program

import scipy.optimize as scipy_optimize  # noqa: E402  (in the test extra; see test_missing_scipy)


def rosenbrock(x):
    return gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.fixture
def compiled(monkeypatch):
    """Compile natively in the caller and count every call of every compiled function."""

    class Counted:
        def __init__(self, fn):
            self.fn, self.compiled, self.calls = fn, runtime.compile_function(fn), 0

        def __call__(self, *args, **kwargs):
            self.calls += 1
            return self.compiled(*args, **kwargs)

    made = []

    def compiler(fn):
        made.append(Counted(fn))
        return made[-1]

    monkeypatch.setattr(program, "compiler", compiler)
    return made


def test_lbfgsb_finds_the_rosenbrock_minimum_in_100_dimensions_with_one_call_per_evaluation(compiled):
    res = gt.scipy.minimize(rosenbrock, np.zeros(100), method="L-BFGS-B", options={"maxiter": 2000})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(100), atol=1e-4)
    assert res.x.dtype == np.float64 and isinstance(res.fun, float) and res.fun < 1e-8
    (value_and_grad,) = compiled  # one compiled function: the fused value and gradient
    assert value_and_grad.compiled.native
    assert res.nfev == res.njev == value_and_grad.calls == res.gradtape_calls["value_and_grad"]


def test_newton_cg_uses_hessian_vector_products_without_forming_the_hessian(compiled):
    res = gt.scipy.minimize(rosenbrock, np.zeros(100), method="Newton-CG", options={"xtol": 1e-10})
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(100), atol=1e-6)
    by_outputs = {tuple(map(str, c.fn.out_types)): c for c in compiled}
    value_and_grad, hvp = by_outputs[("f64[]", "f64[100]")], by_outputs[("f64[100]",)]
    assert len(compiled) == 2
    assert res.nfev == value_and_grad.calls == res.gradtape_calls["value_and_grad"]
    assert res.nhev == hvp.calls == res.gradtape_calls["hessp"] > 0
    shapes = {v.type.shape for e in hvp.fn.eqns for v in e.outvars}
    assert (100, 100) not in shapes  # no Hessian-sized intermediate


def test_value_and_gradient_are_cached_on_the_last_point():
    objective = gt.scipy.Objective(rosenbrock)
    x = np.array([0.5, -0.3, 1.2])
    f, g = objective.fun(x), objective.jac(x)
    x_again = x.copy()
    assert objective.jac(x_again) is not g  # a fresh copy each time: SciPy may write into it
    assert objective.fun(x_again) == f and objective.calls["value_and_grad"] == 1
    x[0] = 0.0  # SciPy may change its x in place: the cache keeps its own copy
    objective.fun(x)
    assert objective.calls["value_and_grad"] == 2
    np.testing.assert_allclose(g, scipy_optimize.rosen_der(np.array([0.5, -0.3, 1.2])), rtol=1e-12)
    p = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(objective.hessp(x, p), scipy_optimize.rosen_hess_prod(x, p), rtol=1e-12)
    np.testing.assert_allclose(objective.hess(x), scipy_optimize.rosen_hess(x), rtol=1e-12)


@pytest.mark.parametrize("method", ["trust-krylov", "trust-ncg", "trust-constr", "trust-exact", "BFGS", "CG"])
def test_other_methods_reach_the_minimum(method):
    res = gt.scipy.minimize(rosenbrock, np.zeros(4), method=method, options={"maxiter": 3000})
    np.testing.assert_allclose(res.x, np.ones(4), atol=1e-4)
    if method in ("trust-krylov", "trust-ncg", "trust-constr"):
        assert res.gradtape_calls["hessp"] > 0 and res.gradtape_calls["hess"] == 0
    if method == "trust-exact":
        assert res.gradtape_calls["hess"] > 0


def test_args_are_arguments_of_the_compiled_function_and_inputs_become_float64():
    def least_squares(x, a, b):
        r = a @ x - b
        return 0.5 * gt.sum(r * r)

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(20, 4)), rng.normal(size=20)
    res = gt.scipy.minimize(least_squares, [0, 0, 0, 0], method="BFGS", args=(a, b))
    np.testing.assert_allclose(res.x, np.linalg.lstsq(a, b, rcond=None)[0], atol=1e-5)
    assert res.x.dtype == np.float64
    res2 = gt.scipy.minimize(least_squares, np.zeros(4), method="L-BFGS-B", args=(a, 2 * b))
    np.testing.assert_allclose(res2.x, 2 * res.x, atol=1e-4)


def test_bounds_pass_through():
    res = gt.scipy.minimize(rosenbrock, np.zeros(5), method="L-BFGS-B", bounds=[(None, 0.5)] * 5)
    assert np.all(res.x <= 0.5 + 1e-12) and res.x[0] > 0.4


def test_derivative_free_methods_get_no_gradient():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SciPy warns when given a jac it does not use
        res = gt.scipy.minimize(rosenbrock, np.array([-1.0, 1.0]), method="Nelder-Mead",
                                options={"xatol": 1e-8, "fatol": 1e-12})
    np.testing.assert_allclose(res.x, np.ones(2), atol=1e-5)
    assert res.gradtape_calls["value"] == res.nfev and res.gradtape_calls["value_and_grad"] == 0


def test_bad_inputs():
    with pytest.raises(ValueError, match="x0 must be a vector"):
        gt.scipy.minimize(rosenbrock, np.zeros((2, 2)))
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
        gt.scipy.minimize(lambda x: x * 2.0, np.zeros(3), method="BFGS")


def test_missing_scipy_gives_an_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)  # makes `import scipy.optimize` fail
    with pytest.raises(ImportError, match=r"pip install gradtape\[scipy\]"):
        gt.scipy.minimize(rosenbrock, np.zeros(3))
