"""Logistic regression by full-batch gradient descent with a compiled training step.

    python examples/logistic_regression.py [--small] [--steps 300]

The loss is written once with gradtape functions; `gradtape.train_step`
compiles it, its gradient and the SGD (momentum) update into one native call,
and updates the weights in place.
"""
import argparse

import numpy as np

import gradtape as gt


def make_data(n, d, seed=0):
    """Features X (n, d) and 0/1 labels drawn from a logistic model with known weights."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    true_w = rng.normal(size=d)
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-X @ true_w))).astype(np.float64)
    return X, y, true_w


def loss_fn(params, X, y):
    """Mean negative log-likelihood: softplus(z) - y z, with z = X w + b."""
    z = X @ params["w"] + params["b"]
    return gt.mean(gt.softplus(z) - y * z)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a small problem (what the tests run)")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    n, d = (400, 5) if args.small else (20000, 50)

    X, y, true_w = make_data(n, d)
    params = {"w": np.zeros(d), "b": np.zeros(())}
    step = gt.train_step(loss_fn, gt.optimizers.SGD(learning_rate=0.5, momentum=0.9))
    losses = []
    for k in range(args.steps):
        losses.append(step(params, X, y))
        if k % (args.steps // 5) == 0:
            print(f"step {k:4d}  loss {losses[-1]:.5f}")
    accuracy = np.mean(((X @ params["w"] + params["b"]) > 0) == (y > 0.5))
    print(f"final loss {losses[-1]:.5f}, training accuracy {accuracy:.1%}, "
          f"|w - true w| / |true w| = {np.linalg.norm(params['w'] - true_w) / np.linalg.norm(true_w):.2f}")
    return {"params": params, "losses": losses, "accuracy": accuracy, "data": (X, y), "true_w": true_w}


if __name__ == "__main__":
    main()
