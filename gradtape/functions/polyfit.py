"""numpy.polyfit on tensors: the least-squares polynomial through points,
as NumPy computes it (the Vandermonde matrix with its columns scaled to unit
norm, then lstsq), so it differentiates in x, y and w through lstsq's
pseudo-inverse. Reached through NumPy (np.polyfit(t, ...)); not exported.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..tracer.numpy_dispatch import implements
from . import elementwise as ew
from . import reductions
from ._promote import as_tensor, promote_float
from .polynomials import vander

__all__: list = []


@implements(np.polyfit)
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Coefficients (highest power first) of the degree-`deg` polynomial that fits y at x in the
    least-squares sense, as numpy.polyfit; with full=True also the residuals, rank, singular
    values and rcond. cov= is not supported.

    Example::

        >>> np.round(np.polyfit(gradtape.constant([0.0, 1.0, 2.0]), [1.0, 3.0, 5.0], 1).numpy(), 12)
        array([2., 1.])
    """
    if cov:
        raise TypeError("polyfit: cov= is not supported on tensors")
    order = int(deg) + 1
    if order < 1:
        raise ValueError("polyfit: expected deg >= 0")
    x, y = promote_float(as_tensor(x), as_tensor(y))
    if x.ndim != 1 or x.shape[0] == 0:
        raise TypeError(f"polyfit: expected a non-empty 1-D x, got shape {x.shape}")
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise TypeError(f"polyfit: expected y of shape ({x.shape[0]},) or ({x.shape[0]}, k), got {y.shape}")
    if rcond is None:
        rcond = x.shape[0] * np.finfo(x.dtype).eps
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = as_tensor(w)
        lhs = ew.multiply(lhs, w[:, None])
        rhs = ew.multiply(rhs, w[:, None] if rhs.ndim == 2 else w)
    scale = ew.sqrt(reductions.sum(ew.multiply(lhs, lhs), axis=0))  # NumPy's scaling: the same rounding
    c, residuals, rank, s = np.linalg.lstsq(ew.divide(lhs, scale), rhs, rcond)
    c = ew.divide(c, scale[:, None] if c.ndim == 2 else scale)
    if isinstance(rank, (int, np.integer)) and rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning, stacklevel=2)
    return (c, residuals, rank, s, rcond) if full else c
