"""HIPS autograd's fluid examples (fluidsim.py, wing.py), restated at small
sizes in tests/fluid_simulations.py, differentiate unchanged: on a
GradientTape and staged (gt.value_and_grad), with gradients equal to central
differences of the same code run on plain arrays, and the two modes agreeing.

The staged functions take the smoke images as arguments: autograd's examples
keep them as NumPy arrays (fluidsim's in a closure, wing's made inside the
simulation), and a NumPy array indexed by an integer tensor of a staged
function (`smoke[rows, cols]`) cannot return a tensor (NumPy indexes its own
arrays), so it is refused while tracing. On the tape the same indexing
works: the integer tensor converts to its value.
"""
import numpy as np
import pytest

import gradtape as gt

from .finite_differences import central_differences
from .fluid_simulations import smoke_objective, wing_objective

N = 12  # grid side: the 40x60 and image-sized grids of the examples, shrunk



def _smoke_problem():
    rng = np.random.default_rng(0)
    smoke = rng.uniform(size=(N, N))
    target = np.roll(smoke, 2, axis=1)
    params = rng.normal(0.0, 0.3, 2 * N * N)
    return params, smoke, target


def _wing_problem():
    shape = (N, N + 4)
    window = (3, 9)
    params = -np.ones(shape)
    params[4:8, 4:8] = 0.0  # a block, as the example starts from
    params += np.random.default_rng(1).normal(0.0, 0.1, shape)
    red = np.zeros(shape)
    red[N // 4:N // 2] = 1.0
    blue = np.zeros(shape)
    blue[N // 2:3 * N // 4] = 1.0
    return params.ravel(), shape, window, red, blue


def _tape(objective, params, *rest):
    p = gt.Variable(params)
    with gt.GradientTape() as tape:
        value = objective(p, *rest)
    return float(value), tape.gradient(value, p).numpy()


def _staged(objective, params, *rest, static_argnums=()):
    value, grad = gt.value_and_grad(objective, static_argnums=static_argnums)(params, *rest)
    return float(value), np.asarray(grad)


@pytest.fixture(scope="module")
def fluidsim():
    """The problem, and (value, gradient) in each mode."""
    problem = _smoke_problem()
    return problem, {"tape": _tape(smoke_objective, *problem), "staged": _staged(smoke_objective, *problem)}


@pytest.fixture(scope="module")
def wing():
    problem = _wing_problem()
    return problem, {"tape": _tape(wing_objective, *problem),
                     "staged": _staged(wing_objective, *problem, static_argnums=(1, 2))}


@pytest.mark.parametrize("mode", ["tape", "staged"])
def test_fluidsim_gradient_matchescentral_differences(fluidsim, mode):
    (params, smoke, target), results = fluidsim
    value, grad = results[mode]
    reference = central_differences(lambda p: smoke_objective(p, smoke, target), params)
    np.testing.assert_allclose(value, smoke_objective(params, smoke, target), rtol=1e-12)
    assert np.abs(reference).max() > 1e-4  # the velocities do move the smoke
    np.testing.assert_allclose(grad, reference, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("mode", ["tape", "staged"])
def test_wing_gradient_matchescentral_differences(wing, mode):
    (params, shape, window, red, blue), results = wing
    value, grad = results[mode]
    reference = central_differences(lambda p: wing_objective(p, shape, window, red, blue), params)
    np.testing.assert_allclose(value, wing_objective(params, shape, window, red, blue), rtol=1e-12)
    inside = np.zeros(shape, bool)
    inside[3:9, 3:9] = True
    assert np.abs(reference.reshape(shape)[inside]).min() > 0  # every cell the obstacle may take matters
    np.testing.assert_array_equal(reference.reshape(shape)[~inside], 0.0)
    np.testing.assert_allclose(grad, reference, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("example", ["fluidsim", "wing"])
def test_the_two_modes_agree(example, request):
    _, results = request.getfixturevalue(example)
    (tape_value, tape_grad), (staged_value, staged_grad) = results["tape"], results["staged"]
    # the same operations, in an order that may differ (wing's -lift / drag cancels to ~1e-5)
    np.testing.assert_allclose(staged_value, tape_value, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(staged_grad, tape_grad, rtol=1e-10, atol=1e-15)
