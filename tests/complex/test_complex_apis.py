"""The derivative APIs on complex values: JAX's grad (with and without holomorphic),
jacobians, the GradientTape's TensorFlow convention, the interpreter fallback of
compiled code, and the clear refusals."""
import re

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.runtime import compile_function

from .fd import jax_gradient, random_like

Z = np.array([3 + 4j, 1 - 2j, -0.5 + 0.25j])


def _fd_holomorphic(f, z, step=1e-6):
    """f'(z) elementwise, by a difference along the real axis (any direction gives it)."""
    return (f(z + step) - f(z - step)) / (2 * step)


def test_grad_of_a_real_loss_is_jaxs_conjugate_gradient():
    loss = lambda z: np.sum(np.abs(z) ** 2)  # noqa: E731
    got = gt.grad(loss)(Z)
    np.testing.assert_allclose(got, jax_gradient(loss, [Z], 0), rtol=1e-8)
    np.testing.assert_allclose(got, 2 * np.conj(Z), rtol=1e-14)  # d/dx - i d/dy of x^2 + y^2


def test_holomorphic_grad_is_the_complex_derivative():
    f = lambda z: np.sum(np.sin(z) * np.exp(z))  # noqa: E731
    got = gt.grad(f, holomorphic=True)(Z)
    want = _fd_holomorphic(lambda z: np.sin(z) * np.exp(z), Z)
    np.testing.assert_allclose(got, want, rtol=1e-8)
    value, grad = gt.value_and_grad(f, holomorphic=True)(Z)
    np.testing.assert_allclose(value, f(Z), rtol=1e-14)
    np.testing.assert_allclose(grad, got, rtol=1e-14)


def test_holomorphic_second_derivative():
    d2 = gt.grad(gt.grad(lambda z: z ** 3, holomorphic=True), holomorphic=True)
    np.testing.assert_allclose(d2(np.complex128(1 + 2j)), 6 * (1 + 2j), rtol=1e-14)


@pytest.mark.parametrize("jacobian", [gt.jacfwd, gt.jacrev, gt.jacobian], ids=["fwd", "rev", "auto"])
def test_holomorphic_jacobian(jacobian):
    got = jacobian(lambda z: z * z + np.exp(z), holomorphic=True)(Z)
    np.testing.assert_allclose(got, np.diag(_fd_holomorphic(lambda z: z * z + np.exp(z), Z)), rtol=1e-8)


def test_grad_refuses_a_complex_output_without_holomorphic():
    with pytest.raises(TypeError, match="grad requires real-valued outputs .* but got complex128. "
                                        "For holomorphic differentiation, pass holomorphic=True"):
        gt.grad(lambda z: np.sum(z))(Z)


def test_holomorphic_grad_refuses_real_inputs_and_outputs():
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex dtype"):
        gt.grad(lambda z: np.sum(z), holomorphic=True)(np.ones(2))
    with pytest.raises(TypeError, match="holomorphic=True requires outputs with complex dtype, but got float64"):
        gt.grad(lambda z: np.sum(np.abs(z)), holomorphic=True)(Z)


def test_jacobian_and_hessian_refuse_complex_values_without_holomorphic():
    with pytest.raises(TypeError, match=re.escape("argument 0 is complex (c128[3]); pass holomorphic=True")):
        gt.jacobian(lambda z: z * z)(Z)
    with pytest.raises(TypeError, match=re.escape("hessian(<lambda>): argument 0 is complex (c128[3]); "
                                                  "pass holomorphic=True for a holomorphic function")):
        gt.hessian(lambda z: np.sum(np.abs(z)))(Z)


