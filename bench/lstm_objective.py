"""ADBench's LSTM objective, written with Python for loops as a new user writes it.

Two stacked LSTM layers read a sequence of characters (one-hot rows, or any
rows) and predict the next one; the objective is the negative log-likelihood
of the sequence, averaged (ADBench's `lstm_objective`, Srajer et al. 2018).
Its parameters: `main` (2 layers x 2, 4 hidden), per layer a row of weights
and a row of biases for the four gates; `extra` (3, hidden), the input
scale and the output's scale and offset; `state` (2 layers x 2, hidden),
each layer's hidden and cell state. `np_` is the array module: gradtape, or
NumPy for the reference.
"""
from __future__ import annotations

import numpy as np


_sigmoids: dict = {}  # array module -> its sigmoid


def sigmoid_of(np_):
    """The module's own sigmoid (gradtape, PyTorch, the JAX wrapper), else ADBench's
    1 / (1 + exp(-x)) written with NumPy. Looked up once per module: `hasattr(np, "sigmoid")`
    raises inside NumPy's module __getattr__ (about 1.2 us), which asked six times per
    character made NumPy's own run a fifth slower than the code a NumPy user writes."""
    f = _sigmoids.get(np_)
    if f is None:
        f = getattr(np_, "sigmoid", None) or (lambda x: 1 / (1 + np.exp(-x)))
        _sigmoids[np_] = f
    return f


def lstm_model(np_, weight, bias, hidden, cell, inp):
    n = hidden.shape[0]
    sigmoid = sigmoid_of(np_)
    gates = np_.concatenate([inp, hidden, inp, hidden]) * weight + bias
    forget = sigmoid(gates[0:n])
    ingate = sigmoid(gates[n:2 * n])
    outgate = sigmoid(gates[2 * n:3 * n])
    change = np_.tanh(gates[3 * n:])
    cell = cell * forget + ingate * change
    hidden = outgate * np_.tanh(cell)
    return hidden, cell


def lstm_predict(np_, main, extra, state, x):
    x = x * extra[0]
    new_state = []
    for i in range(0, len(state), 2):
        hidden, cell = lstm_model(np_, main[i], main[i + 1], state[i], state[i + 1], x)
        new_state += [hidden, cell]
        x = hidden
    return x * extra[1] + extra[2], new_state


def lstm_objective(np_, main, extra, state, sequence):
    total = 0.0
    count = 0
    hidden = sequence.shape[1]
    s = [state[i] for i in range(state.shape[0])]
    for t in range(sequence.shape[0] - 1):
        ypred, s = lstm_predict(np_, main, extra, s, sequence[t])
        ynorm = ypred - np_.log(np_.sum(np_.exp(ypred)) + 2)
        total = total + np_.sum(sequence[t + 1] * ynorm)
        count += hidden
    return -total / count


def inputs(characters: int, hidden: int = 16, layers: int = 2, seed: int = 0):
    """(main, extra, state, sequence) as ADBench's generator makes them: uniform parameters
    and one-hot characters."""
    rng = np.random.default_rng(seed)
    main = rng.uniform(-1, 1, (2 * layers, 4 * hidden))
    extra = rng.uniform(-1, 1, (3, hidden))
    state = rng.uniform(-1, 1, (2 * layers, hidden))
    sequence = np.zeros((characters, hidden))
    sequence[np.arange(characters), rng.integers(0, hidden, characters)] = 1.0
    return main, extra, state, sequence
