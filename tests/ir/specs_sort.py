"""Op specs of the argsort op and what is built on it (issue 15): sort and argsort along
each axis, partition/argpartition, median, quantile/percentile with every NumPy 2 method,
and the nan* forms.

Inputs have no ties (`distinct`), so a finite-difference step never reorders them; the
permutation is still exercised on ties in tests/functions/test_sort_op.py. The nan* specs
put NaNs at fixed places (their derivative is 0 and finite differences leave them NaN).
"""
from __future__ import annotations

import numpy as np

import gradtape as gt
from gradtape.functions.quantile_positions import METHODS
from tests.quantile_reference import quantile_reference

from .op_specs import OpSpec, args
from .specs_reduce import distinct

_SORT = ("argsort", "gather")


def _spec(name, fn, makers, numpy_fn, ops=_SORT, **kw):
    return OpSpec(name, fn, args(*makers), ops, numpy_fn=numpy_fn, **kw)


def distinct_with_nans(*shape, every=4):
    """`distinct` values with every `every`-th one NaN (no group is all NaN for every > 1)."""
    def make(rng):
        x = distinct(*shape)(rng)
        x.reshape(-1)[1::every] = np.nan
        return x

    return make


def _weights(shape):
    return np.linspace(0.5, 2.0, int(np.prod(shape))).reshape(shape)


SPECS = [
    _spec("sort_last_axis_3d", lambda x: np.sort(x) * _weights((2, 3, 5)), [distinct(2, 3, 5)],
          lambda x: np.sort(x) * _weights((2, 3, 5))),
    _spec("sort_axis0_squared", lambda x: np.sort(x, axis=0) ** 2, [distinct(6, 2)],
          lambda x: np.sort(x, axis=0) ** 2),
    _spec("sort_middle_axis", lambda x: np.sin(gt.sort(x, axis=1)), [distinct(2, 4, 3)],
          lambda x: np.sin(np.sort(x, axis=1))),
    _spec("sort_flat", lambda x: np.sort(x * x, axis=None) * np.arange(12.0), [distinct(3, 4)],
          lambda x: np.sort(x * x, axis=None) * np.arange(12.0)),
    _spec("sort_long_row", lambda x: np.sort(x)[..., ::7] * 3.0, [distinct(2, 70)],
          lambda x: np.sort(x)[..., ::7] * 3.0, order=2),
    _spec("argsort_as_weights", lambda x: x * np.argsort(x, axis=1), [distinct(3, 5)],
          lambda x: x * np.argsort(x, axis=1, kind="stable")),
    _spec("take_along_argsort_desc", lambda x: np.take_along_axis(x, np.argsort(-x, axis=0), axis=0) ** 3,
          [distinct(5, 2)], lambda x: np.take_along_axis(x, np.argsort(-x, axis=0), axis=0) ** 3),
    _spec("partition_kth", lambda x: np.partition(x, 3, axis=1)[:, 3] * 2.0, [distinct(3, 6)],
          lambda x: np.partition(x, 3, axis=1)[:, 3] * 2.0),
    _spec("argpartition_kth", lambda x: np.take_along_axis(x, np.argpartition(x, 1), -1)[..., 1] ** 2,
          [distinct(4, 5)], lambda x: np.take_along_axis(x, np.argpartition(x, 1), -1)[..., 1] ** 2),
    _spec("median_odd", lambda x: np.median(x), [distinct(7)], np.median),
    _spec("median_even_axis0", lambda x: np.median(x, axis=0), [distinct(4, 3)],
          lambda x: np.median(x, axis=0)),
    _spec("median_axes_keepdims", lambda x: gt.median(x, axis=(0, 2), keepdims=True), [distinct(2, 3, 2)],
          lambda x: np.median(x, axis=(0, 2), keepdims=True)),
    _spec("nanmedian_axis1", lambda x: np.nanmedian(x, axis=1), [distinct_with_nans(4, 5, every=3)],
          lambda x: np.nanmedian(x, axis=1)),
    _spec("nanmedian_flat", lambda x: np.nanmedian(x), [distinct_with_nans(2, 5)], np.nanmedian),
    *[_spec(f"quantile_{m}", lambda x, m=m: np.quantile(x, [0.15, 0.5, 0.9], axis=1, method=m),
            [distinct(2, 7)], lambda x, m=m: quantile_reference(x, [0.15, 0.5, 0.9], axis=1, method=m))
      for m in METHODS],
    *[_spec(f"nanquantile_{m}", lambda x, m=m: np.nanquantile(x, [0.2, 0.65], axis=0, method=m),
            [distinct_with_nans(6, 3, every=4)],
            lambda x, m=m: np.nanquantile(x, [0.2, 0.65], axis=0, method=m), order=2)
      for m in METHODS],
    _spec("percentile_keepdims", lambda x: np.percentile(x, 40, axis=-1, keepdims=True), [distinct(3, 4)],
          lambda x: np.percentile(x, 40, axis=-1, keepdims=True)),
    _spec("nanpercentile_hazen", lambda x: np.nanpercentile(x, [10.0, 90.0], axis=1, method="hazen"),
          [distinct_with_nans(3, 6, every=5)],
          lambda x: np.nanpercentile(x, [10.0, 90.0], axis=1, method="hazen")),
]
