"""Reductions over any axis split across threads (codegen/parallel.py, parallel_leading.py), in
specialized and dynamic versions: right values against NumPy, the same bits for 1, 2 and 3
threads, and a dynamic version's bits equal to the specialized version's."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import codegen, runtime
from gradtape.codegen.parallel import PARALLEL_FOR, UNIT_ELEMENTS
from gradtape.codegen.parallel_leading import MAX_PARTIALS

from .parallel_helpers import restore_settings, same_bits_for_any_thread_count  # noqa: F401

U = UNIT_ELEMENTS


def _native(f, x):
    cf = runtime.compile_function(gt.make_ir(f, x))
    assert cf.native, cf.fallback_reason
    return lambda x: cf(x)[0]


def _split(f, x) -> bool:
    return PARALLEL_FOR in str(codegen.lower(gt.make_ir(f, x), "f").module)


def _tolerance(dtype, terms):
    """Sums in another order: float64 (the accumulator of both dtypes) rounding over `terms` terms,
    plus the rounding of a float32 result."""
    return dict(rtol=(1e-6 if dtype == np.float32 else 0) + 4e-16 * terms, atol=1e-12 * terms)


CASES = [  # (shape, axes): every axis of 2-d and 3-d arrays, first axis reduced and kept
    ((2000, 37), (0,)), ((2000, 37), (1,)), ((37, 2000), (0,)),
    ((900, 9, 11), (0,)), ((900, 9, 11), (1,)), ((900, 9, 11), (2,)),
    ((900, 9, 11), (0, 2)), ((900, 9, 11), (0, 1)), ((900, 9, 11), (1, 2)),
    ((3 * U + 5,), (0,)), ((300, 250), (0, 1)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape, axes", CASES)
@pytest.mark.parametrize("kind", ["sum", "max"])
def test_reduction_over_any_axes_is_split_and_right(shape, axes, kind, dtype):
    x = np.random.default_rng(len(shape) + sum(axes)).uniform(-1, 1, shape).astype(dtype)
    f = lambda x: getattr(gt, kind)(x * 2.0 - 0.5, axis=axes)  # noqa: E731
    (got,) = same_bits_for_any_thread_count(_native(f, x), x)
    terms = (x * dtype(2.0) - dtype(0.5)).astype(np.float64)  # computed in x's dtype, summed in float64
    want = getattr(np, kind)(terms, axis=axes)
    assert got.dtype == dtype
    if kind == "max":
        assert np.array_equal(got, want.astype(dtype))
    else:
        np.testing.assert_allclose(got, want, **_tolerance(dtype, x.size // max(want.size, 1)))
    assert _split(f, x)


def test_column_sums_use_at_most_max_partials_units_and_match_numpy():
    # More rows than MAX_PARTIALS units of the minimum rows: units grow, results stay right.
    x = np.random.default_rng(3).uniform(-1, 1, (MAX_PARTIALS * 40 + 3, 129))
    f = lambda x: gt.sum(x, axis=0)  # noqa: E731
    (got,) = same_bits_for_any_thread_count(_native(f, x), x)
    np.testing.assert_allclose(got, x.sum(axis=0), rtol=1e-12, atol=1e-11)


def test_few_long_rows_are_left_whole():
    # Two rows: a unit's partial result would be as large as the rows it reads.
    x = np.random.default_rng(4).uniform(-1, 1, (2, 3 * U))
    f = lambda x: gt.sum(x, axis=0)  # noqa: E731
    assert not _split(f, x)
    (got,) = same_bits_for_any_thread_count(_native(f, x), x)
    np.testing.assert_allclose(got, x.sum(axis=0), rtol=1e-15)


def test_nan_and_signed_zeros_of_column_maxima():
    x = np.zeros((4 * U // 8, 8))
    x[:, 1] = -0.0
    x[777, 2] = np.nan
    x[:, 3] = -np.inf
    f = lambda x: gt.max(x, axis=0)  # noqa: E731
    (got,) = same_bits_for_any_thread_count(_native(f, x), x)
    np.testing.assert_array_equal(got, x.max(axis=0))


# --- dynamic versions -------------------------------------------------------------------------

DYNAMIC = [  # (name, f, numpy reference): the first axis holds the run-time N
    ("full", lambda x: gt.sum(x * x), lambda x: np.sum(x * x)),
    ("rows", lambda x: gt.sum(x * x, axis=1), lambda x: np.sum(x * x, axis=1)),
    ("columns", lambda x: gt.sum(x * x, axis=0), lambda x: np.sum(x * x, axis=0)),
    ("column max", lambda x: gt.max(x, axis=0), lambda x: np.max(x, axis=0)),
]


@pytest.mark.parametrize("name, f, reference", DYNAMIC, ids=[d[0] for d in DYNAMIC])
def test_dynamic_version_reductions_give_the_specialized_bits_for_any_thread_count(name, f, reference):
    rng = np.random.default_rng(5)
    cols = 24
    dynamic = gt.differentiable(f)
    for rows in (3000, 3500):  # the second size makes the dynamic version
        dynamic(rng.uniform(-1, 1, (rows, cols)))
    for rows in (2, 5, 2 * U // cols - 1, 3 * U // cols + 7, MAX_PARTIALS * 90 + 1):
        x = rng.uniform(-1, 1, (rows, cols))
        want = np.asarray(gt.differentiable(f, dynamic=False)(x))
        np.testing.assert_allclose(want, reference(x), rtol=1e-12, atol=1e-12)
        (got,) = same_bits_for_any_thread_count(dynamic, x)
        assert np.array_equal(got, want), f"rows={rows}: the dynamic version's bits differ"
    assert dynamic.cache_info().compiles == 2  # the first size, then the dynamic version for all others


def test_a_dynamic_version_splits_its_reductions():
    from gradtape.codegen.dynamic import lower_dynamic
    from gradtape.codegen.dynamic_generalize import generalize
    from gradtape.ir.optimize import optimize

    for _, f, _ in DYNAMIC:
        f1 = optimize(gt.make_ir(f, np.ones((3000, 24))))
        f2 = optimize(gt.make_ir(f, np.ones((3500, 24))))
        sym = generalize(f1, 3000, f2, 3500)
        assert sym is not None
        assert PARALLEL_FOR in str(lower_dynamic(sym.fn, "f").module)
