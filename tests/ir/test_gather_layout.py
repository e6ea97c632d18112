"""gather_before_transpose: a transposed gather becomes a gather of the transposed operand,
with the same values bit for bit (the reference interpreter on the Function as written)."""
import numpy as np

import gradtape as gt
from gradtape import ir
from gradtape.ir.gather_layout import gather_before_transpose
from gradtape.ir.ops.indexing import gather_p
from gradtape.ir.ops.layout import transpose_p


def _ops(fn):
    return [(e.op.name, e.outvars[0].type.shape) for e in fn.eqns]


def test_batched_tangents_gathered_with_the_batch_inner():
    # the Jacobian's tail: (26, 3V) tangents gathered at (n, 3) flat indices, negated, batch moved last
    rng = np.random.default_rng(0)
    x, idx = rng.standard_normal((26, 30)), rng.integers(0, 30, (200, 3))
    fn = gt.make_ir(lambda x, i: gt.transpose(-(x[:, i] * 2.0), (1, 2, 0)), x, idx)
    new = gather_before_transpose(fn)
    (transpose,) = [e for e in new.eqns if e.op is transpose_p]
    (gather,) = [e for e in new.eqns if e.op is gather_p]
    assert transpose.outvars[0].type.shape == (30, 26)  # the small operand moves, not the result
    assert gather.params["axis"] == 0 and gather.outvars[0].type.shape == (200, 3, 26)
    want = ir.eval_function(fn, [x, idx])[0]
    np.testing.assert_array_equal(ir.eval_function(new, [x, idx])[0], want)
    np.testing.assert_array_equal(want, np.transpose(-(x[:, idx] * 2.0), (1, 2, 0)))


def test_a_middle_axis_with_trailing_axes():
    rng = np.random.default_rng(1)
    x, idx = rng.standard_normal((5, 7, 3)), rng.integers(0, 7, 40)
    fn = gt.make_ir(lambda x, i: gt.transpose(gt.sin(x[:, i]), (1, 2, 0)), x, idx)
    new = gather_before_transpose(fn)
    assert new is not fn
    np.testing.assert_array_equal(ir.eval_function(new, [x, idx])[0], ir.eval_function(fn, [x, idx])[0])


def test_left_alone_when_the_gathered_axes_do_not_lead_or_the_result_is_smaller():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((26, 300))
    few = rng.integers(0, 300, 4)
    fn = gt.make_ir(lambda x, i: gt.transpose(x[:, i]), x, few)  # (26, 4): smaller than x
    assert gather_before_transpose(fn) is fn
    many = rng.integers(0, 300, (50, 2))
    fn = gt.make_ir(lambda x, i: gt.transpose(x[:, i], (0, 2, 1)), x, many)  # the batch stays first
    assert gather_before_transpose(fn) is fn


def test_a_gather_read_twice_is_left_alone():
    rng = np.random.default_rng(3)
    x, idx = rng.standard_normal((4, 10)), rng.integers(0, 10, 60)

    def f(x, i):
        g = x[:, i]
        return gt.transpose(g), gt.sum(g)
    fn = gt.make_ir(f, x, idx)
    assert gather_before_transpose(fn) is fn
