"""Op specs of the scans, statistics and predicates (issue 15 points 2 and 6):
cumsum, cumprod, diff, nansum, nanmean, average, ptp, median, quantile,
percentile, std/var over groups of one, logsumexp's b=, and predicates used
inside differentiable expressions.

They are compositions of existing ops, so their specs list the ops they are
built from. Order statistics are checked at inputs without ties
(`distinct`), where a finite-difference step never changes which element is
selected; ties have their own tests in tests/functions/test_statistics.py.
"""
from __future__ import annotations

import numpy as np

import gradtape as gt

from .op_specs import OpSpec, args, normal, positive
from .specs_reduce import distinct, with_zeros


def with_nans(*shape, count=1):
    """Normal values with `count` entries set to NaN."""
    def make(rng):
        x = rng.standard_normal(shape)
        x.reshape(-1)[rng.choice(x.size, count, replace=False)] = np.nan
        return x

    return make


def _dividing_by_zero(compute):
    """compute() where 1/0 is meant (its inf is the point), without NumPy's warning."""
    with np.errstate(divide="ignore"):
        return compute()


def _spec(name, fn, makers, ops, numpy_fn, **kw):
    return OpSpec(name, fn, args(*makers), ops, numpy_fn=numpy_fn, **kw)


_SCAN = ("slice", "pad", "add")
_PROD_SCAN = ("slice", "pad", "mul")
_RANK = ("argsort", "gather", "ne", "where")

