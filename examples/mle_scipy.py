"""Maximum-likelihood fit of a Weibull distribution with SciPy's Newton-CG and gradtape derivatives.

    python examples/mle_scipy.py [--small]

The negative log-likelihood is written once with gradtape functions.
`gradtape.scipy.minimize` hands SciPy its value and gradient (one compiled
call per evaluation) and Hessian-vector products (compiled forward-over-
reverse, the Hessian never formed). At the optimum, `gradtape.hessian`
gives the observed information, whose inverse estimates the covariance of
the estimates: their standard errors. Needs SciPy (pip install gradtape[scipy]).
"""
import argparse

import numpy as np

import gradtape as gt

TRUE_SHAPE, TRUE_SCALE = 1.7, 3.0


def negative_log_likelihood(theta, x):
    """-sum log f(x | k, lam) for the Weibull density f = (k/lam) (x/lam)^(k-1) exp(-(x/lam)^k)."""
    k, lam = theta[0], theta[1]
    log_ratio = gt.log(x) - gt.log(lam)
    return -gt.sum(gt.log(k) - gt.log(lam) + (k - 1.0) * log_ratio - gt.exp(k * log_ratio))


def nll_of_logs(log_theta, x):
    """The same in log parameters, which are unconstrained (what the optimizer moves)."""
    return negative_log_likelihood(gt.exp(log_theta), x)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="fewer samples (what the tests run)")
    args = parser.parse_args(argv)
    n = 400 if args.small else 5000

    x = TRUE_SCALE * np.random.default_rng(0).weibull(TRUE_SHAPE, size=n)
    res = gt.scipy.minimize(nll_of_logs, np.zeros(2), method="Newton-CG", args=(x,), options={"xtol": 1e-10})
    theta = np.exp(res.x)
    information = gt.hessian(negative_log_likelihood)(theta, x)  # observed Fisher information
    standard_errors = np.sqrt(np.diag(np.linalg.inv(information)))
    print(f"{n} samples; {res.message} ({res.nit} Newton iterations, {res.nfev} evaluations, "
          f"{res.gradtape_calls['hessp']} Hessian-vector products)")
    for name, value, se, true in zip(("shape k", "scale lambda"), theta, standard_errors, (TRUE_SHAPE, TRUE_SCALE)):
        print(f"  {name:13s} {value:.4f} +/- {se:.4f}   (true {true})")
    return {"theta": theta, "standard_errors": standard_errors, "samples": x, "result": res}


if __name__ == "__main__":
    main()
