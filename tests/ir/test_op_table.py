"""Table-driven checks over every op (rules present: test_op_facts.py): derivatives to third order
against finite differences, reference values against NumPy, and reference
output types against the shape rules."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.testing import check_grads

from .op_specs import all_specs

SPECS = all_specs()


def test_every_op_is_covered_by_a_spec():
    covered = {name for spec in SPECS for name in spec.ops}
    assert set(ir.all_ops) - covered == set()


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_gradients_match_finite_differences(spec):
    values = spec.args(np.random.default_rng(0))
    check_grads(spec.fn, values, order=spec.order, modes=spec.modes)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.numpy_fn is not None], ids=str)
def test_values_match_numpy_and_types_match_shape_rules(spec):
    values = spec.args(np.random.default_rng(1))
    fn = gt.make_ir(spec.fn, *values)
    (out,) = ir.eval_function(fn, values, check_types=True)
    expected = spec.numpy_fn(*values)
    np.testing.assert_allclose(out, expected, rtol=1e-6 if out.dtype == np.float32 else 1e-12)
    assert out.dtype == np.asarray(expected).dtype
    eager = spec.fn(*[gt.constant(v) for v in values])
    np.testing.assert_array_equal(eager.numpy(), out)