def test_holomorphic_hessian_is_the_second_complex_derivative():
    f = lambda z: np.sum(z ** 3 + np.exp(z) * z[0])  # noqa: E731
    got = gt.hessian(f, holomorphic=True)(Z)
    want = np.diag(6 * Z + np.exp(Z) * Z[0])  # d2/dz_i dz_j of sum(z^3) + z0 sum(exp z)
    want[0, :] += np.exp(Z)
    want[:, 0] += np.exp(Z)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    second = gt.grad(lambda z: gt.grad(f, holomorphic=True)(z)[1], holomorphic=True)(Z)
    np.testing.assert_allclose(got[1], second, rtol=1e-12)  # a row of it, by nested grads
    with pytest.raises(TypeError, match="needs a function returning one complex scalar"):
        gt.hessian(lambda z: np.sum(np.abs(z)), holomorphic=True)(Z)


def test_hvp_of_a_real_loss_of_complex_values_is_the_jvp_of_jaxs_gradient():
    loss = lambda z: np.sum(np.abs(z) ** 4 + np.real(z[0] * z[1] * 1j))  # noqa: E731
    v = np.array([1 + 0.5j, -0.2j, 0.3 - 1j])
    got = gt.hvp(loss)(Z, v)
    step = 1e-6
    grad = gt.grad(loss)
    np.testing.assert_allclose(got, (grad(Z + step * v) - grad(Z - step * v)) / (2 * step), rtol=1e-7)
    np.testing.assert_allclose(got, gt.jvp(grad, (Z,), (v,))[1], rtol=1e-14)


def test_tape_gradients_follow_tensorflow_the_conjugate_of_jaxs():
    loss = lambda z: gt.sum(np.abs(z * z) + np.real(np.exp(z)))  # noqa: E731
    x = gt.constant(Z)
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = loss(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.conj(gt.grad(loss)(Z)), rtol=1e-14)


def test_tape_gradient_of_a_holomorphic_target_is_conjugate_derivative_times_output_gradient():
    x = gt.constant(Z)
    g = np.array([1j, 2.0, 1 - 1j])
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        w = x * x
    np.testing.assert_allclose(tape.gradient(w, x).numpy(), np.conj(2 * Z), rtol=1e-14)
    np.testing.assert_allclose(tape.gradient(w, x, output_gradients=gt.constant(g)).numpy(),
                               g * np.conj(2 * Z), rtol=1e-14)


def test_a_complex_variable_is_watched_and_differentiated():
    v = gt.Variable(Z)
    for _ in range(3):  # the recorded and the cached backward plans
        with gt.GradientTape() as tape:
            y = gt.sum(np.abs(v) ** 2)
        np.testing.assert_allclose(tape.gradient(y, v).numpy(), 2 * Z, rtol=1e-14)


def test_second_order_tape_gradient_of_a_real_function_through_complex_values():
    x = gt.constant(np.array([0.3, -1.2]))
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = gt.sum(np.real(np.exp(1j * x * x)))  # sum cos(x^2)
        g = inner.gradient(y, x)
    xv = x.numpy()
    np.testing.assert_allclose(g.numpy(), -2 * xv * np.sin(xv ** 2), rtol=1e-13)
    np.testing.assert_allclose(outer.gradient(g, x).numpy(),
                               -2 * np.sin(xv ** 2) - 4 * xv ** 2 * np.cos(xv ** 2), rtol=1e-13)


def test_compiled_code_of_complex_values_is_native_with_the_interpreters_numbers():
    fn = gt.make_ir(lambda z: np.sum(np.abs(np.exp(z) * z) ** 2), Z)
    compiled = compile_function(fn)
    assert compiled.native and compiled.splits_complex, compiled.fallback_reason
    np.testing.assert_allclose(compiled(Z)[0], ir.eval_function(fn, [Z])[0], rtol=1e-14)


def test_compiled_code_of_an_fft_runs_the_native_kernels_with_the_interpreters_numbers():
    fn = gt.make_ir(lambda z: np.sum(np.abs(np.fft.fft(z)) ** 2), Z)
    compiled = compile_function(fn)
    assert compiled.native and compiled.splits_complex, compiled.fallback_reason
    np.testing.assert_allclose(compiled(Z)[0], ir.eval_function(fn, [Z])[0], rtol=1e-14)


