"""Every op spec (tests/ir/op_specs.py), forward and backward, compiled and
compared with the reference interpreter.

The compiled Function is the joint vjp (inputs + one cotangent per output ->
outputs + gradients): its outputs are the forward values followed by the
gradients, so one compile per spec checks both, and the backward half
exercises the adjoint ops: unslice, scatter_add, broadcast_to, reductions of
cotangents, masked where, contractions of cotangents, ...
"""
import numpy as np
import pytest

from tests.ir.op_specs import all_specs

from .lower_helpers import check, compiles_natively, joint_function

# Specs of ops that run in the interpreter (test_native_coverage.INTERPRETED_ONLY) are left out.
SPECS = [s for s in all_specs() if compiles_natively(joint_function(s)[0])]


def spec_rtol(fn):
    # Values that went through float32 anywhere carry float32 rounding, even in float64 outputs.
    has_f32 = any(v.type.dtype == np.float32 for e in fn.eqns for v in e.outvars)
    return 2e-5 if has_f32 else 1e-11  # f64: a few ulps of libm-vs-polynomial difference, propagated


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_forward_and_backward(spec):
    fn, values = joint_function(spec)
    check(fn, values, spec_rtol(fn))

