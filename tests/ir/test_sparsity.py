"""Jacobian sparsity patterns read from the IR, and column colouring.

Each pattern is checked against the nonzeros of a dense Jacobian evaluated
at random points: central differences of the reference interpreter (or,
where the IR cuts what differences would see, e.g. stop_gradient, the
forward-mode Jacobian). The pattern must contain every nonzero, and for
structure the analysis models exactly it must equal them.
"""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir import ops
from gradtape.ir.sparsity import (
    Pattern,
    colour_columns,
    column_intersection_graph,
    from_coo,
    jacobian_pattern,
)

F64 = np.dtype(np.float64)


def fd_jacobian(fn, args, wrt, eps=1e-6):
    """Central differences of the reference interpreter: (out.size, x.size)."""
    x = np.asarray(args[wrt], np.float64)
    cols = []
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = eps
        outs = []
        for sign in (1, -1):
            moved = list(args)
            moved[wrt] = x + sign * step.reshape(x.shape)
            outs.append(np.asarray(ir.eval_function(fn, moved)[0], np.float64).ravel())
        cols.append((outs[0] - outs[1]) / (2 * eps))
    return np.stack(cols, axis=1)


def ad_jacobian(fn, args, wrt):
    """Forward mode over the standard basis, in the reference interpreter."""
    joint, _ = ir.jvp(fn, [wrt])
    x = np.asarray(args[wrt])
    cols = []
    for j in range(x.size):
        t = np.zeros(x.size, x.dtype)
        t[j] = 1
        out = ir.eval_function(joint, list(args) + [t.reshape(x.shape)])[len(fn.outvars)]
        cols.append(np.asarray(out, np.float64).ravel())
    return np.stack(cols, axis=1)


def observed_nonzeros(fn, make_args, wrt, reference, points=3):
    """Union of the Jacobian's nonzeros over a few random points."""
    rng = np.random.default_rng(0)
    seen = None
    for _ in range(points):
        args = make_args(rng)
        jac = (fd_jacobian if reference == "fd" else ad_jacobian)(fn, args, wrt)
        nz = jac != 0
        seen = nz if seen is None else seen | nz
    return seen


def uniform(*shape):
    return lambda rng: rng.uniform(0.3, 1.7, shape) * rng.choice([-1.0, 1.0], shape)


def positive(*shape):
    return lambda rng: rng.uniform(0.3, 1.7, shape)


BAND = np.diag(np.full(6, 2.0)) + np.diag(np.full(5, -1.0), 1) + np.diag(np.full(5, -1.0), -1)
MASK = np.array([1.0, 0.0, 2.0, 0.0, -1.0, 0.0])
SELECT = np.array([True, False, False, True, True])


def traced(f, *makers, wrt=0):
    """A case built by tracing f on arrays of the makers' shapes."""
    rng = np.random.default_rng(1)
    fn = gt.make_ir(f, *[m(rng) for m in makers])

    def make_args(rng):
        return [m(rng) for m in makers]

    return fn, make_args, wrt


def built(body, *types, consts=()):
    """A case built with the IR Builder: body(*syms) -> out Sym."""
    b = ir.Builder()
    xs = [b.input(ir.TensorType(s, F64)) for s in types]
    out = body(*xs)
    fn = b.build(xs, [out])

    def make_args(rng):
        return [rng.uniform(0.3, 1.7, s) * rng.choice([-1.0, 1.0], s) for s in types]

    return fn, make_args, 0


def _idx(values):
    return lambda x: ir.Sym(ir.Literal(np.array(values, np.int64)), x.builder)


