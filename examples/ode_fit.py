"""Fit the four parameters of the Lotka-Volterra equations to noisy observations,
differentiating through an explicit Runge-Kutta integrator.

    python examples/ode_fit.py [--small]

    dx/dt = alpha x - beta x y        (prey)
    dy/dt = delta x y - gamma y       (predators)

The observations come from a fine NumPy integration of the true system
plus 2% noise. The model integrates the same equations with classic RK4,
written with gradtape functions and unrolled over the time grid, so
`gradtape.train_step` compiles the whole trajectory, its gradient with
respect to the parameters and the Adam update into one native call.
The parameters are fitted in log space (they are positive).
"""
import argparse

import numpy as np

import gradtape as gt

TRUE = np.array([1.1, 0.4, 0.1, 0.4])  # alpha, beta, delta, gamma
START = np.array([10.0, 5.0])  # prey, predators at t = 0


def rates(state, theta):
    """The right-hand side, on a state [x, y] (gradtape or NumPy arrays alike)."""
    x, y = state[0], state[1]
    alpha, beta, delta, gamma = theta[0], theta[1], theta[2], theta[3]
    return [alpha * x - beta * x * y, delta * x * y - gamma * y]


def rk4(state, theta, dt):
    """One classic Runge-Kutta step of size dt."""
    def shifted(k, h):
        return [s + h * ki for s, ki in zip(state, k)]

    k1 = rates(state, theta)
    k2 = rates(shifted(k1, dt / 2), theta)
    k3 = rates(shifted(k2, dt / 2), theta)
    k4 = rates(shifted(k3, dt), theta)
    return [s + dt / 6 * (a + 2 * b + 2 * c + d) for s, a, b, c, d in zip(state, k1, k2, k3, k4)]


def trajectory(theta, n_obs, dt_obs, substeps):
    """The states at times dt_obs, 2 dt_obs, ...: a (n_obs, 2) array."""
    state, rows = [START[0], START[1]], []
    for _ in range(n_obs):
        for _ in range(substeps):
            state = rk4(state, theta, dt_obs / substeps)
        rows.append(gt.stack(state) if isinstance(state[0], gt.Tensor) else np.array(state))
    return gt.stack(rows) if isinstance(rows[0], gt.Tensor) else np.stack(rows)


def observations(n_obs, dt_obs, seed=0):
    """The true trajectory (fine NumPy RK4, 20 substeps) with 2% multiplicative noise."""
    clean = trajectory(TRUE, n_obs, dt_obs, substeps=20)
    return clean * (1.0 + 0.02 * np.random.default_rng(seed).normal(size=clean.shape))


def make_loss(n_obs, dt_obs, substeps):
    def loss_fn(log_theta, observed):
        """Mean squared relative error of the model trajectory."""
        model = trajectory(gt.exp(log_theta), n_obs, dt_obs, substeps)
        return gt.mean((gt.log(model) - gt.log(observed)) ** 2)

    return loss_fn


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a shorter time series (what the tests run)")
    args = parser.parse_args(argv)
    n_obs, dt_obs = (12, 0.5) if args.small else (24, 0.5)

    observed = observations(n_obs, dt_obs)
    loss_fn = make_loss(n_obs, dt_obs, substeps=1)
    guess = np.log([0.8, 0.3, 0.15, 0.3])
    print(f"fitting alpha, beta, delta, gamma to {n_obs} noisy observations of (prey, predators)")
    res = gt.scipy.minimize(loss_fn, guess, method="L-BFGS-B", args=(observed,))
    theta = np.exp(res.x)
    error = np.abs(theta / TRUE - 1.0)
    print(f"{res.message}: {res.nit} iterations, {res.nfev} evaluations, loss {res.fun:.3e}")
    print(f"fitted {np.array2string(theta, precision=4)}, true {TRUE}, largest relative error {error.max():.1%}")
    return {"theta": theta, "relative_error": error, "result": res, "observed": observed}


if __name__ == "__main__":
    main()
