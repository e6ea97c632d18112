"""The differential check finds planted bugs: a wrong derivative rule, a wrong
reference (so compiled and interpreted values differ), and a wrong NumPy-level
value. A fuzzer that cannot see these would pass vacuously."""
import numpy as np
import pytest

import gradtape as gt
from gradtape.ir import op as op_table
from gradtape.ir.ops import elementwise as ew

from . import differential, generator
from .generator import Program


def _program(source, *inputs):
    inputs = [np.asarray(a, np.float64) for a in inputs]
    return Program(seed=-1, source=source, inputs=inputs, batch=[a + 0.25 for a in inputs],
                   tangents=[np.linspace(0.5, 1.0, a.size).reshape(a.shape) for a in inputs],
                   dtype=np.dtype(np.float64), uses_stop_gradient=False)


@pytest.fixture(autouse=True)
def _forget_code_built_with_planted_bugs(monkeypatch):
    # Compiled programs and the tape's backward plans are cached by the IR or the ops
    # recorded, not by the rules that built them: code made under a planted rule
    # would serve later tests running the same programs (the generated ones).
    gt.clear_cache()
    yield
    gt.clear_cache()


SMOOTH = _program("def f(x0):\n    v0 = gt.tanh(x0) * gt.sin(x0)\n    return gt.sum(v0 * _w(v0))\n",
                  [0.3, -0.7, 1.1])


def _categories(program):
    return {f.category.split("[")[0] for f in differential.check(program)}


def test_the_smooth_program_passes_every_check():
    assert differential.check(SMOOTH) == []


def test_a_wrong_vjp_rule_is_caught_by_finite_differences_and_forward_mode(monkeypatch):
    monkeypatch.setitem(op_table.vjp_rules, ew.tanh_p, lambda ct, out, x: (ct * (1.0 - out),))
    found = _categories(SMOOTH)
    assert {"mismatch:grad_vs_finite_differences", "mismatch:jvp_vs_grad"} <= found


def test_compiled_code_disagreeing_with_the_interpreter_is_caught(monkeypatch):
    # A wrong reference for sin: native code (right) and interpreter (wrong) now differ.
    monkeypatch.setitem(op_table.impls, ew.sin_p, np.cos)
    found = _categories(SMOOTH)
    assert {"mismatch:staged_value", "mismatch:staged_grad", "mismatch:interpreter_vs_numpy"} <= found


def test_nan_and_inf_positions_must_match():
    assert differential.disagreement(np.array([1.0, np.nan]), np.array([1.0, 2.0]), 1e-9) is not None
    assert differential.disagreement(np.array([np.inf]), np.array([-np.inf]), 1e-9) is not None
    assert differential.disagreement(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]), 1e-9) is None
    assert differential.disagreement(np.float32(1.0), np.float64(1.0), 1e-9) == "dtype float32, want float64"


def test_finite_differences_are_skipped_at_a_kink():
    kink = _program("def f(x0):\n    v0 = gt.abs(x0)\n    return gt.sum(v0 * _w(v0))\n", [0.0, 1.0])
    fn = gt.make_ir(differential.load(kink, gt), *kink.inputs)
    assert differential.smooth_directional_derivative(fn, kink.inputs, kink.tangents) is None
    smooth = [np.array([0.5, 1.0])]
    assert differential.smooth_directional_derivative(fn, smooth, kink.tangents) is not None


def test_a_nan_intermediate_no_output_uses_is_not_a_smooth_point():
    # sqrt of the negative inputs is NaN although take() drops it; the chain rule
    # then gives 0 * NaN = NaN for those inputs, as JAX does: not a finding.
    unused = _program(
        "def f(x0):\n    v0 = gt.sqrt(gt.pad(x0, (1, 1), constant_values=3.0))\n"
        "    v1 = gt.take(v0, [0])\n    return gt.sum(v1 * _w(v1))\n",
        [-4.5, 1.75],
    )
    assert differential.check(unused) == []


def _wrong_sin_derivative(monkeypatch, factor):
    # One wrong rule for both modes, as `unary` declares them: reverse, forward,
    # interpreter and native code then all agree with each other.
    deriv = lambda x, out: ew.cos(x) * factor  # noqa: E731
    monkeypatch.setitem(op_table.vjp_rules, ew.sin_p, lambda ct, out, x: (ct * deriv(x, out),))
    monkeypatch.setitem(op_table.jvp_rules, ew.sin_p, lambda ts, out, x: ts[0] * deriv(x, out))


