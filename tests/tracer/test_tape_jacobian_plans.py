"""tape.jacobian as one cached plan (tracer/backward_jacobian.py): compiled, keyed by what
the tape recorded, never reused for another structure. Every Jacobian is checked against
a formula or finite differences, the row-by-row loop (experimental_use_pfor=False), and
the cache's counts."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer import backward_cache
from gradtape.tracer.deferred import is_pending

RNG = np.random.default_rng(11)
W = RNG.normal(size=(4, 3)) / 2


def numeric_jacobian(f, x, eps=1e-6):
    J = np.zeros(np.shape(f(x)) + x.shape)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        J[(...,) + i] = (f(x + d) - f(x - d)) / (2 * eps)
    return J


# Programs of different structures; each: (function of a Tensor, its NumPy twin, source shape).
PROGRAMS = {
    "tanh_matvec": (lambda x: gt.tanh(W @ x) + x[0] * 2.0, lambda x: np.tanh(W @ x) + x[0] * 2.0, (3,)),   # rev
    "cube": (lambda x: x ** 3, lambda x: x ** 3, (3,)),                                                       # fwd
    "cube_longer": (lambda x: x ** 3, lambda x: x ** 3, (5,)),                                               # shape
    "sin_outer": (lambda x: gt.sin(x)[:, None] * x[None, ::-1], lambda x: np.sin(x)[:, None] * x[None, ::-1], (3,)),
    "sum": (lambda x: gt.sum(gt.exp(x)), lambda x: np.sum(np.exp(x)), (2, 3)),                              # scalar
}


@pytest.mark.parametrize("order", [list(PROGRAMS), list(reversed(PROGRAMS))])
def test_alternating_structures_each_get_their_own_plan(compile_at_once, order):
    for step in range(3):
        for name in order:
            f, f_np, shape = PROGRAMS[name]
            x0 = RNG.normal(size=shape)
            x = gt.constant(x0)
            with gt.GradientTape(persistent=True) as tape:
                tape.watch(x)
                y = f(x)
            J = tape.jacobian(y, x)
            np.testing.assert_allclose(J.numpy(), numeric_jacobian(f_np, x0), rtol=1e-7, atol=1e-8)
            rows = tape.jacobian(y, x, experimental_use_pfor=False)
            np.testing.assert_allclose(J.numpy(), rows.numpy(), rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(y.numpy(), f_np(x0), rtol=1e-12)
    info = backward_cache.cache_info()
    # One jacobian plan per structure, hit on the later steps; the row loop has its own plans.
    plans = [p for p in backward_cache._plans.values() if type(p).__name__ == "BackwardPlan"
             and p.fn.outvars and p.unit_seeds and p.value_positions and not p.live]
    assert len(plans) >= len(PROGRAMS)
    assert info["hits"] >= 2 * len(PROGRAMS)
    assert all(p._compiled is not None and p._compiled.native for p in plans)


def test_the_target_takes_its_value_from_the_plan(compile_at_once):
    x0 = RNG.normal(size=3)
    x = gt.constant(x0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = gt.tanh(W @ x)
    assert is_pending(y)
    J = tape.jacobian(y, x)
    assert not is_pending(y)
    np.testing.assert_allclose(y.numpy(), np.tanh(W @ x0), rtol=1e-12)
    np.testing.assert_allclose(J.numpy(), (1 - np.tanh(W @ x0) ** 2)[:, None] * W, rtol=1e-12)


def test_several_sources_unconnected_variables_read_twice_and_intermediate_sources(compile_at_once):
    for step in range(3):
        v = gt.Variable(RNG.normal(size=3))
        x0 = RNG.normal(size=(2, 3))
        x, far = gt.constant(x0), gt.constant(RNG.normal(size=2))
        with gt.GradientTape(persistent=True) as tape:
            tape.watch([x, far])
            h = x * v                                   # an intermediate source
            y = gt.tanh(h @ W.T) * gt.sum(v * v)        # v read twice
        jx, jv, jfar, jh = tape.jacobian(y, [x, v, far, h])
        jnone = tape.jacobian(y, far, unconnected_gradients="zero")
        assert jfar is None and jnone.shape == (2, 4, 2) and not jnone.numpy().any()
        vv = v.numpy()
        f_x = lambda p: np.tanh((p * vv) @ W.T) * np.sum(vv * vv)  # noqa: E731
        f_v = lambda p: np.tanh((x0 * p) @ W.T) * np.sum(p * p)  # noqa: E731
        f_h = lambda p: np.tanh(p @ W.T) * np.sum(vv * vv)  # noqa: E731
        np.testing.assert_allclose(jx.numpy(), numeric_jacobian(f_x, x0), rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(jv.numpy(), numeric_jacobian(f_v, vv), rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(jh.numpy(), numeric_jacobian(f_h, x0 * vv), rtol=1e-7, atol=1e-8)


def test_a_changed_constant_or_literal_changes_the_result_or_the_plan(compile_at_once):
    x0 = RNG.normal(size=3)
    for scale in (2.0, 3.0, 2.0):            # a scalar literal: part of the structure
        for M in (W, W[::-1].copy()):         # an array constant: an input of the plan
            x = gt.constant(x0)
            with gt.GradientTape() as tape:
                tape.watch(x)
                y = gt.sin(M @ x) * scale
            np.testing.assert_allclose(tape.jacobian(y, x).numpy(),
                                       scale * np.cos(M @ x0)[:, None] * M, rtol=1e-12)
