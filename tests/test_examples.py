"""The scripts in examples/ run on their small sizes and reach the right answers,
checked against independent solutions (Newton's method in NumPy, scipy.stats).

Their staged functions run in the reference interpreter here: what is tested
is the examples' answers, and compiling each example's functions would cost
seconds apiece (test_train_step.py and test_scipy_interop.py run the same
machinery natively)."""
import importlib.util
import pathlib

import numpy as np
import pytest

from gradtape import runtime
from gradtape.staging import program

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setattr(program, "compiler", runtime.interpreted)


def load(name):
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def logistic_optimum(X, y, iterations=30):
    """Newton's method (IRLS) on the mean logistic loss, with an intercept column."""
    A = np.hstack([X, np.ones((len(X), 1))])
    w = np.zeros(A.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-A @ w))
        w -= np.linalg.solve(A.T @ (A * (p * (1 - p))[:, None]), A.T @ (p - y))
    z = A @ w
    return w, np.mean(np.logaddexp(0.0, z) - y * z)


def test_logistic_regression_reaches_the_newton_optimum(capsys):
    out = load("logistic_regression").main(["--small"])
    X, y = out["data"]
    w_opt, loss_opt = logistic_optimum(X, y)
    assert out["losses"][-1] == pytest.approx(loss_opt, abs=1e-8)
    np.testing.assert_allclose(np.append(out["params"]["w"], out["params"]["b"]), w_opt, atol=1e-4)
    assert "final loss" in capsys.readouterr().out


def test_mlp_classifies_the_rings():
    out = load("mlp").main(["--small"])
    assert out["test_accuracy"] > 0.97 and out["train_accuracy"] > 0.97
    assert out["losses"][-1] < out["losses"][0] / 20
    assert out["steps"] == 25 * (512 // 64)


def test_ode_fit_recovers_the_lotka_volterra_parameters():
    module = load("ode_fit")
    out = module.main(["--small"])
    assert out["result"].success
    assert np.max(out["relative_error"]) < 0.05  # 2% noise on 12 observations
    np.testing.assert_allclose(out["theta"], module.TRUE, rtol=0.05)
    # the fitted trajectory is at the noise level: mean squared log error ~ 0.02 ** 2
    assert out["result"].fun < 3 * 0.02 ** 2


def test_mle_matches_scipy_stats_and_finite_difference_standard_errors():
    import scipy.stats

    out = load("mle_scipy").main(["--small"])
    x = out["samples"]
    shape, _, scale = scipy.stats.weibull_min.fit(x, floc=0)
    np.testing.assert_allclose(out["theta"], [shape, scale], rtol=1e-5)

    def log_likelihood(theta):
        return np.sum(scipy.stats.weibull_min.logpdf(x, theta[0], scale=theta[1]))

    h, theta = 1e-4, out["theta"]
    hessian = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            e_i, e_j = np.eye(2)[i] * h, np.eye(2)[j] * h
            hessian[i, j] = (log_likelihood(theta + e_i + e_j) - log_likelihood(theta + e_i - e_j)
                             - log_likelihood(theta - e_i + e_j) + log_likelihood(theta - e_i - e_j)) / (4 * h * h)
    np.testing.assert_allclose(out["standard_errors"], np.sqrt(np.diag(np.linalg.inv(-hessian))), rtol=1e-3)


def test_dask_lbfgs_reaches_the_newton_optimum(capsys):
    pytest.importorskip("dask.array")
    pytest.importorskip("scipy")
    out = load("dask_lbfgs").main(["--small"])
    X, y = out["data"]
    w = np.zeros(X.shape[1])
    for _ in range(30):  # Newton's method (IRLS), without an intercept as the example fits none
        p = 1.0 / (1.0 + np.exp(-X @ w))
        w -= np.linalg.solve(X.T @ (X * (p * (1 - p))[:, None]), X.T @ (p - y))
    np.testing.assert_allclose(out["result"].x, w, atol=1e-5)
    assert "final loss" in capsys.readouterr().out
