"""Functions for the batching tests that the op specs do not reach.

The op specs (op_specs.py) are written with gradtape functions on float
inputs, so their index arrays are literals and no integer or bool value is
ever an input. These cases make every operand of gather/scatter_add,
argmax/argmin, integer and bool elementwise ops, casts and the layout ops
an input of its own, so the batching tests can batch each of them.

Each case is a Function built with ir.Builder and one value maker per input
(rng -> array of the input's type, in the op's domain).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from gradtape import ir
from gradtape.ir import ops


@dataclasses.dataclass
class Case:
    name: str
    fn: ir.Function
    makers: list  # one rng -> np.ndarray per input of fn

    def args(self, rng) -> list:
        return [m(rng) for m in self.makers]

    def __str__(self):
        return self.name


def f64(*shape):
    return ir.TensorType(shape, np.float64)


def function(in_types, body: Callable) -> ir.Function:
    """The Function `body(*inputs)` (one Sym or a tuple of Syms) over inputs of `in_types`."""
    b = ir.Builder()
    xs = [b.input(t) for t in in_types]
    outs = body(*xs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    return b.build(xs, outs)


def normal(*shape, dtype=np.float64):
    return lambda rng: rng.standard_normal(shape).astype(dtype)


def integers(hi, *shape, dtype=np.int64, lo=0):
    return lambda rng: rng.integers(lo, hi, shape).astype(dtype)


def bools(*shape):
    return lambda rng: rng.random(shape) < 0.5


def _case(name, in_makers, body):
    """A Case whose input types are those of one sample of each maker."""
    sample = [np.asarray(m(np.random.default_rng(0))) for m in in_makers]
    types = [ir.TensorType(s.shape, s.dtype) for s in sample]
    return Case(name, function(types, body), list(in_makers))


I32 = np.int32
CASES = [
    # gather: operand and indices both inputs, every axis, index ranks 0..2
    _case("gather_axis0", [normal(4, 3), integers(4, 5)], lambda x, i: ops.gather(x, i, 0)),
    _case("gather_axis1_2d_index", [normal(2, 4, 3), integers(4, 2, 2)],
          lambda x, i: ops.gather(x, i, 1)),
    _case("gather_axis2_int32_index", [normal(2, 3, 4), integers(4, 3, dtype=I32)],
          lambda x, i: ops.gather(x, i, 2)),
    _case("gather_scalar_index", [normal(3, 4), integers(4)], lambda x, i: ops.gather(x, i, 1)),
    _case("gather_uint8_index_wraps_offset", [normal(200, 2), integers(200, 3, dtype=np.uint8)],
          lambda x, i: ops.gather(x, i, 0)),
    # scatter_add: duplicates must accumulate within each batch element only
    _case("scatter_add_axis0", [normal(5, 2), integers(3, 5)], lambda x, i: ops.scatter_add(x, i, 0, 3)),
    _case("scatter_add_axis1_2d_index", [normal(2, 2, 3, 2), integers(4, 2, 3)],
          lambda x, i: ops.scatter_add(x, i, 1, 4)),
    _case("scatter_add_scalar_index", [normal(2, 3), integers(4)],
          lambda x, i: ops.scatter_add(x, i, 1, 4)),
    # argmax / argmin over each axis
    _case("argmax_axis0", [normal(3, 4)], lambda x: ops.argmax(x, 0)),
    _case("argmax_axis1", [normal(3, 4)], lambda x: ops.argmax(x, 1)),
    _case("argmin_axis1_3d", [normal(2, 4, 3)], lambda x: ops.argmin(x, 1)),
    # integer and bool elementwise ops and casts, with broadcasting
    _case("int_arithmetic", [integers(10, 2, 3, lo=-9), integers(10, 3, lo=1)],
          lambda a, b: ops.sub(ops.mul(a, b), ops.maximum(a, b)) + ops.abs(ops.neg(a))),
    _case("int_comparisons_and_logic", [integers(5, 2, 3), integers(5, 3)],
          lambda a, b: ops.logical_xor(ops.le(a, b), ops.logical_not(ops.ne(a, b)))),
    _case("bool_where", [bools(3), normal(2, 3), normal(2, 1)], lambda c, x, y: ops.where(c, x, y)),
    _case("cast_int_to_float", [integers(7, 2, 3)], lambda a: ops.cast(a, np.float32) * 0.5),
    _case("cast_float_to_int", [normal(2, 3)], lambda x: ops.cast(x * 3.0, np.int64)),
    # layout ops taking every param form
    _case("broadcast_to_rank_and_ones", [normal(2, 1, 3)], lambda x: ops.broadcast_to(x, (4, 2, 5, 3))),
    _case("broadcast_to_scalar", [normal()], lambda x: ops.broadcast_to(x, (2, 3))),
    _case("reshape_to_scalar", [normal(1, 1)], lambda x: ops.reshape(x, ())),
    _case("transpose_3d", [normal(2, 3, 4)], lambda x: ops.transpose(x, (1, 2, 0))),
    _case("slice_negative_step", [normal(3, 5)], lambda x: ops.slice(x, (2, 4), (-1, 0), (-1, -2))),
    _case("unslice", [normal(2, 2)], lambda x: ops.unslice(x, (4, 5), (3, 1), (0, 4), (-2, 2))),
    _case("pad_value", [normal(2, 3)], lambda x: ops.pad(x, ((1, 0), (2, 1)), 1.5)),
    _case("concatenate_three", [normal(2, 3), normal(2, 1), normal(2, 2)],
          lambda x, y, z: ops.concatenate([x, y, z, x], 1)),
    _case("reduce_prod_axes", [normal(2, 3, 2)], lambda x: ops.reduce_prod(x, (0, 2))),
    _case("reduce_max_min", [normal(2, 3, 2)],
          lambda x: ops.reduce_max(x, (0, 2)) - ops.reduce_min(x, (0, 2))),
    _case("int_reduce_sum", [integers(9, 2, 3)], lambda a: ops.reduce_sum(a, (1,))),
    # contract with batch letters, outer products, letters summed alone, integers
    _case("contract_batch_letter", [normal(2, 3, 4), normal(2, 4, 3)],
          lambda a, b: ops.contract(a, b, "bij,bjk->bik")),
    _case("contract_outer", [normal(3), normal(2)], lambda a, b: ops.contract(a, b, "i,j->ij")),
    _case("contract_summed_alone", [normal(2, 3), normal(4)], lambda a, b: ops.contract(a, b, "ij,k->i")),
    _case("contract_int", [integers(5, 2, 3), integers(5, 3)], lambda a, b: ops.contract(a, b, "ij,j->i")),
    # several outputs, one of them independent of some inputs
    _case("two_outputs", [normal(3), normal(3)], lambda x, y: (ops.sin(x), ops.reduce_sum(x * y, (0,)))),
]
