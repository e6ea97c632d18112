"""gradtape.jacobian's mode "auto": it picks forward or reverse mode by the Jacobian's shape
or, near square shapes, by the estimated cost of both programs; says which, and its Jacobian
is the chosen mode's, equal to finite differences and to the other mode's."""
import logging

import numpy as np
import pytest

import gradtape as gt
from gradtape.ir.jacobians import MODE_MARGIN, choose_jacobian
from gradtape.staging.jacobian_transforms import jacobian_mode
from gradtape.tracer import backward_cache

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


# --- the cost model (ir/program_cost.py) decides when the shapes are within a factor 32 ---

GATHER_ROWS = np.random.default_rng(4).integers(0, 600, (2, 60))
GATHER_W = np.random.default_rng(5).standard_normal(60)


def two_index_gather(np_, x):  # 60 outputs of 600 inputs, each reading two inputs
    i, j = GATHER_ROWS
    return np_.tanh(x[i] * GATHER_W + x[j])


def segment_sum(np_, x):  # 60 outputs of 600 inputs, each the sum of ten of them
    return np_.tanh(np_.reshape(np_.sin(x)[SEGMENTS], (60, 10)).sum(axis=1)) if np_ is np else \
        gt.tanh(gt.asarray(np.zeros(60)).at[SEGMENT_OF].add(gt.sin(x)))


SEGMENT_OF = np.random.default_rng(6).permutation(np.repeat(np.arange(60), 10))
SEGMENTS = np.argsort(SEGMENT_OF, kind="stable")


def _auto_with_log(f, x, caplog):
    auto = gt.jacobian(f)
    with caplog.at_level(logging.INFO, logger="gradtape"):
        got = np.asarray(auto(x))
    said = [r.getMessage() for r in caplog.records if "input elements" in r.getMessage()]
    return auto, got, said[0]


@pytest.mark.parametrize("case, mode", [(two_index_gather, "fwd"), (segment_sum, "rev")])
def test_the_cost_model_picks_the_cheaper_program(case, mode, caplog):
    # Both have 10x more inputs than outputs: the direction count says reverse mode. Reverse
    # mode of a gather scatter-adds 60 rows into 600 columns, its forward mode gathers 60 of
    # 600 columns of the identity: forward is cheaper, and the model says so. A segment sum
    # is the other way round (its forward mode scatter-adds 600 tangents).
    f = lambda x: case(gt, x)  # noqa: E731
    x = np.random.default_rng(7).standard_normal(600)
    fn = gt.make_ir(f, x)
    choice = choose_jacobian(fn, [0])
    assert jacobian_mode(600, 60) == "rev" and choice.mode == mode
    cheaper, dearer = sorted([choice.fwd_cost, choice.rev_cost])
    assert cheaper * 2 < dearer  # a clear margin, not a near tie
    auto, got, said = _auto_with_log(f, x, caplog)
    assert ("forward mode" if mode == "fwd" else "reverse mode") in said and "estimated cost" in said
    chosen, other = (gt.jacfwd, gt.jacrev) if mode == "fwd" else (gt.jacrev, gt.jacfwd)
    assert _program_text(auto, x) == _program_text(chosen(f), x) != _program_text(other(f), x)
    assert ("scatter_add" in _program_text(auto, x)) == (mode == "rev")
    np.testing.assert_allclose(got, _central_differences(lambda x: case(np, x), x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, np.asarray(other(f)(x)), rtol=1e-12, atol=1e-13)


def test_near_ties_and_far_shapes_keep_the_rule(caplog):
    # tanh(A @ sin(x)) costs about the same either way (within the model's margin): the rule
    x = np.random.default_rng(8).standard_normal(40)
    choice = choose_jacobian(gt.make_ir(wide, x), [0])
    assert choice.fwd_cost is not None and choice.mode == "rev"
    assert max(choice.fwd_cost, choice.rev_cost) < MODE_MARGIN * min(choice.fwd_cost, choice.rev_cost)
    # 60 outputs of 6,000 inputs: outside the band, nothing is estimated or built twice
    far = np.random.default_rng(9).standard_normal(6000)
    choice = choose_jacobian(gt.make_ir(lambda x: gt.tanh(x[GATHER_ROWS[0]]), far), [0])
    assert (choice.mode, choice.fwd_cost, choice.rev_cost, choice.program) == ("rev", None, None, None)


def test_the_tapes_jacobian_follows_the_cost_model():
    x0 = np.random.default_rng(10).standard_normal(600)
    x = gt.constant(x0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = two_index_gather(gt, x)
    got = tape.jacobian(y, x).numpy()
    np.testing.assert_allclose(got, np.asarray(gt.jacrev(lambda x: two_index_gather(gt, x))(x0)),
                               rtol=1e-12, atol=1e-13)
    plans = [p for p in backward_cache._plans.values()
             if type(p).__name__ == "BackwardPlan" and p.fn.outvars and p.unit_seeds
             and any(getattr(v, "type", None) is not None and v.type.shape == (60, 600) for v in p.fn.outvars)]
    assert plans and all("scatter_add" not in str(p.fn) and "gather" in str(p.fn) for p in plans)


def test_loops_keep_the_rule_without_building_the_other_program():
    def f(x):  # 4 outputs of 8 inputs through a while loop: its cost is not estimated
        return gt.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, gt.sin(c[1]) * 1.5), (0, x))[1][:4]

    def f_np(x):
        for _ in range(3):
            x = np.sin(x) * 1.5
        return x[:4]

    x = np.linspace(0.1, 1.0, 8)
    choice = choose_jacobian(gt.make_ir(f, x), [0])
    assert (choice.mode, choice.fwd_cost, choice.rev_cost, choice.program) == ("rev", None, None, None)
    got = np.asarray(gt.jacobian(f)(x))
    np.testing.assert_allclose(got, _central_differences(f_np, x), rtol=1e-6, atol=1e-8)
