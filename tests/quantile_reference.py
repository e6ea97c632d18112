"""A reference for method="closest_observation" quantiles that holds on every NumPy the project
supports.

NumPy 2.0 (the floor) picks the order statistic below the right one where n * q lies halfway
between two (np.quantile(np.arange(7.0), 0.5, method="closest_observation") is 2.0 there, 3.0
from NumPy 2.1). The reference is the method's definition (Hyndman and Fan's type 3, as NumPy's
docs give it): the order statistic of 1-based rank round-half-to-even(n * q), clipped to 1..n.
`tests/functions/test_statistics.py` checks it against NumPy's own where NumPy has the fix.
"""
from __future__ import annotations

import numpy as np

FIXED_IN = "2.1.0"  # the first NumPy whose closest_observation the definition matches


def quantile_reference(x, q, axis=None, method="linear", keepdims=False):
    """np.quantile(x, q, axis=axis, method=method, keepdims=keepdims), closest_observation by its definition."""
    x = np.asarray(x)
    if method != "closest_observation":
        return np.quantile(x, q, axis=axis, method=method, keepdims=keepdims)
    axes = tuple(range(x.ndim)) if axis is None else tuple(
        a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    kept = [d for d in range(x.ndim) if d not in axes]
    rows = np.sort(np.transpose(x, kept + list(axes)).reshape(-1, int(np.prod([x.shape[a] for a in axes]))), axis=-1)
    n = rows.shape[-1]
    rank = np.clip(np.round(n * np.asarray(q, np.float64)).astype(np.int64), 1, n)  # np.round: half to even
    picked = rows[:, rank.reshape(-1) - 1]                                          # rows, then q's
    out = np.moveaxis(picked, 0, -1).reshape(np.shape(q) + tuple(x.shape[d] for d in kept))
    if keepdims:
        out = np.expand_dims(out, tuple(np.ndim(q) + a for a in axes))
    return out
