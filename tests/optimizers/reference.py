"""Independent NumPy references of the optimizers, written from the published formulas.

Each takes a parameter, a list of gradients (one per step) and a learning
rate per step, and returns the parameter and slots after every step. They
are written in the textbook form, not in gradtape's: Adam as the paper's
Algorithm 1 with bias-corrected moments and Keras's "epsilon hat"
(epsilon_hat = epsilon / sqrt(1 - beta_2 ** t) in the bias-corrected form), SGD
and RMSprop as Keras's documentation states them.
"""
import numpy as np


def sgd(p, grads, lrs, momentum=0.0, nesterov=False, weight_decay=None):
    p = np.array(p, dtype=np.float64)
    velocity = np.zeros_like(p)
    history = []
    for g, lr in zip(grads, lrs):
        if weight_decay is not None:
            p = p * (1.0 - weight_decay * lr)
        if momentum == 0.0:
            p = p - lr * g
        else:
            velocity = momentum * velocity - lr * g
            p = p + (momentum * velocity - lr * g if nesterov else velocity)
        history.append({"p": p.copy(), "momentum": velocity.copy()})
    return history


def adam(p, grads, lrs, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, weight_decay=None):
    p = np.array(p, dtype=np.float64)
    m, v, v_max = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    history = []
    for t, (g, lr) in enumerate(zip(grads, lrs), start=1):
        if weight_decay is not None:
            p = p * (1.0 - weight_decay * lr)
        m = beta_1 * m + (1.0 - beta_1) * g
        v = beta_2 * v + (1.0 - beta_2) * g ** 2
        v_max = np.maximum(v_max, v)
        m_hat = m / (1.0 - beta_1 ** t)
        v_hat = (v_max if amsgrad else v) / (1.0 - beta_2 ** t)
        epsilon_hat = epsilon / np.sqrt(1.0 - beta_2 ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + epsilon_hat)
        history.append({"p": p.copy(), "momentum": m.copy(), "velocity": v.copy(), "velocity_hat": v_max.copy()})
    return history


def rmsprop(p, grads, lrs, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    p = np.array(p, dtype=np.float64)
    mean_square, mean, buf = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    history = []
    for g, lr in zip(grads, lrs):
        mean_square = rho * mean_square + (1.0 - rho) * g ** 2
        mean = rho * mean + (1.0 - rho) * g
        variance = mean_square - mean ** 2 if centered else mean_square
        step = lr * g / np.sqrt(variance + epsilon)
        buf = momentum * buf + step
        p = p - (buf if momentum > 0.0 else step)
        history.append({"p": p.copy(), "velocity": mean_square.copy(), "average_gradient": mean.copy(),
                        "momentum": buf.copy()})
    return history
