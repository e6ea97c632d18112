"""Matrix-vector pairs over one matrix run block of rows by block of rows
(codegen/rowblock.py): results against the reference interpreter, with
blocks and groups of rows that do not divide the row count, and the cases
that must stay separate steps."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.ir.optimize import optimize
from gradtape import ir
from gradtape.codegen import contract, rowblock
from gradtape.codegen.fusion import plan_storage
from gradtape.codegen.lowering import _build, lower_function
from gradtape.codegen.steps import fuse_fills
from gradtape.ir import ops

from .jit_helper import jit
from .lower_helpers import assert_matches
from .test_lower_ops import t

ROWS, COLS = 37, 7  # 4 blocks of 8 rows and a tail of 5 rows: one group of fewer than 8 rows


def staged_ir(f, *args):
    """The optimized Function that the staged `f` compiles for `args` (make_ir gives the
    traced one, before optimization, as jax.make_jaxpr does)."""
    return optimize(gt.make_ir(f, *args))


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(contract, "BLAS_MIN_MK", 0)          # these small products take the gemv path
    monkeypatch.setattr(rowblock, "BLOCK_ELEMENTS", 8 * COLS)  # blocks of 8 rows


def _step_kinds(fn):
    ctx = _build(fn, plan_storage(fn))
    return [type(s).__name__ for s in rowblock.block_matvec_pairs(fuse_fills(ctx.steps))]


def _check(fn, args, dtype):
    got = jit(lower_function(fn, "f"))(*args)
    want = ir.eval_function(fn, [np.asarray(a) for a in args])
    for g, w in zip(got, want):
        assert_matches(g, w, 1e-12 if dtype == np.float64 else 2e-5, str(fn))


def _logreg(w, X, y):
    z = X @ w
    return gt.mean(gt.softplus(z) - y * z)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: np.dtype(d).name)
def test_logistic_regression_gradient_runs_in_one_blocked_step(dtype):
    rng = np.random.default_rng(30)
    args = [rng.standard_normal(COLS).astype(dtype), rng.standard_normal((ROWS, COLS)).astype(dtype),
            (rng.random(ROWS) > 0.5).astype(dtype)]
    fn = staged_ir(gt.grad(_logreg), *args)
    assert _step_kinds(fn) == ["RowBlocked"]
    _check(fn, args, dtype)


def test_values_computed_in_the_group_are_complete_for_later_steps():
    """z and r are outputs too, and a later step reads z reversed."""
    b = ir.Builder()
    X, w = b.input(t((ROWS, COLS))), b.input(t((COLS,)))
    z = ops.contract(X, w, "ij,j->i")
    r = ops.tanh(z) * 2.0
    g = ops.contract(r, X, "i,ij->j")
    reversed_z = ops.slice(z, (ROWS - 1,), (-1,), (-1,))
    fn = b.build([X, w], [g, z, r, reversed_z + 1.0])
    assert _step_kinds(fn)[0] == "RowBlocked"
    rng = np.random.default_rng(31)
    _check(fn, [rng.standard_normal((ROWS, COLS)), rng.standard_normal(COLS)], np.float64)


def test_second_product_through_a_transposed_view_of_the_matrix():
    b = ir.Builder()
    X, w = b.input(t((ROWS, COLS))), b.input(t((COLS,)))
    r = ops.exp(ops.contract(X, w, "ij,j->i") * 0.1)
    fn = b.build([X, w], [ops.contract(ops.transpose(X, (1, 0)), r, "ji,i->j")])
    assert _step_kinds(fn) == ["RowBlocked"]
    rng = np.random.default_rng(32)
    _check(fn, [rng.standard_normal((ROWS, COLS)), rng.standard_normal(COLS)], np.float64)


def test_reading_a_value_of_the_group_at_another_row_keeps_the_steps_apart():
    b = ir.Builder()
    X, w = b.input(t((ROWS, COLS))), b.input(t((COLS,)))
    z = ops.exp(ops.contract(X, w, "ij,j->i") * 0.1)
    mirrored = ops.slice(z, (ROWS - 1,), (-1,), (-1,))  # z[ROWS - 1 - i]: a later block's row
    fn = b.build([X, w], [ops.contract(z * mirrored, X, "i,ij->j")])
    assert "RowBlocked" not in _step_kinds(fn)
    rng = np.random.default_rng(33)
    _check(fn, [rng.standard_normal((ROWS, COLS)), rng.standard_normal(COLS)], np.float64)


def test_products_of_two_different_matrices_stay_apart():
    b = ir.Builder()
    X, Y, w = b.input(t((ROWS, COLS))), b.input(t((ROWS, COLS))), b.input(t((COLS,)))
    r = ops.tanh(ops.contract(X, w, "ij,j->i"))
    fn = b.build([X, Y, w], [ops.contract(r, Y, "i,ij->j")])
    assert "RowBlocked" not in _step_kinds(fn)
    rng = np.random.default_rng(34)
    _check(fn, [rng.standard_normal((ROWS, COLS)), rng.standard_normal((ROWS, COLS)),
                rng.standard_normal(COLS)], np.float64)


def test_value_and_grad_moves_the_loss_sum_after_the_pair():
    rng = np.random.default_rng(35)
    args = [rng.standard_normal(COLS), rng.standard_normal((ROWS, COLS)), (rng.random(ROWS) > 0.5) * 1.0]
    fn = staged_ir(gt.value_and_grad(_logreg), *args)
    kinds = _step_kinds(fn)
    assert kinds[0] == "RowBlocked" and "Reduce" in kinds[1:]
    _check(fn, args, np.float64)


def test_a_step_among_the_pair_that_the_pair_reads_keeps_them_apart():
    """r = z / sum(z): the sum needs every row of z before any row of r."""
    b = ir.Builder()
    X, w = b.input(t((ROWS, COLS))), b.input(t((COLS,)))
    z = ops.exp(ops.contract(X, w, "ij,j->i") * 0.1)
    r = z / ops.reduce_sum(z, (0,))
    fn = b.build([X, w], [ops.contract(r, X, "i,ij->j")])
    assert "RowBlocked" not in _step_kinds(fn)
    rng = np.random.default_rng(36)
    _check(fn, [rng.standard_normal((ROWS, COLS)), rng.standard_normal(COLS)], np.float64)


# (rows, cols): column counts around the vector widths (4 float64, 8 float32 lanes), so that rows end in
# a full vector or in a tail of 1-7 columns, have fewer columns than one vector, or an odd number of them;
# row counts whose last block ends in a group of 4 rows (one vector of float64 dots, two accumulators
# per row) or of 1-7 rows (summed row by row).
SHAPES = [(37, 3), (44, 9), (52, 16), (29, 19), (68, 33)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("rows, cols", SHAPES)
def test_shapes_of_groups_and_column_tails(monkeypatch, rows, cols, dtype):
    monkeypatch.setattr(rowblock, "BLOCK_ELEMENTS", 16 * cols)  # blocks of 16 rows: two groups
    rng = np.random.default_rng(rows * cols)
    args = [rng.standard_normal(cols).astype(dtype), rng.standard_normal((rows, cols)).astype(dtype),
            (rng.random(rows) > 0.5).astype(dtype)]
    fn = staged_ir(gt.grad(_logreg), *args)
    assert _step_kinds(fn) == ["RowBlocked"]
    _check(fn, args, dtype)


def test_strided_vectors_and_a_matrix_with_padded_rows():
    """w read every other element, the matrix a slice of wider rows (lda > cols), z an output too."""
    rows, cols = 41, 10
    b = ir.Builder()
    big, wide = b.input(t((rows, cols + 3))), b.input(t((2 * cols,)))
    X = ops.slice(big, (0, 1), (rows, cols + 1), (1, 1))
    w = ops.slice(wide, (0,), (2 * cols,), (2,))
    z = ops.contract(X, w, "ij,j->i")
    r = ops.tanh(z) * 0.5
    fn = b.build([big, wide], [ops.contract(r, X, "i,ij->j"), z])
    assert _step_kinds(fn)[0] == "RowBlocked"
    rng = np.random.default_rng(37)
    _check(fn, [rng.standard_normal((rows, cols + 3)), rng.standard_normal(2 * cols)], np.float64)
