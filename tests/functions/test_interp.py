"""np.interp on tensors (issue 26, point 3): NumPy's values (knots, repeated knots, NaN, infinities,
left/right, period, one sample point), the derivative in x (the slope of x's segment) and in fp
(the interpolation weights) on the tape and staged; xp gets none. (Values, derivatives to third
order, vmap and native code are in the op specs: tests/ir/specs_numpy_more.py, "interp".)"""
import numpy as np
import pytest

import gradtape as gt

XP = np.array([0.0, 1.0, 1.0, 2.5, 4.0])
FP = np.array([1.0, -2.0, 3.0, 0.5, 2.0])
X = np.array([-1.0, 0.0, 0.3, 1.0, 2.0, 2.5, 3.9, 4.0, 5.0, np.nan, np.inf, -np.inf])


@pytest.mark.parametrize("kwargs", [{}, {"left": -7.0}, {"right": 9.0}, {"left": -7.0, "right": 9.0},
                                    {"period": 3.0}, {"period": -2.0}])
def test_values_are_numpys(kwargs):
    with np.errstate(invalid="ignore"):  # x % period of an infinity
        expected = np.interp(X, XP, FP, **kwargs)
        eager = np.interp(gt.constant(X), XP, FP, **kwargs)
        staged = gt.differentiable(lambda x, fp: np.interp(x, XP, fp, **kwargs))(X, FP)
    assert isinstance(eager, gt.Tensor) and eager.dtype == np.float64
    np.testing.assert_array_equal(eager.numpy(), expected)
    np.testing.assert_array_equal(np.asarray(staged), expected)


def test_scalars_one_sample_point_integers_and_tensor_sample_points():
    assert float(gt.interp(0.5, [0, 1], [0, 10])) == 5.0
    one = np.array([-1.0, 2.0, 3.0, np.nan])
    np.testing.assert_array_equal(gt.interp(one, [2.0], [5.0]).numpy(), np.interp(one, [2.0], [5.0]))
    np.testing.assert_array_equal(gt.interp(one, [2.0], [5.0], left=0, right=1).numpy(),
                                  np.interp(one, [2.0], [5.0], left=0, right=1))
    ints = np.array([0, 1, 3])
    np.testing.assert_array_equal(np.interp(gt.constant(ints), [0, 2, 4], [0, 4, 2]).numpy(),
                                  np.interp(ints, [0, 2, 4], [0, 4, 2]))
    np.testing.assert_array_equal(np.interp(0.75, gt.constant(XP), gt.constant(FP)).numpy(),
                                  np.interp(0.75, XP, FP))


def test_bad_arguments_raise_as_numpy():
    with pytest.raises(ValueError, match="same length"):
        gt.interp(gt.constant(0.5), [0.0, 1.0], [1.0])
    with pytest.raises(ValueError, match="empty"):
        gt.interp(gt.constant(0.5), np.zeros(0), np.zeros(0))
    with pytest.raises(ValueError, match="period"):
        gt.interp(gt.constant(0.5), [0.0, 1.0], [1.0, 2.0], period=0)


def _tape_gradients(x, fp, **kwargs):
    x, fp = gt.constant(x), gt.constant(fp)
    with gt.GradientTape() as tape:
        tape.watch([x, fp])
        y = gt.sum(np.interp(x, XP, fp, **kwargs))
    return [g.numpy() for g in tape.gradient(y, [x, fp])]


def _fd(x, fp, eps=1e-6, **kwargs):
    def f(x, fp):
        return np.sum(np.interp(x, XP, fp, **kwargs))
    gx = np.array([(f(x + eps * e, fp) - f(x - eps * e, fp)) / (2 * eps) for e in np.eye(x.size)])
    gf = np.array([(f(x, fp + eps * e) - f(x, fp - eps * e)) / (2 * eps) for e in np.eye(fp.size)])
    return gx, gf


# away from the knots, where the derivative in x jumps
XS = np.array([-1.0, 0.3, 0.8, 1.7, 2.6, 3.9, 5.0])


@pytest.mark.parametrize("kwargs", [{}, {"left": -7.0, "right": 9.0}, {"period": 3.0}])
def test_derivatives_match_finite_differences_on_the_tape_and_staged(kwargs):
    expected = _fd(XS, FP, **kwargs)
    for got in (_tape_gradients(XS, FP, **kwargs),
                gt.grad(lambda x, fp: gt.sum(np.interp(x, XP, fp, **kwargs)), argnums=(0, 1))(XS, FP)):
        for g, ref in zip(got, expected):
            np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-6, atol=1e-8)


def test_the_derivative_in_x_is_the_segments_slope_and_in_fp_the_weights():
    gx, gf = _tape_gradients(np.array([1.75]), FP)
    np.testing.assert_allclose(gx, [(0.5 - 3.0) / 1.5])
    np.testing.assert_allclose(gf, [0.0, 0.0, 0.5, 0.5, 0.0])
    # outside the sample points: no derivative in x; fp[0] / fp[-1] get it unless left / right are given
    gx, gf = _tape_gradients(np.array([-1.0, 5.0]), FP)
    np.testing.assert_array_equal(gx, [0.0, 0.0])
    np.testing.assert_array_equal(gf, [1.0, 0.0, 0.0, 0.0, 1.0])
    left, right = gt.constant(-7.0), gt.constant(9.0)
    with gt.GradientTape() as tape:
        tape.watch([left, right])
        y = gt.sum(np.interp(gt.constant([-1.0, 5.0, 6.0]), XP, FP, left=left, right=right))
    assert [float(g) for g in tape.gradient(y, [left, right])] == [1.0, 2.0]


def test_xp_gets_no_gradient():
    xp = gt.constant(XP)
    with gt.GradientTape() as tape:
        tape.watch(xp)
        y = gt.sum(np.interp(gt.constant(XS), xp, FP))
    assert tape.gradient(y, xp) is None
