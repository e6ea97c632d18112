"""Bad input to optimizers: None gradients, mismatched shapes and dtypes, NaN and inf."""
import re
import warnings

import numpy as np
import pytest

import gradtape as gt
from gradtape import optimizers as O


def _variables():
    return gt.Variable(np.ones((2, 3)), name="kernel"), gt.Variable(np.zeros(3), name="bias")


def test_none_gradients_are_skipped_with_a_warning_naming_the_variables():
    kernel, bias = _variables()
    opt = O.Adam(0.1)
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['bias'\]"):
        opt.apply_gradients([(np.ones((2, 3)), kernel), (None, bias)])
    assert opt.iterations == 1
    np.testing.assert_array_equal(bias.numpy(), np.zeros(3))
    np.testing.assert_array_equal(opt.get_slot(bias, "momentum"), np.zeros(3))
    assert not np.allclose(kernel.numpy(), 1.0)


def test_all_gradients_none_is_an_error():
    kernel, bias = _variables()
    with pytest.raises(ValueError, match=r"No gradients provided for any variable: \['kernel', 'bias'\]"):
        O.SGD(0.1).apply_gradients([(None, kernel), (None, bias)])


def test_none_gradient_in_functional_update_keeps_parameter_and_slots():
    opt = O.SGD(0.1, momentum=0.9)
    params = [np.ones(2), np.ones(3)]
    state = opt.init(params)
    new, state = opt.update([np.ones(2), None], state, params)
    np.testing.assert_allclose(new[0], 0.9 * np.ones(2))
    assert new[1] is params[1]
    np.testing.assert_array_equal(state["momentum"][1], np.zeros(3))


def test_gradient_of_wrong_shape_names_the_variable_and_both_shapes():
    kernel, bias = _variables()
    opt = O.Adam(0.1)
    with pytest.raises(ValueError) as err:
        opt.apply_gradients([(np.ones((2, 3)), kernel), (np.ones(4), bias)])
    text = str(err.value)
    assert "variable 'bias' (index 1)" in text and "shape (4,)" in text and "shape (3,)" in text
    assert opt.iterations == 0  # checked before anything changed
    np.testing.assert_array_equal(kernel.numpy(), np.ones((2, 3)))


def test_gradient_of_wrong_dtype_names_the_variable_and_both_dtypes():
    kernel, bias = _variables()
    with pytest.raises(TypeError) as err:
        O.SGD(0.1).apply_gradients([(np.ones((2, 3), np.float32), kernel)])
    text = str(err.value)
    assert "variable 'kernel' (index 0)" in text and "float32" in text and "float64" in text


def test_integer_variable_is_rejected_by_name():
    counter = gt.Variable(np.arange(3), name="counter")
    with pytest.raises(TypeError, match=r"variable 'counter' \(index 0\) has dtype int64; optimizers update float"):
        O.SGD(0.1).apply_gradients([(np.ones(3), counter)])


def test_apply_gradients_wants_variables_and_pairs():
    with pytest.raises(TypeError, match="pair 0 holds a ndarray where a gradtape.Variable belongs"):
        O.SGD(0.1).apply_gradients([(np.ones(2), np.ones(2))])
    with pytest.raises(TypeError, match=r"expected \(gradient, variable\) pairs"):
        O.SGD(0.1).apply_gradients([np.ones(3)])
    with pytest.raises(ValueError, match="no \\(gradient, variable\\) pairs"):
        O.SGD(0.1).apply_gradients([])


def test_functional_update_names_a_mismatched_leaf_by_path():
    opt = O.Adam(0.1)
    params = {"w": np.ones((2, 2)), "b": np.zeros(2)}
    state = opt.init(params)
    with pytest.raises(ValueError, match=re.escape("params['w'] (leaf 1) has shape (2,), but the parameter has shape (2, 2)")):
        opt.update({"w": np.ones(2), "b": np.ones(2)}, state, params)
    with pytest.raises(ValueError, match="grads must have the structure of params"):
        opt.update([np.ones((2, 2)), np.ones(2)], state, params)
    with pytest.raises(KeyError, match="state has no \\['velocity'\\]"):
        opt.update(params, {"iterations": np.zeros((), np.int64), "momentum": params}, params)
    with pytest.raises(TypeError, match="state must be the dict returned by Adam.init"):
        opt.update(params, [1, 2], params)


def test_functional_update_checks_shapes_while_tracing():
    opt = O.SGD(0.1)
    update = gt.differentiable(lambda g, s, p: opt.update(g, s, p))
    with pytest.raises(ValueError, match=re.escape("params[0] (leaf 0) has shape (3,)")):
        update([np.ones(3)], opt.init([np.ones(2)]), [np.ones(2)])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_check_finite_stops_before_updating_and_names_variable_and_step(bad):
    kernel, bias = _variables()
    opt = O.Adam(0.1, check_finite=True)
    opt.apply_gradients([(np.ones((2, 3)), kernel), (np.ones(3), bias)])
    before = kernel.numpy().copy(), bias.numpy().copy(), opt.get_slot(kernel, "momentum")
    g = np.ones(3)
    g[1] = bad
    with pytest.raises(FloatingPointError) as err:
        opt.apply_gradients([(np.ones((2, 3)), kernel), (g, bias)])
    assert isinstance(err.value, O.NonFiniteGradientError)
    text = str(err.value)
    assert "variable 'bias' (index 1)" in text and "update 2 (iterations == 1)" in text
    assert ("1 NaN" if np.isnan(bad) else "1 inf") in text and "No parameter was updated" in text
    assert err.value.step == 1 and "bias" in err.value.parameter
    np.testing.assert_array_equal(kernel.numpy(), before[0])
    np.testing.assert_array_equal(bias.numpy(), before[1])
    np.testing.assert_array_equal(opt.get_slot(kernel, "momentum"), before[2])
    assert opt.iterations == 1


def test_check_finite_in_eager_functional_update():
    opt = O.RMSprop(0.1, check_finite=True)
    params = [np.ones(2)]
    state = opt.init(params)
    with pytest.raises(O.NonFiniteGradientError, match=re.escape("params[0] (leaf 0) is not finite in update 1")):
        opt.update([np.array([0.0, np.nan])], state, params)


def test_without_check_finite_nan_propagates_silently():
    w = gt.Variable(np.ones(2), name="w")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        O.SGD(0.1).apply_gradients([(np.array([np.nan, 0.0]), w)])
    assert np.isnan(w.numpy()[0]) and w.numpy()[1] == 1.0


@pytest.mark.parametrize("make,message", [
    (lambda: O.SGD(0.1, momentum=1.5), "momentum must be a float in \\[0, 1\\]"),
    (lambda: O.Adam(0.1, beta_1=1.0), "beta_1 must be in \\[0, 1\\)"),
    (lambda: O.RMSprop(0.1, rho=-0.1), "rho must be in \\[0, 1\\)"),
    (lambda: O.AdamW(0.1, weight_decay=None), "weight_decay must be a float"),
])
def test_hyperparameters_are_checked(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_get_slot_of_unknown_name():
    with pytest.raises(KeyError, match="SGD has no slot 'velocity'"):
        O.SGD(0.1, momentum=0.9).get_slot(gt.Variable(np.ones(2)), "velocity")


def test_apply_gradients_inside_staged_code_says_to_use_update():
    w = gt.Variable(np.ones(2), name="w")
    opt = O.SGD(0.1)
    with pytest.raises(TypeError, match="cannot run inside staged code. Use the functional update"):
        gt.differentiable(lambda g: opt.apply_gradients([(g, w)]))(np.ones(2))
