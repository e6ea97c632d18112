"""Derivatives of complex functions by JAX's convention, against finite differences
of the real and imaginary parts (tests/complex/fd.py), to third order in reverse
mode and second order in forward mode, for every spec of complex_specs.py.

Each spec f is turned into a real loss L = sum(Re(w * f(z))) with a fixed random
w, whose gradient is dL/dx - i dL/dy (JAX's grad). A higher order is the gradient
of sum(Re(v * G(z))), G the order below, checked against finite differences of
gradtape's own order below (itself checked by the order before it).
"""
import numpy as np
import pytest

import gradtape as gt
from gradtape import runtime
from gradtape.staging import program

from .complex_specs import SPECS
from .fd import directional, jax_gradient, random_like

RTOL = 1e-6


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    """Staged functions run in the reference interpreter here: what is checked is the
    derivative programs (the autodiff pass's rules), and compiling each third-order program
    natively took most of this file's minutes. Native code for complex values, gradients
    included, is checked against the interpreter in test_complex_native.py."""
    monkeypatch.setattr(program, "compiler", runtime.interpreted)


def _real_loss(spec, args, rng):
    w = random_like(rng, spec.fn(*args))
    if np.asarray(spec.fn(*args)).dtype.kind != "c":
        return lambda *zs: np.sum(spec.fn(*zs) * w)
    return lambda *zs: np.sum(np.real(spec.fn(*zs) * w))


def _close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale)


def _as_number(f):
    """f's value as a Python number (the finite differences call it on arrays)."""
    return lambda *zs: complex(np.asarray(f(*zs))).real


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_reverse_mode_matches_finite_differences_to_third_order(spec):
    rng = np.random.default_rng(10)
    args = spec.args(rng)
    loss = _real_loss(spec, args, rng)
    argnums = tuple(range(len(args)))
    grads = gt.grad(loss, argnums=argnums)(*args)
    for k in argnums:
        _close(grads[k], jax_gradient(_as_number(gt.differentiable(loss)), args, k))
    order_below = gt.grad(loss)
    for _ in range(spec.order - 1):
        v = random_like(rng, args[0])
        below = order_below
        scalar = (lambda below, v: lambda *zs: np.sum(np.real(below(*zs) * v)))(below, v)
        order_below = gt.grad(scalar)
        _close(order_below(*args), jax_gradient(_as_number(gt.differentiable(scalar)), args, 0))


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_forward_mode_matches_finite_differences_to_second_order(spec):
    rng = np.random.default_rng(11)
    args = spec.args(rng)
    tangents = [random_like(rng, a) for a in args]
    _, tangent_out = gt.jvp(spec.fn, tuple(args), tuple(tangents))
    _close(tangent_out, directional(gt.differentiable(spec.fn), args, tangents))

    def first(*zs):
        return gt.jvp(spec.fn, tuple(zs), tuple(tangents))[1]

    more = [random_like(rng, a) for a in args]
    _, second = gt.jvp(first, tuple(args), tuple(more))
    _close(second, directional(gt.differentiable(first), args, more))


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_forward_and_reverse_mode_agree(spec):
    """<grad L, t> (JAX's pairing Re(sum(g * t))) equals the JVP of L along t."""
    rng = np.random.default_rng(12)
    args = spec.args(rng)
    loss = _real_loss(spec, args, rng)
    tangents = [random_like(rng, a) for a in args]
    grads = gt.grad(loss, argnums=tuple(range(len(args))))(*args)
    paired = sum(np.sum(np.real(g * t)) for g, t in zip(grads, tangents))
    _, jvp = gt.jvp(loss, tuple(args), tuple(tangents))
    _close(paired, jvp)


@pytest.mark.parametrize("spec", [s for s in SPECS if not s.real_args], ids=str)
def test_complex64_gradients_match_complex128(spec):
    rng = np.random.default_rng(13)
    args = spec.args(rng)
    loss = _real_loss(spec, args, rng)
    want = gt.grad(loss)(*args)
    got = gt.grad(loss)(*[a.astype(np.complex64) for a in args])
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * max(1.0, np.max(np.abs(want))))
