"""GradientTape.append: tapes recorded apart (here in two threads) merged for one gradient call."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import gradtape as gt


def _part1(w, x):
    return gt.sum(gt.tanh(x @ w) ** 2)


def _part2(w, b):
    return gt.sum(gt.sin(w) * b) + gt.sum(b * b)


def _data():
    rng = np.random.default_rng(3)
    return rng.normal(size=(4, 3)), rng.normal(size=(5, 4)), rng.normal(size=(4, 3))


def test_tapes_recorded_in_two_threads_merge_into_the_gradient_of_one_tape():
    w0, x, b0 = _data()
    w, b = gt.Variable(w0), gt.Variable(b0)
    tapes, parts = [gt.GradientTape(), gt.GradientTape()], [None, None]

    def record(k):
        with tapes[k]:
            parts[k] = _part1(w, x) if k == 0 else _part2(w, b)

    threads = [threading.Thread(target=record, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    merged = tapes[0].append(tapes[1]).gradient(parts, [w, b])

    with gt.GradientTape() as one:
        whole = [_part1(w, x), _part2(w, b)]
    expected = one.gradient(whole, [w, b])
    for got, want in zip(merged, expected):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14)
    # and against NumPy: d/dw of both parts, d/db of the second
    h = np.tanh(x @ w0)
    dw = x.T @ (2 * h * (1 - h * h)) + np.cos(w0) * b0
    np.testing.assert_allclose(merged[0].numpy(), dw, rtol=1e-12)
    np.testing.assert_allclose(merged[1].numpy(), np.sin(w0) + 2 * b0, rtol=1e-12)


def test_watched_tensors_and_a_second_merge():
    x = gt.constant(np.array([0.5, -1.0]))
    tapes = []
    for k in range(3):
        with gt.GradientTape(persistent=True) as t:
            t.watch(x)
            part = gt.sum(x ** (k + 1))
        tapes.append((t, part))
    (t0, p0), (t1, p1), (t2, p2) = tapes
    t0.append(t1).append(t2)
    g = t0.gradient([p0, p1, p2], x).numpy()
    xv = x.numpy()
    np.testing.assert_allclose(g, 1 + 2 * xv + 3 * xv ** 2, rtol=1e-15)
    np.testing.assert_allclose(t0.gradient(p1, x).numpy(), 2 * xv, rtol=1e-15)


def test_append_errors_say_what_is_wrong():
    x = gt.constant(1.0)
    with gt.GradientTape() as t1:
        t1.watch(x)
        y = x * x
        with pytest.raises(ValueError, match="the other tape is still recording; append it after its `with`"):
            with gt.GradientTape() as t2:
                t1.append(t2)
    with gt.GradientTape() as t3:
        t3.watch(x)
    t3.gradient(x * 1.0, x)
    with pytest.raises(RuntimeError, match="the other tape was used already"):
        t1.append(t3)
    with pytest.raises(ValueError, match="cannot be appended to itself"):
        t1.append(t1)
    with pytest.raises(TypeError, match="expected a GradientTape, got int"):
        t1.append(3)
    assert float(t1.gradient(y, x)) == 2.0
