"""reorder_contractions: chains of contractions re-associated by cost keep their values
(the reference interpreter of the chain as written, and NumPy's einsum) and get cheaper."""
import math

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.contract_chains import reorder_contractions
from gradtape.ir.optimize import optimize
from gradtape.ir.ops.contract import contract_p


def _intermediate_elements(fn) -> int:
    """The elements the contractions write, outputs of the Function left out."""
    outs = set(fn.outvars)
    return sum(math.prod(e.outvars[0].type.shape) for e in fn.eqns
               if e.op is contract_p and e.outvars[0] not in outs)


def _contractions(fn) -> int:
    return sum(e.op is contract_p for e in fn.eqns)


def test_chained_einsums_of_batched_tangents_contract_the_small_operands_first():
    # the batched tangent of einsum('nb,bij->nij') then einsum('nij,nj->ni'): 26 directions
    rng = np.random.default_rng(0)
    w, t, p = rng.standard_normal((40, 22)), rng.standard_normal((26, 22, 3, 3)), rng.standard_normal((40, 3))
    fn = gt.make_ir(lambda w, t, p: gt.einsum("knij,nj->kni", gt.einsum("nb,kbij->knij", w, t), p), w, t, p)
    new = reorder_contractions(fn)
    assert _contractions(new) == 2
    assert _intermediate_elements(fn) == 26 * 40 * 9
    assert _intermediate_elements(new) == 40 * 22 * 3  # (n, b, j): the per-point operands' product
    want = np.einsum("nb,kbij,nj->kni", w, t, p)
    np.testing.assert_allclose(ir.eval_function(new, [w, t, p])[0], want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ir.eval_function(fn, [w, t, p])[0], want, rtol=1e-12, atol=1e-12)


def test_matrix_chain_reassociated_to_the_cheaper_product():
    rng = np.random.default_rng(1)
    a, b, c = rng.standard_normal((100, 5)), rng.standard_normal((5, 100)), rng.standard_normal((100, 3))
    fn = gt.make_ir(lambda a, b, c: (a @ b) @ c, a, b, c)  # a (100, 100) intermediate
    new = reorder_contractions(fn)
    assert _intermediate_elements(new) == 5 * 3  # a @ (b @ c)
    np.testing.assert_allclose(ir.eval_function(new, [a, b, c])[0], a @ b @ c, rtol=1e-12)


def test_a_chain_already_in_its_cheapest_order_is_left_alone():
    a, b, c = np.ones((10, 100)), np.ones((100, 5)), np.ones((5, 50))
    fn = gt.make_ir(lambda a, b, c: (a @ b) @ c, a, b, c)
    assert reorder_contractions(fn) is fn


def test_an_intermediate_read_twice_is_not_absorbed():
    rng = np.random.default_rng(2)
    a, b, c = rng.standard_normal((100, 5)), rng.standard_normal((5, 100)), rng.standard_normal((100, 3))

    def f(a, b, c):
        ab = a @ b
        return ab @ c, gt.sum(ab)
    fn = gt.make_ir(f, a, b, c)
    assert reorder_contractions(fn) is fn


@pytest.mark.parametrize("seed", range(12))
def test_random_chains_keep_their_values(seed):
    # random einsums of 3 or 4 operands, traced left to right, reordered, then the pipeline
    rng = np.random.default_rng(seed)
    letters = "abcdef"
    size = {c: int(rng.integers(1, 7)) for c in letters}
    k = int(rng.integers(3, 5))
    terms = ["".join(rng.choice(list(letters), size=int(rng.integers(1, 4)), replace=False)) for _ in range(k)]
    used = "".join(dict.fromkeys("".join(terms)))
    out = "".join(c for c in used if rng.random() < 0.4)
    spec = ",".join(terms) + "->" + out
    xs = [rng.standard_normal([size[c] for c in t]) for t in terms]
    fn = gt.make_ir(lambda *xs: gt.einsum(spec, *xs), *xs)
    new = optimize(reorder_contractions(fn))
    want = np.einsum(spec, *xs)
    got = ir.eval_function(new, xs)[0]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * max(1.0, np.max(np.abs(want), initial=0)))


def test_jacfwd_through_chained_einsums_matches_finite_differences_and_jacrev():
    rng = np.random.default_rng(3)
    w, p = rng.standard_normal((30, 4)), rng.standard_normal((30, 3))
    theta = rng.standard_normal((4, 3, 3))

    def f(t):
        blended = gt.einsum("nb,bij->nij", w, gt.sin(t))
        return gt.einsum("nij,nj->ni", blended, p)

    fwd = np.asarray(gt.jacfwd(f)(theta))
    rev = np.asarray(gt.jacrev(f)(theta))
    h = 1e-6
    fd = np.empty((30, 3) + theta.shape)
    for idx in np.ndindex(theta.shape):
        e = np.zeros_like(theta)
        e[idx] = h
        plus = np.einsum("nb,bij,nj->ni", w, np.sin(theta + e), p)
        minus = np.einsum("nb,bij,nj->ni", w, np.sin(theta - e), p)
        fd[(slice(None), slice(None)) + idx] = (plus - minus) / (2 * h)
    np.testing.assert_allclose(fwd, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(fwd, rev, rtol=1e-12, atol=1e-12)