def test_a_staged_gradient_served_many_times_gives_the_same_bits():
    f = gt.grad(lambda z: np.sum(np.abs(np.sin(z)) ** 3))
    first = f(Z)
    for _ in range(5):  # past the served function's interpreted runs and its compile attempt
        np.testing.assert_array_equal(f(Z), first)


@pytest.mark.parametrize("fn,match", [
    (lambda z: z < 1, r"lt: complex operands are not supported \(NumPy orders complex numbers lexicographically"),
    (lambda z: np.maximum(z, z), r"maximum: complex operands are not supported"),
    (lambda z: np.max(z), r"reduce_max: complex operands are not supported"),
    (lambda z: np.floor(z), r"floor: complex input is not supported"),
    (lambda z: gt.erf(z), r"erf: complex input is not supported"),
    (lambda z: np.sign(z), r"sign: complex input is not supported"),
    (lambda z: np.fabs(z), r"fabs: complex input is not supported"),
    (lambda z: np.hypot(z, z), r"hypot: complex operands are not supported"),
])
def test_what_is_not_supported_is_refused_naming_the_function(fn, match):
    with pytest.raises((TypeError, ir.DTypeError), match=match):
        gt.differentiable(fn)(Z)


def test_eager_refusals_never_return_a_wrong_number():
    x = gt.constant(Z)
    for fn, name in ((np.floor, "floor"), (gt.erf, "erf"), (np.sign, "sign"), (gt.sigmoid, "sigmoid"),
                     (np.fabs, "fabs"), (gt.softplus, "softplus")):
        with pytest.raises(TypeError, match=f"^{name}: complex input is not supported"):
            fn(x)


def test_grad_through_a_real_argument_mixed_with_complex_constants():
    w = random_like(np.random.default_rng(0), Z)
    loss = lambda x: np.sum(np.real(w * np.exp(1j * x)))  # noqa: E731
    x = np.array([0.1, 0.7, -2.0])
    got = gt.grad(loss)(x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, jax_gradient(loss, [x], 0), rtol=1e-8)


def _loop(z):
    c = z
    for _ in range(6):  # a Python loop gradtape re-rolls into a scan
        c = c * (1 + 0.1j) + z
    return np.sum(np.abs(c) ** 2)


def _scan_loss(z):
    final, _ = gt.scan(lambda c, _: (c * (1 + 0.1j) + np.sin(c), c), z, None, length=3)
    return np.sum(np.abs(final) ** 2)


@pytest.mark.parametrize("loss,reference", [
    (_loop, _loop),
    (_scan_loss, None),
    (lambda z: np.sum(np.abs(gt.cond(True, lambda a: a * 2j, lambda a: a, z)) ** 2), lambda z: np.sum(np.abs(2j * z) ** 2)),
    (lambda z: np.real(gt.fori_loop(0, 3, lambda i, c: c * z[0], 1 + 0j)), lambda z: np.real(z[0] ** 3)),
    (lambda z: np.sum(np.abs(gt.checkpoint(lambda a: a * np.exp(a))(z)) ** 2), lambda z: np.sum(np.abs(z * np.exp(z)) ** 2)),
], ids=["rerolled_loop", "scan", "cond", "fori_loop", "checkpoint"])
def test_control_flow_carries_complex_values_and_their_gradients(loss, reference):
    z = np.array([0.3 + 0.4j, -0.2 + 0.1j])
    got = gt.grad(loss)(z)
    numeric = gt.differentiable(loss) if reference is None else reference
    np.testing.assert_allclose(got, jax_gradient(lambda a: float(np.real(numeric(a))), [z], 0), rtol=1e-7)


def test_vmap_of_a_complex_gradient_is_the_gradient_of_each():
    zs = np.array([0.3 + 0.4j, -0.2 + 0.1j, 1.5 - 2j])
    per_element = gt.vmap(gt.grad(lambda z: np.abs(np.sin(z)) ** 2))(zs)
    np.testing.assert_allclose(per_element, [gt.grad(lambda z: np.abs(np.sin(z)) ** 2)(z) for z in zs], rtol=1e-14)


