"""Arrays NumPy computes on whatever their memory: big-endian byte order, np.memmap, Fortran order,
strides that skip, run backwards or repeat (broadcast_to), unaligned data. Staged, AOT, train_step
and the eager tape give NumPy's values on each (converted where compiled code needs it), and what
they still refuse they name."""
import os

import numpy as np
import pytest

import gradtape as gt
from gradtape import optimizers
from gradtape.runtime import compile_function

pytestmark = pytest.mark.native

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
W = np.array([0.3, -0.7, 1.1])


def _unaligned(a):
    raw = np.frombuffer(bytearray(a.nbytes + 1), np.uint8)[1:]
    out = raw.view(a.dtype).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned
    return out


def _memmap(a, directory):
    name = os.path.join(directory, f"{len(os.listdir(directory))}.dat")  # a file of its own
    m = np.memmap(name, dtype=a.dtype, mode="w+", shape=a.shape)
    m[...] = a
    return m


def _wide(a):
    w = np.zeros((a.shape[0], 2 * a.shape[1]), a.dtype)
    w[:, ::2] = a
    return w[:, ::2]


LAYOUTS = {
    "big_endian": lambda a, tmp: a.astype(a.dtype.newbyteorder(">")),
    "memmap": _memmap,
    "fortran": lambda a, tmp: np.asfortranarray(a),
    "every_other": lambda a, tmp: _wide(a),
    "reversed": lambda a, tmp: a[::-1, ::-1].copy()[::-1, ::-1],
    "broadcast": lambda a, tmp: np.broadcast_to(a[0], a.shape),
    "unaligned": lambda a, tmp: _unaligned(a),
}


@pytest.fixture(params=sorted(LAYOUTS))
def layout(request, tmp_path):
    def make(a):
        out = LAYOUTS[request.param](a, tmp_path)
        assert type(out) is np.memmap if request.param == "memmap" else type(out) is np.ndarray
        return out
    make.name = request.param
    return make


def loss(w, x):
    return gt.sum(gt.tanh(x * w) + x * x)


def loss_np(w, x):
    return np.sum(np.tanh(x * w) + x * x)


def grads_np(w, x):
    d = 1 - np.tanh(x * w) ** 2
    return np.sum(x * d, axis=0), w * d + 2 * x


def test_staged_functions_give_numpys_values(layout):
    x = layout(X)
    xn = np.array(x, dtype=np.float64)
    assert float(gt.differentiable(loss)(W, x)) == pytest.approx(loss_np(W, xn), rel=1e-13)
    dw, dx = gt.grad(loss, argnums=(0, 1))(W, x)
    np.testing.assert_allclose(dw, grads_np(W, xn)[0], rtol=1e-12)
    np.testing.assert_allclose(dx, grads_np(W, xn)[1], rtol=1e-12)
    assert dx.dtype == np.float64 and dx.dtype.isnative


@pytest.mark.parametrize("dtype", [">f4", ">i8", ">i4"])
def test_big_endian_arguments_of_other_dtypes_give_numpys_values_and_dtypes(dtype):
    x = np.array([[1, -2, 3], [4, 5, -6]], dtype=dtype)
    f = gt.differentiable(lambda x: (x * 3 - x[::-1], gt.sum(x, axis=0)))
    got = f(x)
    want = (x * 3 - x[::-1], np.sum(x, axis=0))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype and g.dtype.isnative  # NumPy's results are native too


def test_compiled_ahead_of_time(layout):
    x = layout(X)
    xn = np.array(x, dtype=np.float64)
    vg = gt.compile(gt.value_and_grad(loss, argnums=(0, 1)), gt.ShapeDtype((3,)), gt.ShapeDtype((2, 3)))
    value, (dw, dx) = vg(W, x)
    assert float(value) == pytest.approx(loss_np(W, xn), rel=1e-13)
    np.testing.assert_allclose(dw, grads_np(W, xn)[0], rtol=1e-12)
    np.testing.assert_allclose(dx, grads_np(W, xn)[1], rtol=1e-12)


def test_train_step_batches_and_parameters(layout, tmp_path):
    """The batch in any layout; parameters (updated in place) big-endian or in a memmap."""
    x = layout(X)
    xn = np.array(x, dtype=np.float64)
    want = W.copy()
    for _ in range(3):
        want = want - 0.1 * grads_np(want, xn)[0]
    for params in (W.astype(">f8"), _memmap(W, tmp_path), W.copy()):
        step = gt.train_step(loss, optimizers.SGD(0.1))
        losses = [step(params, x) for _ in range(3)]
        np.testing.assert_allclose(params, want, rtol=1e-12)
        assert losses[0] == pytest.approx(loss_np(W, xn), rel=1e-13)


def test_the_eager_tape_on_constants_variables_and_mixed_operands(layout):
    """Seven steps each: a tape's backward plan is compiled at its fifth."""
    x = layout(X)
    xn = np.array(x, dtype=np.float64)
    for _ in range(7):
        w, c = gt.Variable(layout(W[None])[0]), gt.constant(x)
        assert w.dtype == c.dtype == np.float64 and c.dtype.isnative
        with gt.GradientTape(persistent=True) as tape:
            tape.watch(c)
            y = loss(w, c) + gt.sum(w * x * 1.0)       # a Tensor times the raw array
        np.testing.assert_allclose(tape.gradient(y, w).numpy(), grads_np(W, xn)[0] + xn.sum(axis=0), rtol=1e-12)
        np.testing.assert_allclose(tape.gradient(y, c).numpy(), grads_np(W, xn)[1], rtol=1e-12)
        assert float(y) == pytest.approx(loss_np(W, xn) + np.sum(W * xn), rel=1e-13)


def test_a_staged_function_on_a_tape_with_a_big_endian_integer_constant():
    f = gt.differentiable(lambda w, n: gt.sum(w * n))
    n = np.array([1, -2, 3], dtype=">i8")
    for _ in range(7):
        w = gt.Variable(W)
        with gt.GradientTape() as tape:
            y = f(w, gt.constant(n))
        np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [1.0, -2.0, 3.0])
    assert float(y) == pytest.approx(np.sum(W * np.array([1, -2, 3])), rel=1e-15)


def test_out_arrays_in_big_endian_order_get_the_values():
    cf = compile_function(gt.make_ir(lambda w, x: gt.tanh(x * w), W, X))
    out = np.empty((2, 3), ">f8")
    assert cf(W, X, out=[out])[0] is out
    np.testing.assert_allclose(out, np.tanh(X * W), rtol=1e-15)


def test_what_is_refused_says_what_is_wrong_with_the_array():
    cf = compile_function(gt.make_ir(lambda w, x: gt.tanh(x * w), W, X))
    with pytest.raises(TypeError, match=r"argument 1 must be f64\[2,3\] \(float64 array of shape \(2, 3\)\), got "
                                        r"f64\[3,2\] \(big-endian float64 array of shape \(3, 2\)\)"):
        cf(W, X.T.astype(">f8"))
    with pytest.raises(ValueError, match=r"out\[0\] must be C-contiguous, aligned and writeable \(got "
                                         r"c_contiguous=True, aligned=False, writeable=True\)"):
        cf(W, X, out=[_unaligned(np.zeros((2, 3)))])
    with pytest.raises(TypeError, match=r"^sum: argument 0 is a MaskedArray, a subclass of ndarray whose meaning a "
                                        r"plain array would lose; pass np.asarray\(x\)"):
        gt.differentiable(gt.sum)(np.ma.masked_array([1.0, 2.0], mask=[0, 1]))  # the mask would be lost