# (name, case, reference, tight): tight means pattern == observed nonzeros.
CASES = [
    # elementwise, with broadcasting
    ("unary chain", traced(lambda x: gt.sin(gt.exp(x)) * x, uniform(5)), "fd", True),
    ("reversed operand", traced(lambda x: x * x[::-1] + x, uniform(5)), "fd", True),
    ("broadcast outer", traced(lambda x, y: x[:, None] * y[None, :], uniform(3), uniform(4)), "fd", True),
    ("broadcast wrt y", traced(lambda x, y: x[:, None] * y[None, :], uniform(3), uniform(4), wrt=1), "fd", True),
    ("where traced condition", traced(lambda x: gt.where(x > 0, x ** 2, gt.sin(x)), uniform(5)), "fd", True),
    ("where constant condition", traced(lambda x: gt.where(SELECT, x[1:], x[:-1] * 2.0), uniform(6)), "fd", True),
    ("mul by constant zeros", traced(lambda x: x * MASK + x[::-1] * MASK, uniform(6)), "fd", True),
    ("sign is cut", traced(lambda x: gt.sign(x) * 3.0 + x[::-1] ** 2, uniform(5)), "ad", True),
    ("stop_gradient is cut", traced(lambda x: gt.stop_gradient(x) * x[::-1], uniform(5)), "ad", True),
    ("cast to int is cut", traced(lambda x: gt.cast(gt.cast(x * 3.0, "int64"), "float64") + x[:1], uniform(4)), "ad", True),
    ("comparison is cut", traced(lambda x: gt.cast(x > 0, "float64") * 2.0 + gt.sum(x[:2]), uniform(4)), "ad", True),
    ("maximum", traced(lambda x: gt.maximum(x[1:], x[:-1]), uniform(5)), "fd", False),
    ("div pow", traced(lambda x: x[1:] / x[:-1] + x[1:] ** x[:-1], positive(5)), "fd", True),
    # layout and indexing
    ("reshape transpose", traced(lambda x: gt.reshape(gt.transpose(gt.reshape(x, (3, 4))), (12,)) * 2.0, uniform(12)), "fd", True),
    ("strided slices", traced(lambda x: x[::-2] * x[1:7:3][:1], uniform(7)), "fd", True),
    ("2-D slices", traced(lambda x: x[1:, :-1] - x[:-1, 1:], uniform(3, 4)), "fd", True),
    ("concatenate", traced(lambda x: gt.concatenate([x[3:], x[:3] * 2.0, x[1:2]]), uniform(5)), "fd", True),
    ("concatenate with a constant", traced(lambda x: gt.concatenate([np.ones(2), x[::-1]]) * 2.0, uniform(4)), "fd", True),
    ("pad", traced(lambda x: gt.pad(x, (2, 1)) * 3.0, uniform(4)), "fd", True),
    ("broadcast_to", traced(lambda x: gt.broadcast_to(x, (3, 4)) * 1.5, uniform(4)), "fd", True),
    ("expand squeeze", traced(lambda x: gt.squeeze(gt.expand_dims(x, 0), 0) ** 2, uniform(4)), "fd", True),
    ("gather constant indices", traced(lambda x: x[np.array([3, 0, 3, 1])] ** 2, uniform(5)), "fd", True),
    ("gather 2-D axis 1", traced(lambda x: gt.take(x, np.array([2, 0]), axis=1) * 2.0, uniform(3, 4)), "fd", True),
    ("gather traced indices", built(lambda x, i: ops.gather(x, ops.cast(ops.floor(i * 0.0 + 1.0), "int64"), 0), (5,), (2,)), "fd", False),
    ("scatter_add constant", built(lambda x: ops.scatter_add(x * x, _idx([2, 0, 2])(x), 0, 4), (3,)), "fd", True),
    ("scatter_add traced", built(lambda x, i: ops.scatter_add(x, ops.cast(ops.floor(i * 0.0 + 1.0), "int64"), 0, 4), (3,), (3,)), "fd", False),
    ("unslice", built(lambda x: ops.unslice(ops.sin(x), (7,), (1,), (6,), (2,)), (3,)), "fd", True),
    # reductions
    ("sum axis 1", traced(lambda x: gt.sum(x ** 2, axis=1), uniform(3, 4)), "fd", True),
    ("prod axis 0", traced(lambda x: gt.prod(x, axis=0), uniform(3, 2)), "fd", True),
    ("max axis 1", traced(lambda x: gt.max(x, axis=1), uniform(2, 3)), "fd", False),
    ("argmax is cut", traced(lambda x: gt.cast(gt.argmax(x), "float64") + x[:1] * 2.0, uniform(4)), "ad", True),
    # contractions
    ("banded constant matrix", traced(lambda x: BAND @ x + gt.sin(x), uniform(6)), "fd", True),
    ("dense constant matrix", traced(lambda x: np.ones((3, 4)) @ x, uniform(4)), "fd", True),
    ("matvec wrt matrix", traced(lambda w, x: w @ x, uniform(3, 4), uniform(4)), "fd", True),
    ("matmul both traced", traced(lambda a, b: gt.einsum("ij,jk->ik", a, b), uniform(2, 3), uniform(3, 2), wrt=1), "fd", True),
    ("outer product", traced(lambda x: gt.outer(x, x[:2]), uniform(3)), "fd", True),
    # call
    ("call", built(lambda x: ops.call(gt.make_ir(lambda y: y[1:] * y[:-1], np.ones(5)), x) * 2.0, (5,)), "fd", True),
    # composites
    ("banded residual", traced(lambda x: x[:-2] - 2.0 * x[1:-1] + x[2:] + gt.sin(x[1:-1]), uniform(8)), "fd", True),
    ("grid laplacian", traced(lambda x: (lambda g: g[1:-1, 1:-1] * 4.0 - g[:-2, 1:-1] - g[2:, 1:-1] - g[1:-1, :-2] - g[1:-1, 2:] + g[1:-1, 1:-1] ** 3)(gt.reshape(x, (4, 5))), uniform(20)), "fd", True),
    ("softmax", traced(lambda x: gt.softmax(x), uniform(4)), "fd", True),
]


