"""Every op spec (tests/ir/op_specs.py), forward and backward, compiled and
compared with the reference interpreter.

The compiled Function is the joint vjp (inputs + one cotangent per output ->
outputs + gradients): its outputs are the forward values followed by the
gradients, so one compile per spec checks both, and the backward half
exercises the adjoint ops: unslice, scatter_add, broadcast_to, reductions of
cotangents, masked where, contractions of cotangents, ...
"""
import zlib

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from tests.ir.op_specs import all_specs

from .lower_helpers import check

SPECS = all_specs()


def _joint_function(spec):
    """The spec's vjp Function and values for its inputs and random cotangents."""
    rng = np.random.default_rng(zlib.crc32(spec.name.encode()))  # deterministic per spec
    args = [np.asarray(a) for a in spec.args(rng)]
    fn = gt.make_ir(spec.fn, *args)
    values = [np.asarray(a, v.type.dtype).reshape(v.type.shape) for a, v in zip(args, fn.invars)]
    joint, _ = ir.vjp(fn, [i for i, v in enumerate(fn.invars) if v.type.is_float])
    values += [rng.standard_normal(v.type.shape).astype(v.type.dtype) for v in joint.invars[len(values):]]
    return joint, values


def _rtol(fn):
    # Values that went through float32 anywhere carry float32 rounding, even in float64 outputs.
    has_f32 = any(v.type.dtype == np.float32 for e in fn.eqns for v in e.outvars)
    return 2e-5 if has_f32 else 1e-11  # f64: a few ulps of libm-vs-polynomial difference, propagated


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_forward_and_backward(spec):
    fn, values = _joint_function(spec)
    check(fn, values, _rtol(fn))

