"""gradtape's linear-algebra functions against NumPy: values in float32 and
float64, NumPy dispatch, tape gradients against hand-derived formulas, and
error messages."""
import numpy as np
import pytest

import gradtape as gt

RNG = np.random.default_rng(0)


def r(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def assert_matches(got, want):
    want = np.asarray(want)
    assert isinstance(got, gt.Tensor)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5 if want.dtype == np.float32 else 1e-12)


# --- values -----------------------------------------------------------------------------

CASES = [
    ("matmul_2d", gt.matmul, np.matmul, [(3, 4), (4, 2)]),
    ("matmul_vec_mat", gt.matmul, np.matmul, [(4,), (4, 2)]),
    ("matmul_mat_vec", gt.matmul, np.matmul, [(3, 4), (4,)]),
    ("matmul_vec_vec", gt.matmul, np.matmul, [(4,), (4,)]),
    ("matmul_batch_broadcast", gt.matmul, np.matmul, [(2, 1, 3, 4), (3, 4, 2)]),
    ("matmul_vec_batch", gt.matmul, np.matmul, [(4,), (2, 4, 3)]),
    ("dot_vec", gt.dot, np.dot, [(3,), (3,)]),
    ("dot_nd", gt.dot, np.dot, [(2, 3, 4), (5, 4, 2)]),
    ("dot_scalar", gt.dot, np.dot, [(), (2, 3)]),
    ("vdot", gt.vdot, np.vdot, [(2, 3), (6,)]),
    ("inner", gt.inner, np.inner, [(2, 3), (4, 3)]),
    ("outer", gt.outer, np.outer, [(2, 2), (3,)]),
    ("tensordot", gt.tensordot, np.tensordot, [(2, 3, 4), (3, 4, 2)]),
    ("trace", gt.trace, np.trace, [(3, 3)]),
    ("diag_vector", gt.diag, np.diag, [(3,)]),
    ("diag_matrix", gt.diag, np.diag, [(3, 4)]),
    ("norm", gt.norm, np.linalg.norm, [(2, 3)]),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, fn, np_fn, shapes", CASES, ids=[c[0] for c in CASES])
def test_values_match_numpy(name, fn, np_fn, shapes, dtype):
    xs = [r(*s, dtype=dtype) for s in shapes]
    assert_matches(fn(*[gt.constant(x) for x in xs]), np_fn(*xs))
    assert_matches(fn(gt.constant(xs[0]), *xs[1:]), np_fn(*xs))  # arrays mix with tensors


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),
    ("a...,...b", [(2, 3), (3, 4)]),
    ("ba,Ab", [(2, 3), (4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("i,j,k", [(2,), (3,), (2,)]),
    ("ij,k->i", [(2, 3), (4,)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("ij->j", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ijk", [(2, 3, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ij , jk -> ik", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("subscripts, shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum_matches_numpy(subscripts, shapes, dtype):
    xs = [r(*s, dtype=dtype) for s in shapes]
    assert_matches(gt.einsum(subscripts, *[gt.constant(x) for x in xs]), np.einsum(subscripts, *xs))


def test_integer_operands_keep_numpy_dtypes():
    a, b = np.arange(6, dtype=np.int32).reshape(2, 3), np.arange(6, dtype=np.int32).reshape(3, 2)
    assert_matches(gt.constant(a) @ b, a @ b)
    assert_matches(gt.einsum("ij->j", gt.constant(a)), np.einsum("ij->j", a))
    assert_matches(gt.trace(gt.constant(a @ b)), np.trace(a @ b))  # widens like numpy.trace
    assert_matches(gt.norm(gt.constant(a)), np.linalg.norm(a))  # integers become float64
    assert_matches(gt.constant(a) @ b.astype(np.float32), a @ b.astype(np.float32))  # promotion


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_diag_and_trace_offsets(k):
    m, v = r(3, 4), r(3)
    assert_matches(gt.diag(gt.constant(m), k), np.diag(m, k))
    assert_matches(gt.diag(gt.constant(v), k), np.diag(v, k))
    assert_matches(gt.trace(gt.constant(m), k), np.trace(m, k))
    t = r(2, 3, 4)
    assert_matches(gt.trace(gt.constant(t), k, 2, 0), np.trace(t, k, 2, 0))


@pytest.mark.parametrize(
    "kwargs",
    [
        {}, {"ord": 2}, {"ord": 1}, {"ord": 3}, {"ord": 0.5}, {"ord": 0},
        {"axis": 0}, {"axis": -1, "keepdims": True}, {"keepdims": True},
    ],
    ids=str,
)
def test_vector_norms(kwargs):
    x = r(2, 5) if "axis" in kwargs else r(5)
    assert_matches(gt.norm(gt.constant(x), **kwargs), np.linalg.norm(x, **kwargs))


@pytest.mark.parametrize(
    "shape, kwargs",
    [((3, 4), {"ord": "fro"}), ((2, 3, 4), {}), ((2, 3, 4), {"axis": (2, 0)}),
     ((2, 3, 4), {"axis": (0, 1), "keepdims": True}), ((2, 3, 4), {"keepdims": True})],
    ids=str,
)
def test_matrix_and_whole_array_norms(shape, kwargs):
    x = r(*shape)
    assert_matches(gt.norm(gt.constant(x), **kwargs), np.linalg.norm(x, **kwargs))


def test_max_norms():
    x, m = r(5), r(3, 4)
    assert_matches(gt.norm(gt.constant(x), np.inf), np.linalg.norm(x, np.inf))
    for ord in (np.inf, -np.inf, 1, -1):
        assert_matches(gt.norm(gt.constant(m), ord), np.linalg.norm(m, ord))
    assert_matches(gt.norm(gt.constant(x), -np.inf), np.linalg.norm(x, -np.inf))


# --- NumPy dispatch and Tensor methods --------------------------------------------------

def test_numpy_dispatch_and_operators():
    a, w = r(2, 3), r(3, 4)
    t = gt.constant(a)
    assert_matches(np.matmul(t, w), a @ w)
    assert_matches(t @ w, a @ w)
    assert_matches(t @ gt.constant(w), a @ w)
    assert_matches(a.T @ t, a.T @ a)  # ndarray @ Tensor goes through __array_ufunc__
    assert_matches(np.einsum("ij,jk->ik", t, w), a @ w)
    assert_matches(np.linalg.norm(t), np.linalg.norm(a))
    assert_matches(np.dot(t, w), a @ w)
    assert_matches(t.dot(w), a @ w)
    assert_matches(np.vdot(t, a), np.vdot(a, a))
    assert_matches(np.inner(t, a), np.inner(a, a))
    assert_matches(np.outer(t, a[0]), np.outer(a, a[0]))
    assert_matches(np.tensordot(t, w, 1), np.tensordot(a, w, 1))
    assert_matches(np.trace(t @ w[:, :2]), np.trace(a @ w[:, :2]))
    assert_matches(np.diag(t), np.diag(a))


def test_x_at_w_traces_to_one_contract():
    fn = gt.make_ir(lambda x, w: x @ w, np.ones((2, 3)), np.ones((3, 4)))
    assert str(fn) == "{ a:f64[2,3] b:f64[3,4] . c:f64[2,4] = contract[spec='ij,jk->ik'] a b -> c }"


def test_batch_broadcasting_squeezes_instead_of_copying():
    fn = gt.make_ir(gt.matmul, np.ones((2, 1, 3, 4)), np.ones((5, 4, 2)))
    assert str(fn) == (
        "{ a:f64[2,1,3,4] b:f64[5,4,2] . c:f64[2,3,4] = reshape[shape=(2, 3, 4)] a ; "
        "d:f64[2,5,3,2] = contract[spec='aij,bjk->abik'] c b -> d }"
    )


# --- gradients under GradientTape vs hand-derived formulas ------------------------------

def _grads(f, *xs):
    ts = [gt.constant(x) for x in xs]
    with gt.GradientTape() as tape:
        tape.watch(ts)
        y = f(*ts)
    return [g.numpy() for g in tape.gradient(y, ts)]


def test_grad_of_sum_of_matmul():
    a, b = r(2, 3), r(3, 4)
    ga, gb = _grads(lambda a, b: gt.einsum("ij->", a @ b), a, b)
    np.testing.assert_allclose(ga, np.ones((2, 4)) @ b.T, rtol=1e-12)
    np.testing.assert_allclose(gb, a.T @ np.ones((2, 4)), rtol=1e-12)


def test_grad_of_batched_broadcast_matmul_sums_over_the_broadcast():
    a, b = r(2, 3, 4), r(4, 5)
    ga, gb = _grads(lambda a, b: gt.einsum("bij->", a @ b), a, b)
    np.testing.assert_allclose(ga, np.broadcast_to(np.ones((3, 5)) @ b.T, (2, 3, 4)), rtol=1e-12)
    np.testing.assert_allclose(gb, sum(a[i].T @ np.ones((3, 5)) for i in range(2)), rtol=1e-12)


def test_grad_of_quadratic_form_and_its_hessian():
    m, x = r(3, 3), r(3)
    (gx,) = _grads(lambda x: gt.dot(x, gt.matmul(m, x)), x)
    np.testing.assert_allclose(gx, (m + m.T) @ x, rtol=1e-12)
    xt, v = gt.constant(x), r(3)
    with gt.GradientTape() as outer:
        outer.watch(xt)
        with gt.GradientTape() as inner:
            inner.watch(xt)
            y = gt.dot(xt, gt.matmul(m, xt))
        g = inner.gradient(y, xt)
        gv = gt.dot(g, v)
    np.testing.assert_allclose(outer.gradient(gv, xt).numpy(), (m + m.T) @ v, rtol=1e-12)


def test_grads_of_trace_diag_outer_and_einsum():
    a, b, u, v = r(3, 3), r(3, 3), r(3), r(2)
    (g,) = _grads(gt.trace, a)
    np.testing.assert_array_equal(g, np.eye(3))
    (g,) = _grads(lambda a: gt.einsum("i->", gt.diag(a)), a)
    np.testing.assert_array_equal(g, np.eye(3))
    (g,) = _grads(lambda u: gt.trace(gt.matmul(gt.diag(u), b)), u)
    np.testing.assert_allclose(g, np.diag(b), rtol=1e-12)
    gu, gv = _grads(lambda u, v: gt.einsum("ij->", gt.outer(u, v)), u, v)
    np.testing.assert_allclose(gu, np.full(3, v.sum()), rtol=1e-12)
    np.testing.assert_allclose(gv, np.full(2, u.sum()), rtol=1e-12)
    ga, gb = _grads(lambda a, b: gt.einsum("ij,ij->", a, b), a, b)
    np.testing.assert_array_equal(ga, b)
    np.testing.assert_array_equal(gb, a)


def test_grads_of_norms():
    x, m = r(4), r(2, 3)
    (g,) = _grads(gt.norm, x)
    np.testing.assert_allclose(g, x / np.linalg.norm(x), rtol=1e-12)
    (g,) = _grads(lambda x: gt.norm(x, 1), x)
    np.testing.assert_allclose(g, np.sign(x), rtol=1e-12)
    (g,) = _grads(lambda m: gt.norm(m, "fro"), m)
    np.testing.assert_allclose(g, m / np.linalg.norm(m), rtol=1e-12)


def test_float32_gradients_stay_float32():
    a, b = r(2, 3, dtype=np.float32), r(3, 2, dtype=np.float32)
    ga, gb = _grads(lambda a, b: gt.einsum("ij->", a @ b), a, b)
    assert ga.dtype == gb.dtype == np.float32
    np.testing.assert_allclose(ga, np.ones((2, 2), np.float32) @ b.T, rtol=1e-6)


# --- errors -------------------------------------------------------------------------------

def _raises(exc, fn, *args, **kwargs):
    with pytest.raises(exc) as err:
        fn(*args, **kwargs)
    return str(err.value)


def test_matmul_errors():
    a = gt.constant(np.ones((3, 4)))
    assert _raises(ValueError, gt.matmul, a, np.ones((5, 2))) == (
        "matmul: shapes (3, 4) and (5, 2) do not match: 4 (dim 1 of the first) "
        "!= 5 (dim 0 of the second)"
    )
    assert _raises(ValueError, lambda: a @ np.ones(5)) == (
        "matmul: shapes (3, 4) and (5,) do not match: 4 (dim 1 of the first) "
        "!= 5 (dim 0 of the second)"
    )
    assert _raises(ValueError, gt.matmul, np.ones((2, 3, 4)), gt.constant(np.ones((5, 4, 2)))) == (
        "matmul: shapes (2, 3, 4) and (5, 4, 2) have batch dimensions (2,) and (5,), "
        "which cannot be broadcast together"
    )
    assert "matmul: operands must have at least one dimension, got shapes (3, 4) and ()" in _raises(
        ValueError, gt.matmul, a, 2.0
    )
    assert "matmul: operands must be integer or floating point, got dtype bool" in _raises(
        TypeError, gt.matmul, gt.constant(np.ones(2, bool)), np.ones(2, bool)
    )


def test_dot_inner_vdot_tensordot_errors():
    a = gt.constant(np.ones((3, 4)))
    assert _raises(ValueError, np.dot, a, np.ones((5, 2))) == (
        "dot: shapes (3, 4) and (5, 2) not aligned: 4 (dim 1 of the first) "
        "!= 5 (dim 0 of the second)"
    )
    assert _raises(ValueError, gt.inner, a, np.ones((2, 5))) == (
        "inner: shapes (3, 4) and (2, 5) do not match: 4 (last dim of the first) "
        "!= 5 (last dim of the second)"
    )
    assert _raises(ValueError, gt.vdot, a, np.ones(5)) == (
        "vdot: shapes (3, 4) and (5,) have different sizes 12 and 5"
    )
    assert _raises(ValueError, gt.tensordot, a, np.ones((5, 2)), 1) == (
        "tensordot: shapes (3, 4) and (5, 2) do not match along the summed axes: "
        "4 (dim 1 of the first) != 5 (dim 0 of the second)"
    )
    assert "tensordot: axes=3 needs 3 axes in each operand" in _raises(
        ValueError, gt.tensordot, a, a, 3
    )
    assert "name 1 axes of the first operand but 2 of the second" in _raises(
        ValueError, gt.tensordot, a, a, ([0], [0, 1])
    )


def test_einsum_errors():
    a = gt.constant(np.ones((3, 4)))
    assert _raises(ValueError, gt.einsum, "ij,jk->ik", a, np.ones((5, 2))) == (
        "einsum: operands disagree on the size of index 'j' in 'ij,jk->ik': "
        "4 (operand 0, dim 1, shape (3, 4)) != 5 (operand 1, dim 0, shape (5, 2))"
    )
    assert _raises(ValueError, gt.einsum, "ij,jk->ik", a) == (
        "einsum: subscripts 'ij,jk->ik' name 2 operands, got 1"
    )
    assert _raises(ValueError, gt.einsum, "ijk->i", a) == (
        "einsum: operand 0 has shape (3, 4) (rank 2) but its subscripts 'ijk' give it 3 "
        "indices; add '...' to broadcast"
    )
    assert "output subscript 'z' of 'ij->z' appears in no operand" in _raises(
        ValueError, gt.einsum, "ij->z", a
    )
    assert "have no '...'" in _raises(ValueError, gt.einsum, "...j->j", a)
    assert "invalid subscript '1'" in _raises(ValueError, gt.einsum, "i1->i", a)
    assert _raises(ValueError, gt.einsum, a, [0, 60]) == (
        "einsum: subscripts in the sublist form must be ints in [0, 52) or Ellipsis, got 60 in "
        "the sublist [0, 60] of operand 0"
    )


def test_trace_diag_norm_errors():
    assert "trace: needs an operand with at least 2 dimensions, got shape (3,)" in _raises(
        ValueError, gt.trace, gt.constant(np.ones(3))
    )
    assert _raises(ValueError, gt.diag, gt.constant(np.ones((2, 2, 2)))) == (
        "diag: input must be 1-D or 2-D, got shape (2, 2, 2)"
    )
    x = gt.constant(np.ones((2, 3)))
    assert "norm: invalid norm order 'fro' for vectors" in _raises(
        ValueError, gt.norm, np.ones(3), "fro"
    )
    # ord=2 of a matrix is its largest singular value now (it raised NotImplementedError before)
    np.testing.assert_allclose(gt.norm(x, 2).numpy(), np.linalg.norm(np.asarray(x), 2), rtol=1e-12)
    assert "norm: ord=1 with axis=None needs a 1-D or 2-D input" in _raises(
        ValueError, gt.norm, gt.constant(np.ones((2, 2, 2))), 1
    )
    assert "norm: axis 2 is out of bounds" in _raises(np.exceptions.AxisError, gt.norm, x, None, 2)