@pytest.mark.parametrize("name,case,reference,tight", CASES, ids=[c[0] for c in CASES])
def test_pattern_holds_every_nonzero(name, case, reference, tight):
    fn, make_args, wrt = case
    pattern = jacobian_pattern(fn, wrt)
    nonzero = observed_nonzeros(fn, make_args, wrt, reference)
    got = pattern.toarray()
    assert got.shape == nonzero.shape
    missed = nonzero & ~got
    assert not missed.any(), f"{name}: pattern misses nonzeros at {np.argwhere(missed)[:5].tolist()}"
    if tight:
        extra = got & ~nonzero
        assert not extra.any(), f"{name}: pattern has structural zeros at {np.argwhere(extra)[:5].tolist()}"


@pytest.mark.parametrize("name,case,reference,tight", CASES, ids=[c[0] for c in CASES])
def test_colouring_is_valid(name, case, reference, tight):
    fn, _, wrt = case
    pattern = jacobian_pattern(fn, wrt)
    colours, count = colour_columns(pattern)
    dense = pattern.toarray()
    assert colours.shape == (pattern.shape[1],)
    assert count == (len(set(colours[dense.any(axis=0)].tolist())) if dense.any() else 0)
    for c in range(count):
        assert dense[:, colours == c].sum(axis=1).max() <= 1, f"colour {c} has two columns sharing a row"


def test_traced_index_gather_is_dense_along_the_indexed_axis():
    fn = built(lambda x, i: ops.gather(x, ops.cast(ops.floor(i), "int64"), 1), (2, 3), (2,))[0]
    expected = np.zeros((2, 2, 2, 3), bool)
    for r in range(2):
        expected[r, :, r, :] = True  # row r of the output reads anything in row r of x
    assert np.array_equal(jacobian_pattern(fn, 0).toarray(), expected.reshape(4, 6))


def test_custom_gradient_is_treated_as_dense():
    @gt.custom_gradient
    def double(x):
        return x * 2.0, lambda g: g * 2.0

    fn = gt.make_ir(lambda x: double(x[:2]) + x[2:], np.ones(4))
    dense = jacobian_pattern(fn, 0).toarray()
    assert dense[:, :2].all()  # custom_gradient: every output on every input it reads
    assert np.array_equal(dense[:, 2:], np.eye(2, dtype=bool))