def test_a_derivative_rule_shared_by_every_path_is_caught_by_the_numpy_reference(monkeypatch):
    _wrong_sin_derivative(monkeypatch, 1.001)
    found = _categories(_program("def f(x0):\n    v0 = gt.sin(x0) * gt.arctan(x0)\n    return gt.sum(v0 * _w(v0))\n",
                                 [0.3, -0.7, 1.1]))
    assert {"mismatch:grad_vs_finite_differences", "mismatch:jvp_vs_finite_differences",
            "mismatch:staged_grad_vs_finite_differences", "mismatch:tape_grad_vs_finite_differences",
            "mismatch:jvp_native_vs_finite_differences"} <= found
    # No comparison between paths sees it: every path runs the same wrong rule.
    assert {c for c in found if "differences" not in c} == set(), found


def test_a_shared_second_derivative_bug_is_caught_by_second_differences(monkeypatch):
    # cos' = -1.001 sin: first derivatives of sin stay right, the HVP of sin does not.
    monkeypatch.setitem(op_table.vjp_rules, ew.cos_p, lambda ct, out, x: (ct * -(ew.sin(x) * 1.001),))
    monkeypatch.setitem(op_table.jvp_rules, ew.cos_p, lambda ts, out, x: ts[0] * -(ew.sin(x) * 1.001))
    smooth = _program("def f(x0):\n    v0 = gt.sin(x0) * 2.0\n    return gt.sum(v0 * _w(v0))\n", [0.3, -0.7, 1.1])
    found = _categories(smooth)
    assert {"mismatch:hvp_vs_finite_differences", "mismatch:hvp_native_vs_finite_differences"} <= found


def test_the_fuzzer_finds_a_wrong_derivative_rule_within_a_few_programs(monkeypatch):
    # Generated programs (float32 ones too), not a hand-written one: the first
    # programs calling sin where the check applies expose a 0.1% error in its rule.
    _wrong_sin_derivative(monkeypatch, 1.001)
    tried = 0
    for seed in range(200):
        program = generator.generate(seed)
        if "gt.sin(" not in program.source:
            continue
        tried += 1
        checked = set()
        found = {f.category.split("[")[0] for f in differential.check(program, checked)}
        if "first_order" in checked and "mismatch:grad_vs_finite_differences" in found:
            break
        assert tried < 8, f"no mismatch in the first {tried} programs calling sin"


def test_stop_gradient_and_float32_programs_are_checked_independently():
    for source, dtype in [("def f(x0):\n    v0 = x0 * gt.stop_gradient(gt.sin(x0))\n    return gt.sum(v0 * _w(v0))\n",
                           np.float64),
                          ("def f(x0):\n    v0 = gt.cast(gt.cast(gt.tanh(x0), 'float32'), x0.dtype)\n"
                           "    return gt.sum(v0 * _w(v0))\n", np.float64),
                          (SMOOTH.source, np.float32)]:
        p = _program(source, [0.3, -0.7, 1.1])
        p = Program(-1, source, [a.astype(dtype) for a in p.inputs], [a.astype(dtype) for a in p.batch],
                    [t.astype(dtype) for t in p.tangents], np.dtype(dtype), "stop_gradient" in source)
        checked = set()
        assert differential.check(p, checked) == [], source
        assert checked == {"first_order", "second_order"}, source


def test_a_rule_inside_a_switch_branch_is_checked(monkeypatch):
    # switch casts its index to int32: an integer cast is no float rounding, and
    # must not make the point look singular (it hid every switch from the check).
    _wrong_sin_derivative(monkeypatch, 1.001)
    program = _program("def f(x0):\n    v0 = gt.switch(gt.argmax(x0), [lambda u: gt.tanh(u), lambda u: gt.sin(u) * 0.5], x0)\n"
                       "    return gt.sum(v0 * _w(v0))\n", [0.3, 0.7, -1.1])
    checked = set()
    found = {f.category.split("[")[0] for f in differential.check(program, checked)}
    assert "first_order" in checked and "mismatch:grad_vs_finite_differences" in found
