"""The generated loops vectorize: packed instructions on the target's widest
vector registers (xmm, ymm or zmm: tests/codegen/isa.py) in the assembly,
and no scalar libm calls for transcendentals."""
import re

import numpy as np
import pytest

import gradtape as gt

from . import isa
from .lower_helpers import compiled


def _assembly(f, *args):
    fn = gt.make_ir(f, *args)
    j = compiled(fn, assembly=True)
    return j.assembly


def _packed(asm, suffix):
    """Packed arithmetic on the target's wide registers: (v)addpd/vfmadd231ps/... ."""
    return isa.packed(rf"\w+{suffix}").findall(asm)


@pytest.mark.parametrize("dtype, suffix", [(np.float64, "pd"), (np.float32, "ps")])
def test_exp_tanh_loop_is_packed_with_no_libm_calls(dtype, suffix):
    asm = _assembly(lambda x: gt.tanh(x) * gt.exp(-x), np.ones(1000, dtype))
    assert len(_packed(asm, suffix)) > 20
    calls = re.findall(r"\bcall\w*\s+[^\n]*", asm)
    assert not [c for c in calls if re.search(r"exp|tanh", c)], calls


@pytest.mark.parametrize("dtype, suffix", [(np.float64, "pd"), (np.float32, "ps")])
def test_softplus_sigmoid_and_their_gradient_are_packed_with_no_calls(dtype, suffix):
    """Forward (exp and log1p inlined) and the gradient (sigmoid: one exp, one add, one divide)."""
    x = np.ones(1000, dtype)
    forward = _assembly(lambda x: gt.softplus(x) + gt.sigmoid(x), x)
    gradient = _assembly(gt.grad(lambda x: gt.sum(gt.softplus(x))), x)
    for asm in (forward, gradient):
        assert len(_packed(asm, suffix)) > 20
        assert isa.packed(f"div{suffix}").search(asm)
        assert not re.findall(r"\bcall\w*\s+[^\n]*", asm)


@pytest.mark.parametrize("dtype, suffix", [(np.float64, "pd"), (np.float32, "ps")])
def test_sum_of_squares_reduction_is_packed(dtype, suffix):
    asm = _assembly(lambda x: gt.sum(x * x), np.ones(1000, dtype))
    if dtype == np.float32:  # float32 sums accumulate in float64: widened, added as packed doubles
        assert isa.packed("cvtps2pd").search(asm)
        suffix = "pd"
    assert isa.packed("addpd").search(asm) if suffix == "pd" else _packed(asm, suffix)


def test_row_sums_and_column_sums_are_packed():
    x = np.ones((64, 48))
    assert isa.packed("addpd").search(_assembly(lambda x: gt.sum(x, axis=1), x))
    assert isa.packed("addpd").search(_assembly(lambda x: gt.sum(x, axis=0), x))


def test_max_reduction_is_packed():
    asm = _assembly(lambda x: gt.max(x, axis=1), np.ones((16, 256)))
    assert isa.packed("maxpd").search(asm)


def test_broadcast_add_over_rows_is_packed():
    asm = _assembly(lambda x, b: x + b, np.ones((32, 64)), np.ones(64))
    assert isa.packed("addpd").search(asm)