def test_vjp_linearize_and_forward_accumulator_on_complex_values():
    z = np.array([0.3 + 0.4j, -0.2 + 0.1j])
    t = np.array([1 + 0j, 1j])
    _, pullback = gt.vjp(lambda a: a * a, z)
    np.testing.assert_allclose(pullback(t)[0], 2 * z * t, rtol=1e-14)  # transpose, no conjugation
    _, f_jvp = gt.linearize(lambda a: np.exp(a), z)
    np.testing.assert_allclose(f_jvp(t), np.exp(z) * t, rtol=1e-14)
    x = gt.constant(z)
    with gt.ForwardAccumulator(x, gt.constant(t)) as acc:
        y = x * np.abs(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), gt.jvp(lambda a: a * np.abs(a), (z,), (t,))[1], rtol=1e-14)


def _tape_rows(f, value):
    """TensorFlow's Jacobian by hand: row i is tape.gradient of element i of f (unit output gradient)."""
    rows = []
    for i in range(np.size(f(value))):
        x = gt.constant(value)
        with gt.GradientTape() as tape:
            tape.watch(x)
            y = gt.reshape(f(x), (-1,))[i]
        rows.append(tape.gradient(y, x).numpy())
    return np.stack(rows).reshape(np.shape(f(value)) + np.shape(value))


TAPE_JACOBIAN_CASES = {
    "complex_to_complex": (Z, lambda a: a ** 2 * np.sum(np.abs(a))),
    "complex_to_real": (Z, lambda a: np.abs(a) * np.real(a[0])),
    "real_to_complex": (np.array([0.5, -1.0]), lambda a: np.exp(1j * a) * (1 + 2j)),
}


@pytest.mark.parametrize("pfor", [True, False], ids=["pfor", "loop"])
@pytest.mark.parametrize("case", sorted(TAPE_JACOBIAN_CASES))
def test_tape_jacobians_of_complex_values_are_tensorflows_rows_of_gradients(case, pfor):
    value, f = TAPE_JACOBIAN_CASES[case]
    want = _tape_rows(f, value)
    x = gt.constant(value)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    got = tape.jacobian(y, x, experimental_use_pfor=pfor).numpy()
    assert got.dtype == value.dtype
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
    # row i is the conjugate of JAX's gradient of Re(y_i) (the cotangent 1 pairs with Re(dy_i))
    jax_rows = [gt.grad(lambda a, i=i: np.real(f(a)[i]))(value) for i in range(len(want))]
    np.testing.assert_allclose(got, np.conj(np.stack(jax_rows)), rtol=1e-14, atol=1e-14)
    xs = gt.constant(np.stack([value, 2 * value]))
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        ys = gt.stack([f(xs[0]), f(xs[1])])
    batch = tape.batch_jacobian(ys, xs, experimental_use_pfor=pfor).numpy()
    np.testing.assert_allclose(batch[0], want, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(batch[1], _tape_rows(f, 2 * value), rtol=1e-14, atol=1e-14)


def test_sparse_jacobians_refuse_complex_values():
    with pytest.raises(TypeError, match="sparse Jacobians are of real arrays"):
        gt.jacobian(lambda a: a * a, sparse=True)(Z)


@pytest.mark.parametrize("name", ["fft", "ifft", "fftn", "ifftn", "fft2", "ifft2", "rfft", "rfftn", "rfft2",
                                  "irfft", "irfftn", "irfft2", "hfft", "ihfft"])
def test_fft_functions_refuse_out_rather_than_ignore_it(name):
    # NumPy writes its result into out=; ignoring it would leave the caller's array unwritten.
    x = gt.constant(np.arange(12.0).reshape(3, 4) + 0.5j)
    if name.startswith("r"):
        x = gt.constant(np.arange(12.0).reshape(3, 4))
    out = np.zeros((3, 4), complex)
    with pytest.raises(TypeError, match=f"{name}: the out= argument is not supported"):
        getattr(np.fft, name)(x, out=out)
    assert not out.any()
