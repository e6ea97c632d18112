"""scan(..., checkpoint_every=k): the same values and derivatives as the plain scan,
with reverse mode keeping the carry entering each segment of k steps only."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import codegen, ir
from gradtape.runtime import compile_function
from gradtape.testing import check_grads

W = np.array([0.9, -0.6, 0.3])


def rnn(h, xs, k=None, reverse=False):
    def step(c, x):
        c = gt.tanh(c * W + x) + 0.05 * c
        return c, gt.sum(c * c)
    last, ys = gt.scan(step, h, xs, reverse=reverse, checkpoint_every=k)
    return gt.sum(last) + gt.sum(ys * np.arange(1.0, xs.shape[0] + 1.0))


H = np.array([0.2, -0.5, 0.8])
XS = np.random.default_rng(3).normal(size=(10, 3))


@pytest.mark.parametrize("k", [1, 2, 3, 5, 10, 11])
@pytest.mark.parametrize("reverse", [False, True])
def test_values_and_gradients_match_the_plain_scan(k, reverse):
    plain = lambda h, xs: rnn(h, xs, None, reverse)
    seg = lambda h, xs: rnn(h, xs, k, reverse)
    np.testing.assert_allclose(gt.differentiable(seg)(H, XS), gt.differentiable(plain)(H, XS), rtol=1e-13)
    for a, b in zip(gt.grad(seg, argnums=(0, 1))(H, XS), gt.grad(plain, argnums=(0, 1))(H, XS)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_second_order_and_finite_differences():
    check_grads(lambda h, xs: rnn(h, xs, 3), [H, XS[:7]], order=2, modes=("rev", "fwd"))


def test_without_xs_and_without_ys():
    def decay(x, k):
        return gt.scan(lambda c, _: (c * 0.9 + gt.sin(c), None), x, None, length=9, checkpoint_every=k)
    v = [float(gt.differentiable(lambda x: decay(x, k)[0])(1.3)) for k in (None, 2, 4)]
    np.testing.assert_allclose(v[1:], [v[0]] * 2, rtol=1e-14)
    c = 1.3
    for _ in range(9):
        c = c * 0.9 + np.sin(c)
    np.testing.assert_allclose(v[0], c, rtol=1e-14)
    g = [float(gt.grad(lambda x: decay(x, k)[0])(1.3)) for k in (None, 2, 4)]
    np.testing.assert_allclose(g[1:], [g[0]] * 2, rtol=1e-13)
    assert gt.scan(lambda c, _: (c * 0.9, None), 1.0, None, length=9, checkpoint_every=2)[1] is None


def test_reverse_mode_stores_about_n_over_k_plus_k_carries():
    """The gradient's scratch memory (its arena), for a carry of 2,000 floats and 400 steps."""
    h = np.linspace(-1, 1, 2000)
    xs = np.zeros((400, 1))

    def loss(h, k):
        c, _ = gt.scan(lambda c, x: (gt.tanh(c + x), None), h, xs, checkpoint_every=k)
        return gt.sum(c)

    carry = h.nbytes
    arena = {}
    for k in (None, 20):
        fn = gt.make_ir(gt.grad(lambda h: loss(h, k)), h)
        arena[k] = codegen.lower(fn, "g").arena_bytes
        np.testing.assert_allclose(compile_function(fn)(h)[0], ir.eval_function(fn, [h])[0], rtol=1e-12)
    assert arena[None] >= 400 * carry                # every step's carry stored
    assert arena[20] <= (400 // 20 + 20 + 12) * carry  # 20 segment carries + 20 inside the segment + O(1)


def test_bad_checkpoint_every():
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="scan: checkpoint_every must be a positive integer"):
            gt.make_ir(lambda h: gt.scan(lambda c, x: (c + x, None), h, XS, checkpoint_every=bad)[0], H)
