"""scipy.special's ufuncs called on tensors (issue 26, point 2): `scipy.special.expit(t)` reaches
Tensor.__array_ufunc__ as any NumPy ufunc does, and dispatches to gradtape.scipy.special's
function of the same name, on the tape and in staged functions, with derivatives; a scipy.special
ufunc gradtape does not have is named as scipy.special's in the error, not NumPy's."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.testing import check_grads

special = pytest.importorskip("scipy.special")

X = np.array([0.3, 0.7, 1.6, 2.5])

UNARY = ["expit", "logit", "ndtr", "log_ndtr", "gammaln", "psi", "digamma", "erf", "erfc", "gamma", "i0", "i1",
         "i0e", "i1e", "entr", "rgamma", "gammasgn", "cbrt", "exp2", "expm1", "log1p"]
BINARY = ["xlogy", "xlog1py", "betaln", "beta", "poch", "kl_div", "rel_entr", "boxcox", "boxcox1p"]


def _args(name):
    x = X / 3.0 if name == "logit" else X
    return (x,) if name in UNARY else (x, X[::-1] / 2.0)


def _tape_gradients(f, args):
    ts = [gt.constant(a) for a in args]
    with gt.GradientTape() as tape:
        for t in ts:
            tape.watch(t)
        y = gt.sum(f(*ts))
    return [np.zeros_like(a) if g is None else g.numpy() for g, a in zip(tape.gradient(y, ts), args)]  # gammasgn: none


def _fd_gradients(f, args, eps=1e-6):
    out = []
    for i, a in enumerate(args):
        g = np.zeros_like(a)
        for j in range(a.size):
            up, down = [b.copy() for b in args], [b.copy() for b in args]
            up[i][j] += eps
            down[i][j] -= eps
            g[j] = (np.sum(f(*up)) - np.sum(f(*down))) / (2 * eps)
        out.append(g)
    return out


@pytest.mark.parametrize("name", UNARY + BINARY)
def test_a_scipy_ufunc_on_tensors_is_gradtapes_function(name):
    ufunc, args = getattr(special, name), _args(name)
    assert isinstance(ufunc, np.ufunc)
    expected = ufunc(*args)
    eager = ufunc(*[gt.constant(a) for a in args])
    assert isinstance(eager, gt.Tensor)
    np.testing.assert_allclose(eager.numpy(), expected, rtol=1e-10, atol=1e-12)
    staged = gt.differentiable(lambda *ts: ufunc(*ts))(*args)
    np.testing.assert_allclose(np.asarray(staged), expected, rtol=1e-10, atol=1e-12)
    fd = _fd_gradients(ufunc, args)
    for g, ref in zip(_tape_gradients(ufunc, args), fd):
        np.testing.assert_allclose(g, ref, rtol=1e-5, atol=1e-7)
    staged_grads = gt.grad(lambda *ts: gt.sum(ufunc(*ts)), argnums=tuple(range(len(args))))(*args)
    for g, ref in zip(staged_grads, fd):
        np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["expit", "ndtr", "gammaln", "xlogy"])
def test_second_derivatives_match_finite_differences(name):
    ufunc = getattr(special, name)
    check_grads(lambda *ts: ufunc(*ts), _args(name), order=2)


def test_mixed_with_numpy_calls_as_autograd_examples_write_them():
    def loss(w):
        return np.sum(special.gammaln(np.exp(w)) + np.log(special.expit(w)))

    w = np.array([0.1, -0.4, 0.9])
    value = loss(w)
    np.testing.assert_allclose(float(gt.differentiable(loss)(w)), value, rtol=1e-12)
    g = np.asarray(gt.grad(loss)(w))
    np.testing.assert_allclose(g, _fd_gradients(loss, [w])[0], rtol=1e-6)


def test_a_scipy_ufunc_gradtape_lacks_is_named_as_scipys():
    with pytest.raises(gt.UnsupportedNumPyFunction, match=r"scipy\.special\.j0 ") as info:
        special.j0(gt.constant(X))
    assert "numpy.j0" not in str(info.value)
    with pytest.raises(gt.UnsupportedNumPyFunction, match=r"scipy\.special\.exp10 .*gradtape has no alternative"):
        special.exp10(gt.constant(X))
    with pytest.raises(gt.UnsupportedNumPyFunction, match=r"scipy\.special\.xlogy\.outer"):
        special.xlogy.outer(gt.constant(X), gt.constant(X))
    with pytest.raises(TypeError, match=r"scipy\.special\.expit: the out= argument"):
        special.expit(gt.constant(X), out=np.empty(4))


def test_numpy_ufuncs_keep_their_names():
    with pytest.raises(gt.UnsupportedNumPyFunction, match=r"numpy\.spacing"):
        np.spacing(gt.constant(X))
