"""Seeds with which the differential fuzzer found a bug, each with the bug's own
check against a reference independent of gradtape (NumPy, or the derivative's
definition). Replay any of them: python bench/fuzz_differential.py --replay SEED --version 1."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir

from . import differential, generator, independent


def _agrees_on_every_path(seed, version=1):  # version: the generator that found the seed
    program = generator.generate(seed, version=version)
    findings = differential.check(program)
    assert not findings, "\n".join(f"[{f.category}] {f.detail}" for f in findings)


def test_seed_452_derivative_of_x_to_the_power_0_is_zero_at_0_and_inf():
    # x ** 0 is 1 everywhere (NumPy: 0 ** 0 == inf ** 0 == 1); its derivative is 0,
    # as JAX gives, on every path; it was NaN at x = -0 (0 * x ** -1) except on the
    # staged call recorded on a tape, which differentiated the optimized x ** 0 -> 1.
    _agrees_on_every_path(452)
    x = np.array([6.5, -np.inf, -0.0, 0.0, np.nan])
    assert np.array_equal(np.ones_like(x), np.power(x, 0))
    f = lambda x: gt.sum(x ** 0 * np.arange(1.0, 6.0))  # noqa: E731
    np.testing.assert_array_equal(gt.grad(f)(x), np.zeros(5))
    np.testing.assert_array_equal(gt.jvp(f, (x,), (np.ones(5),))[1], 0.0)
    c = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(c)
        y = f(c)
    np.testing.assert_array_equal(tape.gradient(y, c).numpy(), np.zeros(5))


def test_seed_2342_a_matrix_product_keeps_nan_times_zero_like_numpy_matmul():
    # The eager reference computed products through np.dot, whose OpenBLAS small-matrix
    # path gives 0 for NaN * 0 at some shapes ((2, 1) @ (1, 1)); NumPy's @ gives NaN.
    a, b = np.full((2, 1), np.nan), np.zeros((1, 1))
    want = a @ b
    assert np.isnan(want).all()
    np.testing.assert_array_equal((gt.constant(a) @ gt.constant(b)).numpy(), want)
    np.testing.assert_array_equal(gt.differentiable(lambda a, b: a @ b)(a, b), want)
    np.testing.assert_array_equal(gt.dot(gt.constant(a), gt.constant(b)).numpy(), want)


@pytest.mark.parametrize("seed", [1970, 2077, 3461, 3992, 4357, 4409, 4477, 5578, 8444, 8903])
def test_seeds_where_a_reduction_factored_x_times_a_plus_x_times_b(seed):
    # Fast-math `nsz` with `reassoc` on a sum's adds let LLVM rewrite x*a + x*b as
    # x*(a+b): at x = inf with a = -1, b = 1.5 that is inf, where NumPy's sum gives NaN.
    _agrees_on_every_path(seed)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_weighted_sum_of_a_broadcast_inf_is_nan_as_in_numpy(dtype):
    w = np.array([-1.0, 1.5, 2.0, -0.25, 0.5], dtype=dtype)
    for x in (np.inf, -np.inf):
        x = np.array(x, dtype=dtype)
        with np.errstate(invalid="ignore"):  # inf - inf: the NaN is the point
            want = np.sum(np.broadcast_to(x, w.shape) * w)
        assert np.isnan(want)
        f = gt.differentiable(lambda x: gt.sum(gt.broadcast_to(x, w.shape) * w))
        np.testing.assert_array_equal(f(x), want)
        np.testing.assert_array_equal(gt.value_and_grad(lambda x: gt.sum(gt.broadcast_to(x, w.shape) * w) * x)(x)[0], want)


def test_seed_3504_the_reference_einsum_multiplies_a_broadcast_operand_term_by_term():
    # NumPy's einsum on a zero-stride operand factors x*a + x*b into x*(a+b): inf, not the
    # NaN of inf*0.69 + inf*-0.55. The fuzzer's NumPy reference copies operands first.
    from . import numpy_reference

    a = np.array([[0.69, -0.55]])
    b = np.broadcast_to(np.array([[np.inf]]), (2, 1))
    with np.errstate(invalid="ignore"):
        assert np.isnan(numpy_reference.namespace.einsum("ij,jk->ik", a, b)).all()
        assert np.isnan(a @ b).all()
        np.testing.assert_array_equal(gt.einsum("ij,jk->ik", gt.constant(a), gt.constant(b)).numpy(), np.nan)
    _agrees_on_every_path(3504)


def test_seed_11324_an_outer_product_keeps_the_sign_of_a_zero_product():
    # -1 * 0 is -0 (IEEE), as np.multiply.outer gives; NumPy's einsum adds the product to a
    # +0 and gives +0, so the reference computes einsums without a summed index as products.
    program = generator.generate(11324)
    assert not differential.check(program)
    a, b = np.array([-1.0, 1e300]), np.zeros(2)
    want = np.multiply.outer(a, b)
    assert np.signbit(want[0]).all() and not np.signbit(want[1]).any()
    got = np.asarray(gt.differentiable(lambda a, b: gt.einsum("i,j->ij", a, b))(a, b))
    assert np.array_equal(np.signbit(got), np.signbit(want)) and np.array_equal(got, want)


def test_seed_1450_a_float32_hvp_as_uncertain_as_one_ulp_of_a_carry_of_7913_is_not_compared_to_1e_3():
    # exp gives the scan's initial carry c = 7913.7307 in float32: native exp rounds it to
    # 7913.73096, NumPy's (the interpreter's) to 7913.73047, one ulp (4.9e-4) apart, and
    # sin(c) = -0.0585 moves by 0.8% per ulp of c; the HVP (~ sin(c) c'^2, c' ~ 1e5) was
    # -1.7629e9 natively, -1.7485e9 interpreted (-1.8247e9 in float64). Moving every
    # rounded intermediate by an ulp moves the interpreter's HVP by ~9e8: no float32
    # evaluation is right to 1e-3 there, and the difference is not reported.
    _agrees_on_every_path(1450, version=2)
    program = generator.generate(1450)
    f = differential.load(program, gt)
    point = [program.inputs[0], program.tangents[0]]
    hvp_ir = gt.make_ir(gt.hvp(f), *point)
    want = ir.eval_function(hvp_ir, point)[0]
    got = gt.hvp(f)(*point)
    assert differential.disagreement(got, want, 1e-3) is not None
    spread = differential.rounding_spread(hvp_ir, point)[0]
    assert np.all(spread > 1e-2 * np.abs(want))


def test_seed_2870_finite_differences_differentiate_after_a_cast_at_the_rounded_value():
    # log1p(cast(cast(tanh(x), float32), float64)) at x = -7.03: 1 + tanh(x) = 1.566e-6,
    # and rounding tanh(x) to float32 makes it 1.550e-6. Gradtape differentiates the cast
    # as the identity and log1p at the rounded value (every path: -5.7605); the finite
    # differences of the NumPy reference, where the cast was the identity, at the unrounded
    # value (-5.7006), a 1% disagreement reported on every path. The reference now adds
    # the cast's rounding error at x at every point of the line.
    _agrees_on_every_path(2870, version=2)
    x = np.array(-7.030060760956776)
    source = "def f(x0):\n    v0 = gt.cast(gt.cast(gt.tanh(x0), 'float32'), x0.dtype)\n    return gt.log1p(v0)\n"
    program = generator.Program(-1, source, [x], [x], [np.array(1.0)], np.dtype(np.float64), False)
    f = independent.NumpyFunction(program, differential.load)
    fp_ir = independent.float64_ir(program, differential.load, [x], f)
    estimate, _ = independent.Line(f, fp_ir, differential.fingerprint, [x], [np.array(1.0)]).first()
    want = (1 - np.tanh(x) ** 2) / (1 + float(np.float32(np.tanh(x))))  # at the rounded value
    unrounded = (1 - np.tanh(x) ** 2) / (1 + np.tanh(x))
    assert abs(unrounded - want) > 1e-2 * want
    # (tanh's last bit, 1e-16 near -1, is 7e-11 of 1 + tanh: differences of log1p are right to ~1e-5)
    assert abs(estimate - want) < 1e-4 * want
    assert abs(float(gt.grad(differential.load(program, gt))(x)) - want) < 1e-6 * want  # a float32 cotangent


def test_seed_3951_a_gradient_whose_terms_of_5e302_cancel_is_compared_allowing_for_rounding():
    # At x = 1e-300, v3 = minimum(while_loop(...), v0) = -2e-303 and v5 = tanh(v0) / v3 =
    # -1000: the gradient of the element is the sum of -w / v3 = -5.0962e302 (through
    # tanh) and 5.0962e302 (through the loop), whose exact sum is -0.0020. The tape, which
    # unrolls the loop, adds the first to the last step's two terms (5.0962e303 and
    # -4.5865e303) one at a time: (a + b) + c = 0.0; the interpreter adds the loop's VJP
    # (b + c) to it: a + (b + c) = -2.28e287 (times 2, the where's derivative). Both are
    # right to the rounding of the terms; no gradtape value differs before that last add.
    a, b, c = -5.0961538461538484e302, 5.096153846153845e303, -4.58653846153846e303
    assert (a + b) + c == 0.0 and a + (b + c) == -2.2840579714218748e287
    orders = {2 * (a + (b + c)), 2 * ((a + b) + c)}  # times 2: the where's derivative
    _agrees_on_every_path(3951, version=2)
    program = generator.generate(3951)
    f = differential.load(program, gt)
    x = program.inputs[0]
    grad_ir = gt.make_ir(gt.grad(f), x)
    want = ir.eval_function(grad_ir, [x])[0]
    c = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(c)
        y = f(c)
    got = tape.gradient(y, c).numpy()
    slack = differential.SPREAD_FACTOR * differential.rounding_spread(grad_ir, [x])[0]
    assert differential.disagreement(got, want, 1e-9, slack=slack) is None
    # The two orders of the last add, as the tape and the interpreter have each taken them
    # (which one a path takes follows from its plan's structure): far apart, and both
    # accepted, but only with the slack.
    assert want[2, 1, 0] in orders
    other = want.copy()
    other[2, 1, 0] = (orders - {want[2, 1, 0]}).pop()
    assert differential.disagreement(other, want, 1e-9) is not None
    assert differential.disagreement(other, want, 1e-9, slack=slack) is None
    # Only that element is that uncertain: elsewhere the slack is below the tolerance itself.
    others = np.isfinite(want)
    others[2, 1, 0] = False
    assert np.all(slack[others] < 1e-9 * (1 + np.abs(want[others])))


def _tape_gradient(f, x):
    c = gt.constant(x)
    with gt.GradientTape() as tape:
        tape.watch(c)
        y = f(c)
    return tape.gradient(y, c).numpy()


def test_seed_8562_a_where_mask_carried_through_an_unrolled_loop_gives_0_where_the_loop_vjp_gives_nan():
    # v2 = x0 * stop_gradient(x0) is inf at x0 = inf; a while_loop (two steps of
    # s * 0.5 - arctan(s)) keeps it inf and clip makes it 2, with cotangent 0 outside
    # [-0.5, 2]. The adjoint pass carries clip's mask back through elementwise ops and
    # zeroes the cotangent outside it (ir/adjoint.py, docs/tape.md): on the tape, which
    # unrolls the loop into elementwise steps, the mask reaches the product and the
    # gradient is 0 (a symbolic zero per element); the staged IR's loop is one equation,
    # its VJP runs on a dense 0 and the product gives 0 * inf = NaN, as JAX's would.
    # The checker accepts 0 against NaN only at such non-finite points.
    _agrees_on_every_path(8562)
    x = np.array([np.inf, 1.0, 3.0], np.float32)
    loop = lambda s: gt.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1] * 0.5), (0, s))[1]  # noqa: E731
    f = lambda x0: gt.sum(gt.clip(loop(x0 * gt.stop_gradient(x0)), -0.5, 2.0))  # noqa: E731
    unrolled = lambda x0: gt.sum(gt.clip(x0 * gt.stop_gradient(x0) * 0.5 * 0.5, -0.5, 2.0))  # noqa: E731
    with np.errstate(all="ignore"):
        staged, tape = np.asarray(gt.grad(f)(x)), _tape_gradient(f, x)
        np.testing.assert_array_equal(staged, [np.nan, 0.25, 0.0])
        np.testing.assert_array_equal(tape, [0.0, 0.25, 0.0])
        # Written unrolled, the staged gradient masks the same element as the tape.
        np.testing.assert_array_equal(np.asarray(gt.grad(unrolled)(x)), tape)
    np.testing.assert_array_equal(differential.masked_zero_or_nan(tape, staged), [True, False, False])
    assert differential.disagreement(tape, staged, 1e-3) is not None


def test_0_against_nan_in_a_gradient_is_a_finding_where_the_forward_is_finite():
    # The same tolerance does not excuse a NaN at a finite point, nor 0 against a NaN value.
    program = generator.Program(-1, "def f(x0):\n    v0 = gt.sin(x0)\n    return gt.sum(v0 * _w(v0))\n",
                                [np.array([0.5, 1.0])], [np.array([0.75, 1.25])], [np.array([1.0, -1.0])],
                                np.dtype(np.float64), False)
    run = differential._Run(program)
    run.fwd_ir = gt.make_ir(run.f, *run.args)
    assert run.forward_finite()
    run.compare("staged_grad[0]", np.array([0.0, 1.0]), np.array([np.nan, 1.0]), masked_zeros=True)
    run.compare("staged_value", np.array([0.0, 1.0]), np.array([np.nan, 1.0]))
    assert [f.category for f in run.findings] == ["mismatch:staged_grad[0]", "mismatch:staged_value"]
    assert "masked_zero" not in run.checked
    # At a non-finite point, only an exact 0 against NaN is accepted, not another value.
    run._forward_finite = False
    run.compare("staged_grad[0]", np.array([0.0, 1.0]), np.array([np.nan, 1.0]), masked_zeros=True)
    assert len(run.findings) == 2 and "masked_zero" in run.checked
    run.compare("staged_grad[0]", np.array([0.5, 1.0]), np.array([np.nan, 1.0]), masked_zeros=True)
    run.compare("staged_grad[0]", np.array([0.0, 2.0]), np.array([np.nan, 1.0]), masked_zeros=True)
    assert len(run.findings) == 4


def _float32_derivative_not_determined_by_float32_rounding(seed, name):
    # The checker's own run: the float32 derivative `name` along the tangents differs from
    # the float64 finite differences by more than RTOL1, and moving float32 intermediates by
    # an ulp moves it by more than RTOL1 too: not compared ("fd_ill_conditioned").
    program = generator.generate(seed)
    assert program.dtype == np.float32
    checked = set()
    assert differential.check(program, checked) == []
    assert {"first_order", "fd_ill_conditioned"} <= checked
    run = differential._Run(program)
    with np.errstate(all="ignore"):
        run.all()
    ts = [np.asarray(t, np.float64) for t in program.tangents]
    f = independent.NumpyFunction(program, differential.load)
    args = [np.asarray(a, np.float64) for a in program.inputs]
    fp_ir = independent.float64_ir(program, differential.load, args, f)
    estimate, _ = independent.Line(f, fp_ir, differential.fingerprint, args, ts).first()
    got, magnitude = independent.directional(run.derivatives[name], ts)
    tolerance = independent.RTOL1[np.dtype(np.float32)] * (1 + abs(estimate) + magnitude)
    spread = run.fd_rounding_spread(name, ts)
    assert abs(got - estimate) > tolerance and spread > tolerance
    assert abs(got - estimate) <= differential.SPREAD_FACTOR * spread
    return got, estimate, spread


def test_seed_4974_a_float32_cos_of_2_4e8_is_not_compared_with_float64_finite_differences():
    # v2 = 0 - x0 ** x1 is -2.434675e8 in float32 (0.2560358 ** -14.173485), whose ulp is
    # 16: cos(v2) and sin(v2) change completely from one float32 to the next, and the float64
    # NumPy reference computes them at another argument. Every path's float32 t . grad was
    # -9.525e8, the finite differences +8.596e8 (the HVP 9.7e16 against -5.2e9).
    v = np.float32(0.2560358) ** np.float32(-14.173485)
    assert np.spacing(v) == 16
    assert abs(np.cos(v) - np.cos(v + np.spacing(v))) > 0.1
    with np.errstate(all="ignore"):
        _float32_derivative_not_determined_by_float32_rounding(4974, "grad")


def test_seed_9232_a_float32_sine_of_a_scan_carry_of_2e15_is_not_compared_with_float64_finite_differences():
    # The scan's initial carry holds prod(x1) = 2.1e15 in float32 (ulp 1.3e8), and its body
    # takes sin(c): t . grad was -5.37e14 interpreted, -9.15e14 natively (accepted against
    # each other by rounding_spread), -7.69e14 by float64 finite differences.
    with np.errstate(all="ignore"):
        assert np.spacing(np.prod(generator.generate(9232).inputs[1])) > 1e8
        _float32_derivative_not_determined_by_float32_rounding(9232, "grad")


def test_a_wrong_float32_derivative_is_still_caught_by_finite_differences(monkeypatch):
    # Where float32 rounding does not matter, the finite-difference comparison of a float32
    # program stands: sin' = 1.01 cos is reported on every path, and nothing is excused.
    from gradtape.ir import op as op_table
    from gradtape.ir.ops import elementwise as ew

    source = "def f(x0):\n    v0 = gt.sin(x0) * gt.arctan(x0)\n    return gt.sum(v0 * _w(v0))\n"
    x = np.array([0.3, -0.7, 1.1], np.float32)
    program = generator.Program(-1, source, [x], [x + np.float32(0.25)], [np.array([0.5, 0.75, 1.0], np.float32)],
                                np.dtype(np.float32), False)
    gt.clear_cache()
    try:
        deriv = lambda x: ew.cos(x) * 1.01  # noqa: E731
        monkeypatch.setitem(op_table.vjp_rules, ew.sin_p, lambda ct, out, x: (ct * deriv(x),))
        monkeypatch.setitem(op_table.jvp_rules, ew.sin_p, lambda ts, out, x: ts[0] * deriv(x))
        checked = set()
        found = {f.category.split("[")[0] for f in differential.check(program, checked)}
    finally:
        gt.clear_cache()
    assert {"mismatch:grad_vs_finite_differences", "mismatch:staged_grad_vs_finite_differences",
            "mismatch:tape_grad_vs_finite_differences", "mismatch:jvp_vs_finite_differences"} <= found
    assert "fd_ill_conditioned" not in checked


def test_a_float32_derivative_off_by_more_than_ten_times_its_rounding_spread_is_a_mismatch():
    # The float32 excuse needs both: a spread above the tolerance, and a difference within
    # SPREAD_FACTOR times it.
    x = np.array([0.3, -0.7], np.float32)
    program = generator.Program(-1, "def f(x0):\n    return gt.sum(gt.sin(x0))\n", [x], [x], [x], np.dtype(np.float32),
                                False)
    run = differential._Run(program)
    run.least = np.dtype(np.float32)
    for spread, off, found in [(0.5, 4.0, False), (0.5, 6.0, True), (1e-4, 0.01, True), (None, 4.0, True)]:
        run.fd_rounding_spread = lambda name, ts, s=spread: s
        run.findings, run.checked = [], set()
        run.against("grad", (1.0 + off, 1.0), (1.0, 0.0), 1e-3, [x])
        assert bool(run.findings) == found, (spread, off)
        assert ("fd_ill_conditioned" in run.checked) == (not found)


def test_seed_7962_a_floor_decided_by_the_last_bit_of_pow_is_an_ill_conditioned_decision():
    # floor(sin(x ** x * 0.5)) at x = 15.161: x ** x = 8.0e17, whose ulp is 128, so sin's
    # argument of 4.0e17 moves by 64 with the last bit of pow, and sin and its floor with it.
    # Native pow (glibc's vector pow, within 1 ulp) and NumPy's differ in that bit.
    x = 15.161140657021582
    v = np.float64(x) ** np.float64(x)
    assert np.spacing(v) == 128 and np.floor(np.sin(v * 0.5)) != np.floor(np.sin((v + np.spacing(v)) * 0.5))
    _agrees_on_every_path(7962)


def test_a_result_no_ulp_move_reproduces_is_still_a_mismatch_at_a_rounding_decided_point():
    b = ir.Builder()
    x = b.input(ir.TensorType((), np.float64))
    fn = b.build([x], [ir.ops.floor(ir.ops.sin(ir.ops.mul(ir.ops.pow(x, x), np.float64(0.5))))])
    args = [np.asarray(15.161140657021582)]
    outcomes = {float(o[0]) for o in differential.rounding_outcomes(fn, args)}
    assert len(outcomes) > 1  # the ulp moves change the floor's decision: a rounding-decided point
    checker = differential._Run.__new__(differential._Run)
    checker.rtol, checker.spreads, checker.checked, checker.findings = 1e-9, {}, set(), []
    checker.compare("planted", np.asarray(max(outcomes) + 7.0), ir.eval_function(fn, args)[0], reference=(fn, args, 0))
    assert checker.findings and "ill_conditioned_decision" not in checker.checked
