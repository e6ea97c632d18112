"""Every op in the op registry compiles to native code in float32 and float64,
forward and backward.

For each op and dtype, the test takes the op specs (tests/ir/op_specs.py)
whose joint vjp Function (forward values and gradients), traced from
arguments of that dtype, holds an equation of the op in that dtype, lowers
it (code generation raises instead of falling back to the interpreter) and
compares the native results with the reference interpreter. It fails for
an op that no spec exercises in a dtype (the fix: an OpSpec), for an op
without a lowering rule or native math, and for wrong numbers. A "coverage"
that only asks whether a table has an entry cannot tell a new op that would
quietly run in the interpreter at run time from one that compiles.
"""
import numpy as np
import pytest

from gradtape import ir
from gradtape.codegen import Unsupported, rules
from gradtape.codegen.lowering import lower_function
from gradtape.codegen.math import MathFunction, Polynomial
from gradtape.ir.inline_calls import inline_calls
from tests.ir.op_specs import all_specs

from .lower_helpers import check, joint_function

# Ops that native code cannot compute, with the reason. Nothing else may be here.
INTERPRETED_ONLY = {
    "custom_gradient": "its rule calls a Python function that could not be traced",
    # Complex-only ops have no lowering rule: codegen.lower takes real Functions, and the runtime
    # first splits complex values into real and imaginary parts (codegen/complex_split.py), where
    # conj, real and imag become real ops (tests/complex/test_complex_native.py checks them).
    "conj": "complex operands only; complex_split.py makes it real ops",
    "real": "complex operands only; complex_split.py makes it real ops",
    "imag": "complex operands only; complex_split.py makes it real ops",
    # The FFT ops take or give complex values: complex_split.py makes them the pair ops
    # (fft_pairs, rfft_pairs, irfft_pairs), whose native kernels this table covers.
    "fft": "complex operands only; complex_split.py makes it fft_pairs",
    "rfft": "complex results; complex_split.py makes it rfft_pairs",
    "irfft": "complex operands; complex_split.py makes it irfft_pairs",
    # LAPACK's geev from native code is not wired: a Function holding eig runs in the interpreter.
    "eig": "complex results (of real input too); no native geev call yet",
}

DTYPES = (np.float32, np.float64)
RTOL = {np.float32: 2e-4, np.float64: 1e-11}  # the spec's whole chain, rounded in that dtype
SPECS = all_specs()
_joints: dict = {}


def _joint(spec, dtype):
    """The spec's joint Function and values in `dtype`, or None for a spec
    written for another dtype (its trace fails on the types)."""
    key = (spec.name, dtype)
    if key not in _joints:
        try:
            _joints[key] = joint_function(spec, dtype)
        except ir.IRError:
            _joints[key] = None
    return _joints[key]


def _in_dtype(eqn, dtype) -> bool:
    """Whether every float value the equation reads or writes has `dtype`
    (true, too, of equations on integers and bools only)."""
    atoms = [*eqn.inputs, *eqn.outvars]
    if any(a.type.dtype.kind == "c" for a in atoms):
        return False  # complex values: split into real ones by the runtime first (INTERPRETED_ONLY)
    return all(a.type.dtype == dtype for a in atoms if a.type.dtype.kind == "f")


def _exercises(fn, op, dtype) -> bool:
    """Whether fn, or fn with its calls inlined, holds an equation of `op` in `dtype`."""
    return any(e.op is op and _in_dtype(e, dtype) for f in (fn, inline_calls(fn)) for e in f.eqns)


def _specs_for(op, dtype) -> list:
    return [spec for spec in SPECS if _joint(spec, dtype) and _exercises(_joint(spec, dtype)[0], op, dtype)]


CASES = [
    (name, dtype)
    for name in sorted(ir.all_ops)
    if name not in INTERPRETED_ONLY
    for dtype in DTYPES
]


@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{np.dtype(d).name}" for n, d in CASES])
def test_op_compiles_natively_forward_and_backward(name, dtype):
    op = ir.all_ops[name]
    specs = _specs_for(op, np.dtype(dtype))
    assert specs, (
        f"no op spec exercises `{name}` in {np.dtype(dtype).name} (forward or backward): "
        f"add an OpSpec using it to tests/ir/specs_*.py"
    )
    for spec in specs[:2]:  # the first two are enough: test_lower_specs runs every spec in float64
        fn, values = _joint(spec, np.dtype(dtype))
        try:
            lower_function(fn, "f")
        except Unsupported as e:
            pytest.fail(f"`{name}` ({np.dtype(dtype).name}, spec {spec.name}) does not compile natively: {e}")
        check(fn, values, RTOL[dtype])


def test_only_the_listed_ops_run_in_the_interpreter():
    """INTERPRETED_ONLY names ops that exist, and only those have no lowering rule."""
    assert set(INTERPRETED_ONLY) <= set(ir.all_ops)
    assert sorted(n for n, op in ir.all_ops.items() if op not in rules.RULES) == sorted(INTERPRETED_ONLY)


def test_an_op_with_rules_but_no_native_math_fails_with_the_equation_named():
    """What this file guards against: an op whose IR rules are complete and whose
    lowering reaches the math table, which has no entry for it."""
    op = ir.all_ops["floor"]  # any unary float op; its own scalar code is set aside here
    saved = rules.RULES[op]
    rules.RULES[op] = rules._math_rule(MathFunction(op, 1, Polynomial(emit=None)))
    try:
        b = ir.Builder()
        x = b.input(ir.TensorType((4,), np.float64))
        fn = b.build([x], [ir.bind(op, x)])
        with pytest.raises(Unsupported, match=r"code generation failed on `.*floor.*`: ValueError: "
                                              r"emit_math: floor has no entry in the math table"):
            lower_function(fn, "f")
    finally:
        rules.RULES[op] = saved
