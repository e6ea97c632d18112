"""gather_copies: a tensor assembled from slices of one tensor (and constants) becomes one gather,
with the same values and, through the adjoint, the same gradient bits as the pieces."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.copy_gather import MIN_EQUATIONS, gather_copies
from gradtape.ir.ops.indexing import concatenate_p, gather_p


def lower_triangle(np_, d, q):
    """ADBench GMM's factor: column i is i + 1 zeros, then the next d - i - 1 entries of q."""
    columns, at = [], d
    for i in range(d):
        n = d - i - 1
        columns.append(np_.concatenate([np_.zeros_like(q[:i + 1]), q[at:at + n]]))
        at += n
    return np_.stack(columns, axis=1)


def reversed_blocks(np_, x):
    """Pieces with negative steps, a transpose and a reshape, joined on two axes."""
    top = np_.concatenate([x[::-1, :2], x[:, 2:4]], axis=1)
    bottom = np_.concatenate([x[::-2, 4:], np.full((2, 2), -0.0)], axis=0)
    return np_.concatenate([top.T.reshape(-1), bottom.reshape(-1)])


def interleaved(np_, x):
    """Every third element from three starts (one reversed), then a NaN and a constant splat."""
    return np_.concatenate([x[0::3], x[1::3], x[2::3][::-1], np.full(1, np.nan), np_.broadcast_to(np.float64(2.5), (3,))])


CASES = [
    ("lower_triangle", lambda np_, x: lower_triangle(np_, 5, x), (15,)),
    ("reversed_blocks", reversed_blocks, (4, 6)),
    ("interleaved", interleaved, (9,)),
]


def _gathers(fn):
    return [e for e in fn.eqns if e.op is gather_p]


def _joins(fn):
    return [e for e in fn.eqns if e.op is concatenate_p]


@pytest.mark.parametrize("name,build,shape", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_keep_their_bits(name, build, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    fn = gt.make_ir(lambda x: build(gt, x), x)
    rewritten = gather_copies(fn)
    assert len(_gathers(rewritten)) == 1 and len(rewritten.eqns) <= 3
    expected = build(np, x)
    for program in (fn, rewritten):
        np.testing.assert_array_equal(ir.eval_function(program, [x])[0], expected)  # NaN, -0.0 too
    assert np.array_equal(np.signbit(ir.eval_function(rewritten, [x])[0]), np.signbit(expected))
    # The adjoint of each, with a random cotangent: the same bits.
    ct = np.random.default_rng(1).standard_normal(expected.shape)
    grads = [ir.eval_function(ir.vjp(p, [0])[0], [x, ct])[1] for p in (fn, rewritten)]
    np.testing.assert_array_equal(grads[0], grads[1])
    # And what a cotangent should be: each copied element's cotangent, at the element it copied
    # (the elements numbered from 1, so that constants, 0 or not whole, are told apart).
    copied = build(np, np.arange(1.0, x.size + 1).reshape(shape))
    taken = (copied == np.round(copied)) & (copied >= 1) & (copied <= x.size)
    by_hand = np.zeros(x.size)
    np.add.at(by_hand, copied[taken].astype(int) - 1, ct[taken])
    np.testing.assert_array_equal(grads[1].reshape(-1), by_hand)


def test_an_element_copied_twice_is_left_alone():
    x = np.arange(6.0)

    def f(x):
        return gt.concatenate([x[0:3], x[1:4], x[::-1], x[2:]])

    fn = gt.make_ir(f, x)
    assert gather_copies(fn) is fn  # its adjoint would sum two cotangents per element


def test_few_copies_or_no_join_are_left_alone():
    x = np.arange(12.0)
    lone = gt.make_ir(lambda x: x[2:8].reshape(2, 3).T, x)
    assert gather_copies(lone) is lone
    short = gt.make_ir(lambda x: gt.concatenate([x[:2], x[5:]]), x)
    assert len(short.eqns) < MIN_EQUATIONS and gather_copies(short) is short


def test_pieces_of_two_sources_are_left_alone():
    x, y = np.arange(4.0), np.arange(4.0, 8.0)
    fn = gt.make_ir(lambda x, y: gt.concatenate([x[:2], y[:2], x[2:], y[2:]]), x, y)
    assert gather_copies(fn) is fn


def test_a_piece_read_elsewhere_stays():
    x = np.random.default_rng(2).standard_normal(15)

    def f(x):
        part = x[5:9]
        return gt.sum(lower_triangle(gt, 5, x) ** 2) + gt.sum(gt.sin(part))

    fn = gt.make_ir(f, x)
    rewritten = gather_copies(fn)
    assert len(_gathers(rewritten)) == 1 and len(_joins(rewritten)) == 1  # (the zeros appended)
    assert any(e.op.name == "slice" for e in rewritten.eqns)  # x[5:9], which sin reads
    np.testing.assert_array_equal(ir.eval_function(rewritten, [x])[0], ir.eval_function(fn, [x])[0])


def _gmm_like(np_, icf):
    ls = np_.stack([lower_triangle(np_, 4, icf[k]) for k in range(icf.shape[0])])
    return np_.sum(np_.tanh(ls @ np.arange(1.0, 5.0)) ** 2)


def test_staged_and_tape_gradients_use_one_gather_and_match_finite_differences():
    icf = np.random.default_rng(3).uniform(-1, 1, (3, 10))
    g = gt.grad(lambda q: _gmm_like(gt, q))
    got = np.asarray(g(icf))
    (_, program), = g.programs()
    assert len(_joins(program.fn)) <= 1 and _gathers(program.fn)  # (the zeros appended)
    eps, numeric = 1e-6, np.zeros_like(icf)
    for i in np.ndindex(icf.shape):
        up, down = icf.copy(), icf.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (_gmm_like(np, up) - _gmm_like(np, down)) / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-9)
    q = gt.constant(icf)
    with gt.GradientTape() as tape:
        tape.watch(q)
        loss = _gmm_like(gt, q)
    # (the tape's plan and the staged program round the matmul's adjoint differently: 1 ulp)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, q)), got, rtol=1e-14, atol=1e-15)


def test_columns_picked_from_a_batch_keep_the_dynamic_version(monkeypatch):
    """The same pieces of every row become a gather along axis 1 whose table does not depend on
    the batch size, so two batch sizes still make one dynamic version (no compile per size)."""
    from gradtape import runtime
    monkeypatch.setattr(runtime.config, "async_compile", False)

    def loss(w, x):
        feats = gt.concatenate([x[:, 0:2], x[:, 3:5], x[:, 6:7], x[:, 7:8]], axis=1)
        return gt.sum(gt.tanh(feats @ w))

    before = runtime.cache_info()
    g = gt.grad(loss)
    w = np.linspace(-1.0, 1.0, 18).reshape(6, 3)
    rng = np.random.default_rng(4)
    for n in (48, 40, 64):
        x = rng.standard_normal((n, 8))
        feats = x[:, [0, 1, 3, 4, 6, 7]]
        by_hand = feats.T @ (1 - np.tanh(feats @ w) ** 2)
        np.testing.assert_allclose(np.asarray(g(w, x)), by_hand, rtol=1e-12, atol=1e-12)
    programs = [program for _, program in g.programs()]
    assert any(e.op is gather_p and e.params["axis"] == 1 for p in programs for e in p.fn.eqns)
    after = runtime.cache_info()
    built = sum(after[k] - before[k] for k in ("compiles", "disk_loads"))
    assert built <= 2  # 48, then one dynamic version serves 40 and 64