def test_outputs_and_inputs_without_dependence():
    fn = gt.make_ir(lambda x, y: (x * 2.0, y + 1.0, np.ones(3)), np.ones(3), np.ones(3))
    assert jacobian_pattern(fn, 0, 1).nnz == 0
    assert jacobian_pattern(fn, 0, 2).shape == (3, 3) and jacobian_pattern(fn, 0, 2).nnz == 0
    int_fn = gt.make_ir(lambda i, x: x * 2.0, np.ones(3, np.int64), np.ones(3))
    assert jacobian_pattern(int_fn, 0).nnz == 0
    with pytest.raises(ir.IRError, match="wrt=2 is not an input of a Function with 2 inputs"):
        jacobian_pattern(fn, 2)
    with pytest.raises(ir.IRError, match="out=3 is not an output"):
        jacobian_pattern(fn, 0, 3)


def test_rosenbrock_hessian_pattern_from_the_gradient_ir_is_tridiagonal():
    from gradtape.staging.derivative_functions import gradient_function

    def rosenbrock(x):
        return gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    grad_fn = gradient_function(gt.make_ir(rosenbrock, np.ones(7)), [0])
    want = np.abs(np.subtract.outer(np.arange(7), np.arange(7))) <= 1
    assert np.array_equal(jacobian_pattern(grad_fn, 0).toarray(), want)
    assert colour_columns(jacobian_pattern(grad_fn, 0))[1] == 3


@pytest.mark.parametrize("offsets,fewest", [((-1, 0, 1), 3), ((-2, -1, 0, 1, 2), 5), ((0, 3), 2)])
def test_banded_patterns_take_the_fewest_colours(offsets, fewest):
    n = 300
    rows = np.concatenate([np.arange(n)[(np.arange(n) + o >= 0) & (np.arange(n) + o < n)] for o in offsets])
    cols = np.concatenate([np.arange(n)[(np.arange(n) + o >= 0) & (np.arange(n) + o < n)] + o for o in offsets])
    pattern = from_coo(rows, cols, (n, n))
    colours, count = colour_columns(pattern)
    assert count == fewest  # full bands: the band width; diagonals 0 and 3: alternate
    dense = pattern.toarray()
    assert all(dense[:, colours == c].sum(axis=1).max() <= 1 for c in range(count))


def test_random_pattern_colouring_is_valid_and_not_wasteful():
    rng = np.random.default_rng(3)
    dense = rng.random((40, 60)) < 0.08
    pattern = from_coo(*np.nonzero(dense), dense.shape)
    colours, count = colour_columns(pattern)
    for c in range(count):
        assert dense[:, colours == c].sum(axis=1).max() <= 1
    graph = column_intersection_graph(pattern)
    assert count <= max(d for _, d in graph.degree) + 1  # greedy's bound
    assert count >= dense.sum(axis=1).max()  # a row's columns all differ


def test_banded_pattern_of_a_large_function_is_exact():
    n = 10000
    fn = gt.make_ir(lambda x: x[:-2] - 2.0 * x[1:-1] + x[2:] + gt.sin(x[1:-1]), np.ones(n))
    pattern = jacobian_pattern(fn, 0)
    rows, cols = pattern.coo()
    assert pattern.nnz == 3 * (n - 2)
    assert set(np.unique(cols - rows).tolist()) == {0, 1, 2}
    assert colour_columns(pattern)[1] == 3


def test_pattern_helpers():
    p = from_coo(np.array([0, 2, 0, 2]), np.array([1, 0, 1, 2]), (3, 3))  # a duplicate
    assert p.nnz == 3
    assert np.array_equal(p.toarray(), np.array([[0, 1, 0], [0, 0, 0], [1, 0, 1]], bool))
    assert np.array_equal(p.to_scipy().toarray(), p.toarray())
    assert np.array_equal(p.gather_rows([2, -1, 0]).toarray(), p.toarray()[[2, 1, 0]] & [[1], [0], [1]])
    assert np.array_equal(Pattern.identity(3).toarray(), np.eye(3, dtype=bool))
    assert colour_columns(Pattern.empty(2, 4))[1] == 0
