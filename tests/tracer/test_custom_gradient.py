"""custom_gradient: the user's grad_fn replaces the derivative of the function."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads


@gt.custom_gradient
def log1pexp(x):
    e = gt.exp(x)

    def grad_fn(upstream):
        return upstream * (1 - 1 / (1 + e))

    return gt.log(1 + e), grad_fn


@gt.custom_gradient
def clip_gradient_norm_identity(x):
    def grad_fn(upstream):
        return gt.minimum(gt.maximum(upstream, -1.0), 1.0)

    return x * 1.0, grad_fn


def test_custom_gradient_is_used_on_a_tape_where_autodiff_would_give_nan():
    x = gt.constant([0.0, 100.0, 1000.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, [0.5, 1.0, 1.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        naive = gt.log(1 + gt.exp(x))
    assert np.isnan(tape.gradient(naive, x).numpy()[2])


def test_custom_gradient_differs_from_the_true_gradient_when_asked_to():
    x = gt.constant([0.5, -3.0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = clip_gradient_norm_identity(x) * 10.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 1.0])


def test_custom_gradient_under_tracing_matches_finite_differences_to_second_order():
    check_grads(lambda x: log1pexp(x) * 2.0, [np.array([-1.0, 0.3, 2.0])], order=2, modes=("rev",))


def test_grad_fn_returning_the_wrong_number_of_gradients_names_the_function():
    @gt.custom_gradient
    def f(x, y):
        return x * y, lambda up: up * y  # one gradient for two inputs

    x, y = gt.constant(1.0), gt.constant(2.0)
    with gt.GradientTape() as tape:
        tape.watch(x)
        out = f(x, y)
    with pytest.raises(ValueError, match=r"custom_gradient function 'f': grad_fn returned 1 gradients for 2 inputs"):
        tape.gradient(out, x)


def test_grad_fn_returning_a_wrong_shape_names_the_function():
    @gt.custom_gradient
    def g(x):
        return x * 2.0, lambda up: gt.constant(np.ones(5))

    x = gt.constant(np.ones(3))
    with gt.GradientTape() as tape:
        tape.watch(x)
        out = g(x)
    with pytest.raises(ValueError, match=r"custom_gradient function 'g': gradient 0 has shape \(5,\) but input 0 has shape \(3,\)"):
        tape.gradient(out, x)


def test_forward_mode_through_custom_gradient_matches_finite_differences_to_second_order():
    # Forward mode transposes grad_fn, which is the true gradient here.
    check_grads(log1pexp, [np.array([-1.0, 0.3, 2.0])], order=2, modes=("fwd",))


def test_grad_fn_returning_a_wrong_dtype_names_the_function():
    @gt.custom_gradient
    def h(x):
        return x * 2.0, lambda up: gt.cast(up, "float32")

    x = gt.constant(np.ones(3))
    with gt.GradientTape() as tape:
        tape.watch(x)
        out = h(x)
    with pytest.raises(gt.CustomRuleError, match=r"'h': gradient 0 has dtype float32 but input 0 has dtype float64"):
        tape.gradient(out, x)


def test_errors_of_a_staged_custom_gradient_are_raised_when_it_is_traced():
    @gt.custom_gradient
    def f(x, y):
        return x * y, lambda up: up * y

    with pytest.raises(ValueError, match=r"'f': grad_fn returned 1 gradients for 2 inputs"):
        gt.grad(lambda x: gt.sum(f(x, x)))(np.ones(3))


def test_a_function_that_does_not_return_a_pair_is_a_type_error():
    @gt.custom_gradient
    def f(x):
        return x * 2.0

    with pytest.raises(TypeError, match=r"custom_gradient function 'f' must return \(Tensor or structure of "
                       r"Tensors, grad_fn\), got a Tensor"):
        f(gt.constant(1.0))


def test_a_none_gradient_leaves_the_input_unconnected():
    @gt.custom_gradient
    def f(x, y):
        return x * y, lambda up: (up * y, None)

    x, y = gt.constant([1.0, 2.0]), gt.constant([3.0, 4.0])
    with gt.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        out = gt.sum(f(x, y))
    np.testing.assert_array_equal(tape.gradient(out, x).numpy(), [3.0, 4.0])
    assert tape.gradient(out, y) is None
    gx, gy = gt.grad(lambda x, y: gt.sum(f(x, y)), argnums=(0, 1))(x.numpy(), y.numpy())
    np.testing.assert_array_equal(gx, [3.0, 4.0])
    np.testing.assert_array_equal(gy, [0.0, 0.0])
