"""Small functions the AOT tests compile, with hand-written NumPy references."""
from __future__ import annotations

import numpy as np

import gradtape as gt


def loss(w, x):
    """A tanh layer (matmul, transcendental, sum) plus a weight penalty: a scalar."""
    h = gt.tanh(x @ w)
    return gt.sum(gt.sin(h) * h) + 0.5 * gt.sum(w * w)


def loss_np(w, x):
    h = np.tanh(x @ w)
    return np.sum(np.sin(h) * h) + 0.5 * np.sum(w * w)


def loss_grads_np(w, x):
    """(d/dw, d/dx) of loss."""
    h = np.tanh(x @ w)
    dz = (np.cos(h) * h + np.sin(h)) * (1 - h * h)
    return x.T @ dz + w, dz @ w.T


def data(seed=0, m=5, k=4, n=3, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(k, n)) * 0.5).astype(dtype), rng.normal(size=(m, k)).astype(dtype)
