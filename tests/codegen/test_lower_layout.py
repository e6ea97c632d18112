"""Layout and indexing ops (reshape, transpose, broadcast_to, slice, pad,
unslice, gather, scatter_add, concatenate) on stored and on computed values,
in several dtypes, with empty arrays and scalars; exact comparisons."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir import ops

from gradtape.ir.inline_calls import inline_calls

from .lower_helpers import check, compiled
from .test_lower_ops import t

DTYPES = [np.float64, np.float32, np.int32, np.uint8, np.bool_]


def values(rng, shape, dtype):
    if np.dtype(dtype).kind == "b":
        return rng.standard_normal(shape) > 0
    return (rng.standard_normal(shape) * 10).astype(dtype)


def build(types, body):
    b = ir.Builder()
    xs = [b.input(ty) for ty in types]
    outs = body(*xs)
    return b.build(xs, list(outs) if isinstance(outs, (list, tuple)) else [outs])


def _layout_chain(x):
    """Every layout op on a stored value (views) and on a computed one (index arithmetic)."""
    y = ops.neg(x) if x.dtype.kind != "b" else ops.logical_not(x)  # a computed value
    outs = []
    for v in (x, y):
        tr = ops.transpose(v, (2, 0, 1))                       # (4, 2, 3)
        outs.append(ops.reshape(tr, (8, 3)))                    # not a view of v: index conversion
        outs.append(ops.reshape(v, (6, 4)))                     # a view / a relabel
        outs.append(ops.slice(tr, (3, 0, 2), (0, 2, -1), (-2, 1, -2)))   # reversed steps
        row = ops.reshape(ops.slice(v, (1, 0, 0), (2, 3, 4)), (3, 1, 4))
        outs.append(ops.broadcast_to(row, (2, 3, 5, 4)))
        outs.append(ops.pad(tr, ((1, 0), (0, 2), (2, 1)), 1))
        outs.append(ops.unslice(v, (5, 8, 4), (4, 7, 0), (-1, -1, 4), (-3, -3, 1)))
        outs.append(ops.concatenate([v, ops.slice(v, (0, 1, 0), (2, 2, 4))], 1))
    return outs


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_layout_ops_on_stored_and_computed_values(dtype):
    rng = np.random.default_rng(10)
    x = values(rng, (2, 3, 4), dtype)
    check(build([t((2, 3, 4), dtype)], _layout_chain), [x], rtol=0)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_], ids=lambda d: np.dtype(d).name)
def test_gather_and_scatter_add(dtype):
    rng = np.random.default_rng(11)
    x = values(rng, (4, 5, 3), dtype)
    idx = np.array([[0, 4, 4], [2, 2, 1]], np.int32)   # duplicates accumulate in scatter_add
    idx64 = np.array([3, 0, 3, 3], np.int64)

    def body(x, i, j):
        g = ops.gather(x, i, 1)                                  # (4, 2, 3, 3)
        s = ops.scatter_add(g, i, 1, 6)                          # (4, 6, 3)
        g0 = ops.gather(ops.transpose(x, (2, 1, 0)), j, 2)       # of a view, along the last axis
        s0 = ops.scatter_add(x, j, 0, 5)
        lit = ops.gather(x, i.builder.literal(np.array([1, 1, 0])), 2)  # literal indices
        return g, s, g0, s0, lit

    fn = build([t(x.shape, dtype), t(idx.shape, np.int32), t(idx64.shape, np.int64)], body)
    check(fn, [x, idx, idx64], rtol=0 if dtype != np.float64 else 1e-15)


def test_empty_arrays():
    rng = np.random.default_rng(12)

    def body(x, e):
        return (
            ops.exp(e),                                           # (0, 3)
            ops.reduce_sum(e, (0,)),                              # zeros(3)
            ops.concatenate([x, e], 0),                           # (2, 3)
            ops.pad(e, ((1, 1), (0, 0)), 2.0),                    # (2, 3) all 2.0
            ops.contract(ops.transpose(e, (1, 0)), e, "ij,jk->ik"),  # (3, 3) empty sum: zeros
            ops.gather(x, e.builder.literal(np.zeros((0,), np.int64)), 0),  # (0, 3)
            ops.slice(x, (1, 0), (1, 3)),                         # (0, 3)
        )

    check(build([t((2, 3)), t((0, 3))], body), [rng.standard_normal((2, 3)), np.zeros((0, 3))], rtol=0)


def test_scalars():
    def body(s, v):
        r = ops.reshape(s, (1, 1))
        return (
            ops.exp(s) * s,
            ops.broadcast_to(r, (2, 3)) + v,
            ops.reshape(ops.reduce_max(v, (0, 1)), ()),
            ops.concatenate([ops.reshape(s, (1,)), ops.reshape(s * 2.0, (1,))], 0),
            ops.where(ops.gt(s, 0.0), s, v),
        )

    check(build([t(()), t((2, 3))], body), [np.array(0.7), np.arange(6.0).reshape(2, 3)], rtol=1e-15)


def test_outputs_that_are_inputs_literals_or_repeated():
    b = ir.Builder()
    x = b.input(t((3,)))
    y = ops.neg(x)
    fn = b.build([x], [x, y, y, b.literal(np.arange(3.0)), b.literal(2.0)])
    fn = ir.Function(fn.invars, fn.eqns, list(fn.outvars[:4]) + [ir.Literal(np.full((2,), 5, np.int8))])
    check(fn, [np.array([1.0, 2.0, 3.0])], rtol=0)


def test_calls_are_inlined():
    b = ir.Builder()
    a = b.input(t((3,)))
    inner = b.build([a], [ops.exp(a) * 0.5])  # stays near 1 when nested: a well-conditioned chain

    b = ir.Builder()
    x = b.input(t((3,)))
    call = ir.all_ops["call"]
    y = ir.bind(call, ir.bind(call, x, fn=inner), fn=inner)  # the same sub-Function twice
    fn = b.build([x], [y, ops.sin(ir.bind(call, y, fn=inner))])
    # Compiled exp is within 1 ULP of NumPy's; three nested calls and a sin of values near 1
    # amplify that by less than 10, so 1e-14 holds with room. (With a factor 2 instead of 0.5 the
    # values grow to 1e13, and sin of them turns an ULP of its argument into 1e-3.)
    check(fn, [np.array([0.1, -0.2, 0.3])], rtol=1e-14)
    flat = inline_calls(fn)
    assert [e.op.name for e in flat.eqns] == ["exp", "mul"] * 3 + ["sin"]


# --- loops cut at the edges of unslice and pad (nodes.placement_splits) -----------------------

def _rosenbrock_gradient(n):
    return gt.make_ir(gt.grad(lambda x: gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)),
                      np.ones(n))


def test_sums_of_unslices_need_no_selects_once_the_loop_is_cut():
    """grad of the Rosenbrock sum adds unslices at offsets 0, 0 and 1: three pieces of the loop,
    each knowing statically which operands are inside."""
    fn = _rosenbrock_gradient(50)
    check(fn, [np.random.default_rng(40).standard_normal(50)], rtol=1e-14)
    assert " select " not in str(compiled(fn).lowered.module)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_], ids=lambda d: np.dtype(d).name)
def test_cut_loops_over_unslices_and_pads_of_several_axes(dtype):
    """Steps 1, -1 and 2, nested placements, broadcasts, and more pieces than the cap (3-D pad)."""
    rng = np.random.default_rng(41)

    def body(x, v, c):
        y = ops.neg(x) if dtype != np.bool_ else ops.logical_not(x)  # computed: Reindex/Placed of a Map
        return (
            ops.unslice(ops.unslice(x, (9, 4), (1, 0), (7, 4)), (12, 4), (2, 0), (11, 4)),
            ops.unslice(y, (8, 6), (7, 1), (1, 5), (-1, 1)),
            ops.unslice(x, (13, 4), (0, 0), (12, 4), (2, 1)),
            ops.pad(x, ((2, 3), (1, 1)), 1),
            ops.where(ops.unslice(v, (9,), (1,), (7,)),
                      ops.pad(c, ((3, 0), (0, 2)), 0), ops.pad(c, ((0, 3), (2, 0)), 1)),
            ops.pad(ops.reshape(x, (2, 3, 4)), ((1, 2), (2, 1), (1, 3)), 1),
        )

    x = values(rng, (6, 4), dtype)
    v = rng.standard_normal(6) > 0
    c = values(rng, (6, 7), dtype)
    fn = build([t((6, 4), dtype), t((6,), np.bool_), t((6, 7), dtype)], body)
    check(fn, [x, v, c], rtol=0)


def test_reductions_of_unslices_and_pads_over_cut_loops():
    rng = np.random.default_rng(42)

    def body(x):
        p = ops.pad(ops.exp(x), ((1, 2), (3, 1)), 0.5)                 # (9, 9)
        u = ops.unslice(x, (6, 11), (0, 2), (6, 11), (1, 2))           # (6, 11), step 2
        return (ops.reduce_sum(p, (1,)), ops.reduce_sum(p, (0,)), ops.reduce_max(u, (0, 1)),
                ops.reduce_sum(p + ops.pad(x, ((2, 1), (1, 3)), 0.0), (0, 1)))

    check(build([t((6, 5))], body), [rng.standard_normal((6, 5))], rtol=1e-14)