SPECS = [
    # --- scans -----------------------------------------------------------------------
    _spec("cumsum_flat", lambda x: gt.cumsum(x), [normal(2, 3)], _SCAN, np.cumsum),
    _spec("cumsum_axis1", lambda x: np.cumsum(x, axis=1), [normal(2, 5)], _SCAN,
          lambda x: np.cumsum(x, axis=1)),
    _spec("cumsum_axis0_long", lambda x: np.cumsum(x, axis=0) * x, [normal(9, 2)], _SCAN,
          lambda x: np.cumsum(x, axis=0) * x),
    _spec("cumsum_dtype_float32", lambda x: gt.cumsum(x, dtype="float32"), [normal(4)], _SCAN,
          lambda x: np.cumsum(x, dtype="float32")),
    _spec("cumprod_flat", lambda x: np.cumprod(x), [normal(2, 3)], _PROD_SCAN, np.cumprod),
    _spec("cumprod_axis-1", lambda x: gt.cumprod(x, axis=-1), [normal(3, 4)], _PROD_SCAN,
          lambda x: np.cumprod(x, axis=-1)),
    _spec("cumprod_one_zero", lambda x: np.cumprod(x), [with_zeros(6)], _PROD_SCAN, np.cumprod),
    _spec("cumprod_two_zeros", lambda x: np.cumprod(x, axis=1), [with_zeros(2, 5, count=3)],
          _PROD_SCAN, lambda x: np.cumprod(x, axis=1)),
    _spec("diff", lambda x: np.diff(x), [normal(2, 5)], ("slice", "sub"), np.diff),
    _spec("diff_n2_axis0", lambda x: np.diff(x * x, n=2, axis=0), [normal(5, 2)], ("slice", "sub"),
          lambda x: np.diff(x * x, n=2, axis=0)),
    _spec("diff_prepend_append", lambda x, y: gt.diff(x, prepend=y, append=0.5), [normal(3), normal(1)],
          ("concatenate", "slice", "sub"), lambda x, y: np.diff(x, prepend=y, append=0.5)),
    # --- sums and means --------------------------------------------------------------
    _spec("nansum", lambda x: np.nansum(x, axis=1) * 2.0, [with_nans(3, 4, count=2)],
          ("ne", "where", "reduce_sum"), lambda x: np.nansum(x, axis=1) * 2.0),
    _spec("nanmean", lambda x: np.nanmean(x), [with_nans(3, 4, count=3)],
          ("ne", "where", "reduce_sum", "div"), np.nanmean),
    _spec("nanmean_axis0_keepdims", lambda x: gt.nanmean(x, axis=0, keepdims=True),
          [with_nans(4, 3)], ("ne", "where", "reduce_sum", "div"),
          lambda x: np.nanmean(x, axis=0, keepdims=True)),
    _spec("nanprod", lambda x: np.nanprod(x, axis=0), [with_nans(3, 4, count=2)],
          ("ne", "where", "reduce_prod"), lambda x: np.nanprod(x, axis=0)),
    _spec("nanmax", lambda x: np.nanmax(x, axis=1), [lambda rng: np.where(
        np.arange(12).reshape(3, 4) % 5 == 1, np.nan, distinct(3, 4)(rng))],
          ("ne", "where", "reduce_max"), lambda x: np.nanmax(x, axis=1)),
    _spec("nanmin_keepdims", lambda x: gt.nanmin(x, axis=0, keepdims=True), [lambda rng: np.where(
        np.arange(12).reshape(4, 3) % 5 == 2, np.nan, distinct(4, 3)(rng))],
          ("ne", "where", "reduce_min"), lambda x: np.nanmin(x, axis=0, keepdims=True)),
    _spec("nanvar_ddof1", lambda x: np.nanvar(x, axis=1, ddof=1), [with_nans(3, 4, count=3)],
          ("ne", "where", "reduce_sum", "div", "maximum"), lambda x: np.nanvar(x, axis=1, ddof=1)),
    _spec("nanstd", lambda x: np.nanstd(x, axis=0), [with_nans(4, 3, count=2)],
          ("ne", "where", "reduce_sum", "sqrt", "gt"), lambda x: np.nanstd(x, axis=0)),
    _spec("nancumsum", lambda x: np.nancumsum(x, axis=1), [with_nans(2, 5, count=2)],
          ("ne", "where", "slice", "pad", "add"), lambda x: np.nancumsum(x, axis=1)),
    _spec("nancumprod", lambda x: np.nancumprod(x), [with_nans(6, count=2)],
          ("ne", "where", "slice", "pad", "mul"), np.nancumprod),
    _spec("average_weights", lambda x, w: np.average(x, weights=w), [normal(2, 3), positive(2, 3)],
          ("mul", "reduce_sum", "div"), lambda x, w: np.average(x, weights=w)),
    _spec("average_1d_weights_axis1", lambda x, w: np.average(x, axis=1, weights=w),
          [normal(3, 4), positive(4)], ("mul", "reduce_sum", "div"),
          lambda x, w: np.average(x, axis=1, weights=w)),
    _spec("average_no_weights", lambda x: gt.average(x, axis=0), [normal(3, 2)], ("reduce_sum",),
          lambda x: np.average(x, axis=0)),
    _spec("std_axis_of_one", lambda x: np.std(x, axis=1) + x[:, 0], [normal(3, 1)], ("reduce_sum",),
          lambda x: np.std(x, axis=1) + x[:, 0]),
    _spec("std_ddof1_keepdims", lambda x: gt.std(x, axis=0, ddof=1, keepdims=True), [normal(4, 3)],
          ("reduce_sum", "sqrt"), lambda x: np.std(x, axis=0, ddof=1, keepdims=True)),
    _spec("var_axis_of_one_ddof0", lambda x: np.var(x, axis=0) * x, [normal(1, 3)], ("reduce_sum",),
          lambda x: np.var(x, axis=0) * x),
    # --- ranges and order statistics ------------------------------------------------
    _spec("ptp", lambda x: np.ptp(x, axis=1), [distinct(3, 4)], ("reduce_max", "reduce_min", "sub"),
          lambda x: np.ptp(x, axis=1)),
    _spec("median_odd", lambda x: np.median(x), [distinct(5)], _RANK, np.median),
    _spec("median_even_axis0", lambda x: np.median(x, axis=0), [distinct(4, 3)], _RANK,
          lambda x: np.median(x, axis=0)),
    _spec("median_axes_keepdims", lambda x: gt.median(x, axis=(0, 2), keepdims=True),
          [distinct(2, 3, 2)], _RANK, lambda x: np.median(x, axis=(0, 2), keepdims=True)),
    _spec("quantile_linear", lambda x: np.quantile(x, [0.1, 0.5, 0.85], axis=1), [distinct(2, 5)],
          _RANK, lambda x: np.quantile(x, [0.1, 0.5, 0.85], axis=1)),
    _spec("quantile_scalar_q", lambda x: gt.quantile(x * x, 0.3), [distinct(6)], _RANK,
          lambda x: np.quantile(x * x, 0.3)),
    *[_spec(f"quantile_{m}", lambda x, m=m: np.quantile(x, [0.2, 0.7], axis=0, method=m),
            [distinct(5, 2)], _RANK, lambda x, m=m: np.quantile(x, [0.2, 0.7], axis=0, method=m))
      for m in ("lower", "higher", "midpoint", "nearest")],
    _spec("percentile", lambda x: np.percentile(x, 40, axis=-1, keepdims=True), [distinct(3, 4)],
          _RANK, lambda x: np.percentile(x, 40, axis=-1, keepdims=True)),
    # --- logsumexp with scale factors -------------------------------------------------
    _spec("logsumexp_b", lambda x, b: gt.logsumexp(x, axis=1, b=b), [normal(2, 3), positive(2, 3)],
          ("reduce_max", "exp", "log", "reduce_sum", "mul"),
          lambda x, b: np.log(np.sum(b * np.exp(x), axis=1))),
    _spec("logsumexp_b_large", lambda x, b: gt.logsumexp(x * 400.0, b=b, keepdims=True),
          [normal(3), positive(3)], ("reduce_max", "exp", "log", "reduce_sum", "mul"),
          lambda x, b: np.reshape(np.max(x * 400.0) + np.log(np.sum(b * np.exp(x * 400.0 - np.max(x * 400.0)))), (1,))),
    # --- predicates inside differentiable expressions -------------------------------
    # floor() is locally constant at these inputs, so finite differences see the same masks.
    _spec("isfinite_mask", lambda x: _dividing_by_zero(lambda: gt.where(np.isfinite(1.0 / np.floor(x)), x * x, x)),
          [lambda rng: np.array([0.5, 1.5, -0.5, 0.25, 2.5])], ("floor", "div", "abs", "lt", "where"),
          lambda x: _dividing_by_zero(lambda: np.where(np.isfinite(1.0 / np.floor(x)), x * x, x))),
    _spec("isclose_select", lambda x, y: gt.where(np.isclose(x, y, atol=0.1), x, y * 2.0),
          [normal(6), lambda rng: np.array([0.0, 5.0, 0.0, 5.0, 0.0, 5.0])],
          ("sub", "abs", "le", "where"),
          lambda x, y: np.where(np.isclose(x, y, atol=0.1), x, y * 2.0)),
    _spec("all_any_select", lambda x: gt.where(np.all(np.floor(x), axis=1, keepdims=True), x * x,
                                              gt.where(np.any(np.floor(x), axis=1, keepdims=True), x, -x)),
          [lambda rng: np.array([[1.5, 2.5], [0.5, 1.5], [0.25, 0.75]])],
          ("floor", "eq", "ne", "cast", "reduce_sum", "gt", "where"),
          lambda x: np.where(np.all(np.floor(x), axis=1, keepdims=True), x * x,
                             np.where(np.any(np.floor(x), axis=1, keepdims=True), x, -x))),
    _spec("count_nonzero_scale", lambda x: x * gt.cast(np.count_nonzero(np.floor(x), axis=0), "float64"),
          [lambda rng: np.array([[0.5, 1.5], [1.25, 0.75], [2.5, 1.5]])], ("floor", "ne", "cast", "reduce_sum"),
          lambda x: x * np.count_nonzero(np.floor(x), axis=0).astype(np.float64)),
]
