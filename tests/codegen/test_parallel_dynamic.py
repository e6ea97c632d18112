"""A dynamic version (one compile for every size, codegen/dynamic.py) splits its large fills
across threads as a specialized version does: the number of units is computed at run time from
the size, so results are the same bits as the specialized version's for any number of threads."""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import codegen
from gradtape.codegen.dynamic import lower_dynamic
from gradtape.codegen.dynamic_generalize import generalize
from gradtape.codegen.parallel import PARALLEL_FOR, UNIT_ELEMENTS
from gradtape.ir.optimize import optimize
from gradtape.runtime import parallel

from .parallel_helpers import restore_settings, rosen, rosen_numpy  # noqa: F401

U = UNIT_ELEMENTS
# Below the smallest split (one unit), around two units, odd sizes, a last unit of one element.
SIZES = [2, 3, U - 1, 2 * U - 1, 2 * U, 2 * U + 1, 3 * U + 7, 5 * U + 1]


def _dynamic_module(f, n1=50_000, n2=60_000) -> str:
    f1 = optimize(gt.make_ir(f, np.ones(n1)))
    f2 = optimize(gt.make_ir(f, np.ones(n2)))
    sym = generalize(f1, n1, f2, n2)
    assert sym is not None
    return str(lower_dynamic(sym.fn, "f").module)


@pytest.mark.parametrize("f", [
    lambda x: x * 2.0 + gt.sin(x),   # a flat fill: units of elements
    gt.grad(rosen),                  # a fill of pieces (x[1:], x[:-1] placed): units of rows
], ids=["flat", "pieces"])
def test_a_dynamic_version_splits_its_fills(f):
    assert PARALLEL_FOR in _dynamic_module(f)
    assert PARALLEL_FOR in str(codegen.lower(optimize(gt.make_ir(f, np.ones(50_000))), "f").module)


def test_dynamic_version_gives_the_specialized_bits_for_any_number_of_threads():
    rng = np.random.default_rng(0)
    dynamic = gt.grad(rosen)
    for n in (40_000, 50_000):  # the second size makes the dynamic version
        dynamic(rng.uniform(-1, 1, n))
    for n in SIZES:
        x = rng.uniform(-1, 1, n)
        want = np.asarray(gt.grad(rosen, dynamic=False)(x))
        np.testing.assert_allclose(want, rosen_numpy(x)[1], rtol=1e-12, atol=1e-12)
        for threads in (1, 2, 3):
            parallel.configure(threads=threads, min_elements=0)
            got = np.asarray(dynamic(x))
            assert np.array_equal(got, want), f"n={n}, {threads} threads"
    assert dynamic.cache_info().compiles == 2  # the first size, then the dynamic version for all others
