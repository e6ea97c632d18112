"""gradtape.random: Philox known answers, native bits equal to the reference,
fresh numbers per key in compiled code, distributions, and the warning for
np.random inside a trace."""
import warnings

import numpy as np
import pytest
from scipy import stats

import gradtape as gt
from gradtape import ir, runtime
from gradtape.ir.ops.random_bits import philox_rounds
from gradtape.tracer.frozen_random import RandomStateFrozenWarning

from ..functions.three_ways import three_ways


@pytest.mark.parametrize("key,counter,expected", [
    # Random123's known-answer vectors for Philox-4x32-10
    ((0, 0), (0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF,) * 4, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0xA4093822, 0x299F31D0), (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_matches_the_published_known_answers(key, counter, expected):
    words = philox_rounds(*(np.array([v], np.uint64) for v in (*key, *counter)))
    assert [int(w[0]) for w in words] == list(expected)


@pytest.mark.parametrize("word", [0, 1, 2, 3])
def test_native_bits_equal_the_reference(word):
    from gradtape.ir.ops.random_bits import philox_p
    from gradtape.tracer.dispatch import bind

    rng = np.random.default_rng(word)
    k0, k1, c0 = (rng.integers(0, 2 ** 32, 257, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    eager, interpreted, compiled = three_ways(lambda a, b, c: bind(philox_p, a, b, c, np.uint32(1), word=word),
                                              k0, k1, c0)
    np.testing.assert_array_equal(compiled, interpreted)
    np.testing.assert_array_equal(eager, interpreted)


def test_compiled_function_draws_fresh_numbers_for_each_key_and_repeats_for_the_same_key():
    @gt.differentiable
    def noisy(key, x):
        k1, k2 = gt.random.split(key)
        return x + gt.random.normal(k1, (4,)) + gt.random.uniform(k2, (4,))

    x = np.zeros(4)
    a, b, a_again = noisy(gt.random.key(0), x), noisy(gt.random.key(1), x), noisy(gt.random.key(0), x)
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(a, a_again)
    k1, k2 = gt.random.split(gt.random.key(0))  # the same numbers eagerly
    np.testing.assert_allclose(a, (gt.random.normal(k1, (4,)) + gt.random.uniform(k2, (4,))).numpy(), rtol=1e-15)
    fn = gt.make_ir(lambda k: gt.random.normal(k, (3,)), gt.random.key(3))
    assert runtime.compile_function(fn).native


def test_split_keys_differ_from_each_other_and_from_the_parents_draws():
    key = gt.random.key(7)
    keys = gt.random.split(key, 5).numpy()
    assert keys.shape == (5, 2) and keys.dtype == np.uint32
    assert len({tuple(k) for k in keys}) == 5
    assert not any(np.array_equal(k, key) for k in keys)
    assert gt.random.key(2 ** 64 + 5).tolist() == gt.random.key(5).tolist()
    assert gt.random.key(-1).tolist() == [2 ** 32 - 1, 2 ** 32 - 1]


def test_distributions_pass_goodness_of_fit_tests():
    key = gt.random.key(123)
    k = gt.random.split(key, 6).numpy()
    n = 20000
    for dtype in (np.float64, np.float32):
        u = gt.random.uniform(k[0], (n,), dtype=dtype).numpy()
        assert u.dtype == dtype and u.min() >= 0 and u.max() < 1
        assert stats.kstest(u, "uniform").pvalue > 1e-3
        z = gt.random.normal(k[1], (n,), dtype=dtype).numpy()
        assert z.dtype == dtype and np.all(np.isfinite(z))
        assert stats.kstest(z, "norm").pvalue > 1e-3
    b = gt.random.bernoulli(k[2], 0.3, (n,)).numpy()
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 4 * np.sqrt(0.3 * 0.7 / n)
    logits = np.log(np.array([0.2, 0.5, 0.3]))
    draws = gt.random.categorical(k[3], logits, shape=(n,)).numpy()
    observed = np.bincount(draws, minlength=3)
    assert stats.chisquare(observed, n * np.exp(logits)).pvalue > 1e-3
    perm = gt.random.permutation(k[4], 50).numpy()
    assert sorted(perm.tolist()) == list(range(50)) and perm.tolist() != list(range(50))
    x = np.arange(12.0).reshape(6, 2)
    shuffled = gt.random.permutation(k[5], x).numpy()
    assert sorted(map(tuple, shuffled)) == sorted(map(tuple, x))


def test_uniform_bounds_are_differentiable():
    key = gt.random.key(0)
    u = gt.random.uniform(key, (3,)).numpy()
    g_lo, g_hi = gt.grad(lambda lo, hi: gt.sum(gt.random.uniform(key, (3,), minval=lo, maxval=hi)),
                         argnums=(0, 1))(np.float64(-1.0), np.float64(2.0))
    np.testing.assert_allclose([g_lo, g_hi], [np.sum(1 - u), np.sum(u)], rtol=1e-14)


def test_batched_keys_under_vmap_match_a_loop():
    keys = gt.random.split(gt.random.key(9), 3).numpy()
    batched = gt.vmap(lambda k: gt.random.normal(k, (2,)))(keys)
    looped = np.stack([gt.random.normal(k, (2,)).numpy() for k in keys])
    np.testing.assert_allclose(batched, looped, rtol=1e-15)


def test_bad_keys_and_shapes_are_refused_with_the_fix():
    with pytest.raises(TypeError, match=r"gradtape.random.normal: key must be a uint32 array of shape \(2,\)"):
        gt.random.normal(np.zeros(2), (3,))
    with pytest.raises(TypeError, match=r"seed must be an integer, got 1.5"):
        gt.random.key(1.5)
    with pytest.raises(ValueError, match=r"gradtape.random.uniform: shape must have sizes >= 0"):
        gt.random.uniform(gt.random.key(0), (-1,))


def test_np_random_in_a_trace_warns_that_its_numbers_are_frozen():
    @gt.differentiable
    def frozen(x):
        return x + np.random.normal(size=3)

    with pytest.warns(RandomStateFrozenWarning, match=r"frozen called np.random while gradtape traced it"):
        first = frozen(np.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the compiled call does not trace again
        np.testing.assert_array_equal(frozen(np.zeros(3)), first)

    @gt.differentiable
    def clean(key, x):
        return x + gt.random.normal(key, (3,))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean(gt.random.key(0), np.zeros(3))


_GLOBAL_RNG = np.random.default_rng(3)


def test_a_randomstate_in_the_closure_or_a_generator_in_globals_warns_at_the_users_call():
    rs = np.random.RandomState(0)

    def objective(params):  # black-box variational inference's shape: noise from a closure's RandomState
        return gt.sum((rs.randn(5, 3) * params) ** 2)

    def from_global(x):
        return x + _GLOBAL_RNG.normal(size=3)

    for fun, kind in [(objective, "RandomState"), (from_global, "Generator")]:
        with pytest.warns(RandomStateFrozenWarning, match=rf"drew from a np.random.{kind} while gradtape traced it") as rec:
            gt.grad(lambda x: gt.sum(fun(x)))(np.ones(3))
        assert rec[0].filename == __file__  # the user's line, not gradtape's


def test_a_generator_only_read_or_reached_but_unused_does_not_warn():
    rng = np.random.default_rng(0)
    noise = rng.normal(size=3)

    def uses_its_own_key(key, x):
        _ = rng  # reachable, never drawn from in the trace
        return x + noise + gt.random.normal(key, (3,))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gt.differentiable(uses_its_own_key)(gt.random.key(0), np.zeros(3))
