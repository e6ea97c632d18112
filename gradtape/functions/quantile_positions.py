"""Where NumPy's quantile methods read a sorted group: pure NumPy on the
group size and q, never on the values (so the same code serves a static
group size and, tabulated for every count, the NaN-ignoring functions).

The 13 methods are NumPy 2's (numpy.quantile's `method=`): the nine of
Hyndman and Fan (1996) and NumPy's older lower, higher, midpoint, nearest.
They are written from NumPy's documented definitions and checked against
numpy.quantile in tests/functions/test_quantiles.py.
"""
from __future__ import annotations

import numpy as np

# Methods that pick one element of the sorted group (no interpolation).
DISCRETE = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")
# Methods that interpolate between two neighbours: (alpha, beta) of H&F's
# virtual index n * q + alpha + q * (1 - alpha - beta) - 1, or None where the
# index has its own formula.
CONTINUOUS = {
    "averaged_inverted_cdf": None,
    "interpolated_inverted_cdf": (0.0, 1.0),
    "hazen": (0.5, 0.5),
    "weibull": (0.0, 0.0),
    "linear": None,
    "median_unbiased": (1 / 3.0, 1 / 3.0),
    "normal_unbiased": (3 / 8.0, 3 / 8.0),
    "midpoint": None,
}
METHODS = DISCRETE + tuple(CONTINUOUS)


def check_method(name: str, method) -> str:
    if method not in METHODS:
        raise ValueError(f"{name}: method={method!r} is not a quantile method; use one of {', '.join(METHODS)}")
    return method


def _boundary(index, pick_previous):
    """The element index a discrete H&F method picks at virtual index `index`."""
    previous = np.floor(index)
    chosen = np.where(pick_previous(index - previous, index), previous, previous + 1).astype(np.int64)
    return np.maximum(chosen, 0)


def element_index(n: int, q: np.ndarray, method: str) -> np.ndarray:
    """The sorted position a discrete method takes, for groups of n >= 1 values (int64, like q)."""
    q = np.asarray(q, np.float64)
    if method == "inverted_cdf":
        return _boundary(n * q - 1, lambda gamma, _: gamma == 0)
    if method == "closest_observation":  # the nearest even order statistic (1-based) at gamma == 0
        return _boundary(n * q - 1 - 0.5, lambda gamma, index: (gamma == 0) & (np.floor(index) % 2 == 1))
    v = (n - 1) * q
    if method == "lower":
        return np.floor(v).astype(np.int64)
    if method == "higher":
        return np.ceil(v).astype(np.int64)
    if method == "nearest":
        return np.around(v).astype(np.int64)
    raise ValueError(f"element_index: {method!r} is not a discrete method")


def interpolation(n: int, q: np.ndarray, method: str):
    """(previous, next, gamma) of a continuous method for groups of n >= 1 values: the result
    is NumPy's lerp(sorted[previous], sorted[next], gamma)."""
    q = np.asarray(q, np.float64)
    if method == "linear":
        v = (n - 1) * q
    elif method == "averaged_inverted_cdf":
        v = n * q - 1
    elif method == "midpoint":
        v = 0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q))
    else:
        alpha, beta = CONTINUOUS[method]
        v = n * q + (alpha + q * (1 - alpha - beta)) - 1
    v = np.asarray(v, np.float64)
    previous = np.floor(v)
    following = previous + 1
    above, below = v >= n - 1, v < 0
    previous[above] = following[above] = -1  # the last element (gamma is then irrelevant but kept as NumPy's)
    previous[below] = following[below] = 0
    gamma = v - previous
    if method == "averaged_inverted_cdf":
        gamma = np.where(gamma == 0, 0.5, 1.0)
    elif method == "midpoint":
        gamma = np.where(v % 1 == 0, 0.0, 0.5)
    wrap = lambda i: np.where(i < 0, n + i, i).astype(np.int64)  # noqa: E731
    return wrap(previous), wrap(following), np.asarray(gamma, np.float64)
