"""A multilayer perceptron classifier trained with minibatch Adam and a learning-rate schedule.

    python examples/mlp.py [--small] [--epochs 30]

Three classes of points on noisy concentric rings; a 2-64-64-3 tanh MLP.
Each minibatch step (forward, backward, Adam) is one native call of a
`gradtape.train_step`; the learning rate warms up and then follows a
cosine decay, evaluated in Python at each step and passed to the call.
"""
import argparse

import numpy as np

import gradtape as gt


def rings(n, seed=0):
    """n points on three noisy rings of radius 1, 2 and 3, labelled by ring."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = 1.0 + labels + rng.normal(0, 0.15, n)
    return np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1), labels


def init_params(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [gt.Variable(a, name=f"{kind}{i}") for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:]))
            for kind, a in (("w", rng.normal(0, 1 / np.sqrt(m), (m, n))), ("b", np.zeros(n)))]


def logits_of(params, x):
    h = x
    for w, b in zip(params[0:-2:2], params[1:-2:2]):
        h = gt.tanh(h @ w + b)
    return h @ params[-2] + params[-1]


def loss_fn(params, x, onehot):
    """Mean softmax cross-entropy."""
    return -gt.mean(gt.sum(onehot * gt.log_softmax(logits_of(params, x), axis=-1), axis=-1))


def accuracy(params, x, labels):
    return float(np.mean(np.argmax(logits_of(params, x).numpy(), axis=1) == labels))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a small problem (what the tests run)")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args(argv)
    n_train, epochs = (512, 25) if args.small else (4096, 30)
    epochs = args.epochs or epochs

    x, labels = rings(n_train + 1024)
    x_train, y_train, x_test, y_test = x[:n_train], labels[:n_train], x[n_train:], labels[n_train:]
    onehot = np.eye(3)[y_train]
    params = init_params((2, 64, 64, 3))
    steps_per_epoch = n_train // args.batch  # the last partial batch is dropped: one batch shape, one compile
    schedule = gt.optimizers.schedules.CosineDecay(
        0.001, decay_steps=epochs * steps_per_epoch, warmup_target=0.02, warmup_steps=steps_per_epoch)
    step = gt.train_step(loss_fn, gt.optimizers.Adam(schedule))
    rng = np.random.default_rng(1)
    history = []
    for epoch in range(epochs):
        order = rng.permutation(n_train)
        losses = [step(params, x_train[idx], onehot[idx])
                  for idx in order[: steps_per_epoch * args.batch].reshape(steps_per_epoch, args.batch)]
        history.append(float(np.mean(losses)))
        if epoch % max(1, epochs // 6) == 0 or epoch == epochs - 1:
            print(f"epoch {epoch:3d}  loss {history[-1]:.4f}  test accuracy {accuracy(params, x_test, y_test):.1%}")
    result = {"losses": history, "train_accuracy": accuracy(params, x_train, y_train),
              "test_accuracy": accuracy(params, x_test, y_test), "steps": step.calls}
    print(f"{step.calls} steps; train accuracy {result['train_accuracy']:.1%}, "
          f"test accuracy {result['test_accuracy']:.1%}")
    return result


if __name__ == "__main__":
    main()
