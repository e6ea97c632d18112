"""Equal inputs give equal outputs in native code, wherever they sit in the array.

glibc's SSE, AVX2 and AVX-512 vector sin and its scalar sin disagree in the
last bit on about one input in ten, so a kernel whose vector body called one
and whose remainder called another gave three equal values three outputs
that were not all equal (codegen/math_libmvec.py). The fuzzer found it
through a gradient: the standard deviation of "equal" values was a few ULPs
instead of 0, and its derivative a finite number of no meaning where the
reference interpreter gives NaN (bench/fuzz_differential.py seed 9943).
"""
from __future__ import annotations

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir, runtime

VALUE = -0.8767914751835995  # one of the inputs on which the variants disagree


def _native(f, *args):
    cf = runtime.compile_function(gt.make_ir(f, *args))
    assert cf.native, cf.fallback_reason
    return cf


@pytest.mark.parametrize("name", ["sin", "cos", "tan", "arctan", "sinh", "log2", "cbrt"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_equal_inputs_give_equal_outputs_for_every_length(name, dtype):
    fn = getattr(gt, name)
    c = abs(VALUE) if name == "log2" else VALUE
    (one,) = _native(fn, np.full(1, c, dtype))(np.full(1, c, dtype))
    for n in (2, 3, 5, 7, 9, 17, 37):
        x = np.full(n, c, dtype)
        (out,) = _native(fn, x)(x)
        np.testing.assert_array_equal(out, np.full(n, one[0]), err_msg=f"{name} of {n} equal values")


def _std_of_equal_values(x1):
    """Seed 9943, reduced: three equal values through a loop of sin, then their std."""
    v3 = gt.broadcast_to(x1, (3,)) * 1.0
    v4 = gt.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * -0.75 - gt.sin(s[1])), (0, v3))[1]
    return gt.std(v4, axis=0, ddof=1)


def test_std_of_equal_values_is_zero_and_its_gradient_agrees_with_the_interpreter():
    x1 = np.array([VALUE])
    fn = gt.make_ir(gt.value_and_grad(_std_of_equal_values), x1)
    value, grad = _native(gt.value_and_grad(_std_of_equal_values), x1)(x1)
    ref_value, ref_grad = ir.eval_function(fn, [x1])
    assert value == 0.0 and ref_value == 0.0
    np.testing.assert_array_equal(grad, ref_grad)  # NaN: the derivative of sqrt at 0 times 0
