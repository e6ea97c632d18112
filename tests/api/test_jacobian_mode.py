"""gradtape.jacobian's mode "auto": it picks forward or reverse mode by the Jacobian's shape,
says which, and its Jacobian is the chosen mode's, equal to finite differences and to the
other mode's."""
import logging

import numpy as np
import pytest

import gradtape as gt
from gradtape.staging.jacobian_transforms import jacobian_mode

A = np.random.default_rng(0).standard_normal((40, 5))


def tall(x):  # 40 outputs of 5 inputs: forward mode (5 JVPs)
    return gt.tanh(A @ gt.sin(x))


def wide(x):  # 5 outputs of 40 inputs: reverse mode (5 VJPs)
    return gt.tanh(A.T @ gt.sin(x))


def _central_differences(f_np, x, h=1e-6):
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        cols.append((f_np(x + e) - f_np(x - e)) / (2 * h))
    return np.stack(cols, axis=-1)


def _program_text(staged, x):
    staged(x)
    (_, program), = staged.programs()
    return str(program.fn)


def test_the_rule_counts_directions():
    assert jacobian_mode(26, 3 * 12800) == "fwd"
    assert jacobian_mode(1000, 10) == "rev"
    assert jacobian_mode(7, 7) == "fwd"  # a tie: a JVP keeps no residuals


@pytest.mark.parametrize("f, f_np, n, mode", [
    (tall, lambda x: np.tanh(A @ np.sin(x)), 5, "fwd"),
    (wide, lambda x: np.tanh(A.T @ np.sin(x)), 40, "rev"),
])
def test_auto_builds_the_chosen_modes_program_and_its_jacobian(f, f_np, n, mode, caplog):
    x = np.random.default_rng(1).standard_normal(n)
    auto = gt.jacobian(f)
    with caplog.at_level(logging.INFO, logger="gradtape"):
        got = np.asarray(auto(x))
    said = [r.getMessage() for r in caplog.records if "input elements" in r.getMessage()]
    assert said and ("forward mode" if mode == "fwd" else "reverse mode") in said[0]
    chosen, other = (gt.jacfwd, gt.jacrev) if mode == "fwd" else (gt.jacrev, gt.jacfwd)
    # the effect of the choice: auto compiled exactly the chosen mode's program
    assert _program_text(auto, x) == _program_text(chosen(f), x) != _program_text(other(f), x)
    np.testing.assert_allclose(got, _central_differences(f_np, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, np.asarray(other(f)(x)), rtol=1e-12, atol=1e-13)


def test_explicit_modes_stay_explicit():
    x = np.random.default_rng(2).standard_normal(40)
    # reverse would be chosen for `wide`; mode="fwd" and jacfwd still run forward mode
    assert _program_text(gt.jacobian(wide, mode="fwd"), x) == _program_text(gt.jacfwd(wide), x)
    assert _program_text(gt.jacobian(wide, mode="fwd"), x) != _program_text(gt.jacobian(wide), x)


def test_hand_like_jacobian_through_a_gather_and_chained_einsums():
    # 6 parameters, per-point blended transforms (a gather, two chained einsums): forward mode
    rng = np.random.default_rng(3)
    weights, base = rng.random((12, 4)), rng.standard_normal((12, 3))
    idx = rng.integers(0, 12, 50)

    def residuals(np_, theta, idx):
        angles = (theta[:3] * np.arange(1.0, 5.0)[:, None]) @ np.arange(27.0).reshape(3, 9) / 27
        rot = np_.reshape(np_.sin(angles), (4, 3, 3))
        blended = np_.einsum("nb,bij->nij", np_.asarray(weights)[idx], rot)
        return np_.einsum("nij,nj->ni", blended, np_.asarray(base)[idx]) * theta[3:]

    theta = rng.standard_normal(6)
    got = np.asarray(gt.jacobian(lambda t, i: residuals(gt, t, i))(theta, idx))
    assert got.shape == (50, 3, 6)
    want = _central_differences(lambda t: residuals(np, t, idx), theta)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    rev = np.asarray(gt.jacrev(lambda t, i: residuals(gt, t, i))(theta, idx))
    np.testing.assert_allclose(got, rev, rtol=1e-12, atol=1e-12)
