"""At least 95% of the NumPy, numpy.linalg and (in scope) scipy.special functions
that JAX or autograd differentiate are differentiable here (tools/numpy_coverage.py),
among those of real numbers: the complex cases and numpy.fft (issue 28, under way:
docs/complex.md) are counted in docs/numpy_coverage.md but not held to it."""
from .test_numpy_coverage import TOOL, coverage_rows


def test_at_least_95_percent_of_upstream_differentiable_functions_differentiate_here():
    rows = TOOL.real_rows(coverage_rows())
    done, total = TOOL.coverage(rows)
    missing = [r[0] for r in rows if r[1] == "differentiable" and TOOL.in_scope(r[0]) and r[3] != "differentiable"]
    assert done >= 0.95 * total, f"{done} of {total} differentiable; missing: {missing}"
