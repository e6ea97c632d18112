"""ir/program_cost.py: the estimate counts what the compiled program does (the code
generator's fusion: what is stored, what is computed inside its readers and how many times),
with the weights of the module's table; loops and run-time sizes make it None."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir import ops
from gradtape.ir import program_cost as pc


def approx(x):
    return pytest.approx(x, rel=1e-12)  # sums of binary fractions like 0.1


def _fn(build, *types):
    b = ir.Builder()
    ins = [b.input(ir.TensorType(shape, np.float64)) for shape in types]
    outs = build(b, *ins)
    return b.build(ins, list(outs) if isinstance(outs, tuple) else [outs])


def test_an_elementwise_chain_is_one_kernel():
    fn = _fn(lambda b, x: ops.add(ops.tanh(x), x), (1000,))
    # tanh and add per element, one write, x read once from memory (the second read hits the cache)
    want = 1000 * (pc.COSTLY + pc.CHEAP + pc.WRITE + pc.LOAD)
    assert pc.program_cost(fn) == approx(want)


def test_a_value_read_more_than_its_size_is_stored_once():
    # e = exp(x) read by two outputs: not cheap, so stored, and computed once
    fn = _fn(lambda b, x: (ops.mul(ops.exp(x), 2.0), ops.add(ops.exp(x), 1.0)), (100,))
    shared = _fn(lambda b, x: (lambda e: (ops.mul(e, 2.0), ops.add(e, 1.0)))(ops.exp(x)), (100,))
    # two exps computed (the unshared program) vs one exp, stored and read back
    assert pc.program_cost(fn) == approx(100 * (2 * pc.COSTLY + 2 * pc.CHEAP + 2 * pc.WRITE + pc.LOAD))
    e = pc.COSTLY + pc.WRITE + pc.LOAD                  # computed, stored, read back
    assert pc.program_cost(shared) == approx(100 * (e + 2 * pc.CHEAP + 2 * pc.WRITE + pc.LOAD))


def test_a_gather_of_an_inlined_identity_evaluates_only_what_it_reads():
    n, m = 1000, 100
    idx = np.arange(m) * 7 % n

    def build(b, x, inner):
        eye = ops.cast(ops.eq(b.literal(np.arange(n).reshape(n, 1)), b.literal(np.arange(n))), np.dtype("f8"))
        g = ops.gather(eye, b.literal(idx), 1)                   # (n, m): 100,000 of the 1e6 elements
        return ops.mul(g, x) if inner else ops.transpose(ops.mul(g, x), (1, 0))

    outer = _fn(lambda b, x: build(b, x, False), (m,))
    # gathered rows walk the identity's rows: vector code; eq, cast, gather, mul per element read
    assert pc.program_cost(outer) == approx(n * m * (2 * pc.CHEAP + pc.MOVE + pc.CHEAP + pc.WRITE) + m * pc.LOAD)
    inner = _fn(lambda b, x: build(b, x, True), (m,))
    # the kernel's inner loop walks gathered positions: the gather and what it computes are scalar
    assert pc.program_cost(inner) == approx(n * m * (3 * pc.SCALAR_CHEAP + pc.CHEAP + pc.WRITE) + m * pc.LOAD)


def test_scatter_adds_and_transposed_reads():
    idx = np.arange(300) * 3 % 1000
    fn = _fn(lambda b, u: ops.transpose(ops.scatter_add(u, b.literal(idx), 1, 1000), (1, 0)), (300, 300))
    scatter = 300 * 1000 * pc.WRITE + 300 * 300 * (pc.SCATTER_UPDATE + pc.LOAD)
    transpose = 300 * 1000 * (pc.STRIDED + pc.WRITE)  # a stored value read across its rows
    assert pc.program_cost(fn) == approx(scatter + transpose)
    small = _fn(lambda b, u: ops.transpose(ops.scatter_add(u, b.literal(idx[:3] % 10), 1, 10), (1, 0)), (3, 3))
    assert pc.program_cost(small) == approx(30 * pc.WRITE + 9 * (pc.SCATTER_UPDATE + pc.LOAD) + 30 * (pc.LOAD + pc.WRITE))


def test_contractions_count_multiply_adds_and_store_their_operands():
    fn = _fn(lambda b, a, c: ops.contract(ops.sin(a), c, "ij,jk->ik"), (30, 40), (40, 50))
    sin_a = 1200 * (pc.LOAD + pc.COSTLY + pc.WRITE + pc.LOAD)  # a read, stored (BLAS reads memory), read
    product = 30 * 40 * 50 * pc.MULTIPLY_ADD + 1500 * pc.WRITE + 2000 * pc.LOAD  # and c read
    assert pc.program_cost(fn) == approx(sin_a + product)


def test_loops_give_no_estimate():
    fn = gt.make_ir(lambda x: gt.fori_loop(0, 3, lambda i, v: v * 2.0, x), np.ones(4))
    assert pc.program_cost(fn) is None
