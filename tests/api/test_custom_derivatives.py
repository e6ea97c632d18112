"""custom_vjp, custom_jvp (and the staged use of custom_gradient): the user's rule
is what comes out of every transform, to third order, compiled, on a tape and
under vmap; malformed rules get errors naming the function and what it returned.

The rules here are deliberately *not* the true derivative of the primal
sin(x): they say d(x) = x * exp(-x^2 / 2). A transform that silently
differentiated the primal instead would give cos(x) and fail every check.
"""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.tracer import backward_cache
from tests.custom_rule import rule, rule_fd, rule_fd2

from ._numeric import numeric_grad

X = np.array([-1.3, -0.2, 0.4, 1.7])
T = np.array([0.5, -1.0, 2.0, 0.25])


def _rule(x):
    return x * gt.exp(-x * x / 2.0)


@gt.custom_vjp
def sin_vjp(x):
    return gt.sin(x)


sin_vjp.defvjp(lambda x: (sin_vjp(x), x), lambda x, g: (g * _rule(x),))


@gt.custom_jvp
def sin_jvp(x):
    return gt.sin(x)


@sin_jvp.defjvp
def _sin_jvp_rule(primals, tangents):
    (x,), (t,) = primals, tangents
    return sin_jvp(x), t * _rule(x)


@gt.custom_gradient
def sin_cg(x):
    return gt.sin(x), lambda g: g * _rule(x)


CUSTOM = {"custom_vjp": sin_vjp, "custom_jvp": sin_jvp, "custom_gradient": sin_cg}
custom_kinds = pytest.mark.parametrize("kind", list(CUSTOM))


def total(kind):
    f = CUSTOM[kind]
    return lambda x: gt.sum(f(x))


# --- the rule is what comes out ---------------------------------------------------------

@custom_kinds
def test_the_value_is_the_primal_and_the_gradient_is_the_rule(kind):
    f = CUSTOM[kind]
    np.testing.assert_allclose(gt.differentiable(f)(X), np.sin(X), rtol=1e-14)
    g = gt.grad(total(kind))(X)
    np.testing.assert_allclose(g, rule(X), rtol=1e-14)
    assert not np.allclose(g, np.cos(X))


@custom_kinds
def test_second_derivative_is_the_derivative_of_the_rule(kind):
    d2 = gt.grad(lambda x: gt.sum(gt.grad(total(kind))(x)))(X)
    np.testing.assert_allclose(d2, rule_fd(X), rtol=1e-7, atol=1e-9)


@custom_kinds
def test_third_derivative_is_the_second_derivative_of_the_rule(kind):
    d2 = gt.grad(total(kind))
    d3 = gt.grad(lambda x: gt.sum(gt.grad(lambda y: gt.sum(d2(y)))(x)))(X)
    np.testing.assert_allclose(d3, rule_fd2(X), rtol=1e-5, atol=1e-6)


@custom_kinds
def test_hessian_of_a_function_with_a_custom_derivative(kind):
    f = CUSTOM[kind]

    def loss(x):  # S(x) * sum(x): a full Hessian, not only its diagonal
        return gt.sum(f(x)) * gt.sum(x)

    # gradient: rule(x) * sum(x) + sum(sin(x)); Hessian: its derivative, with the
    # rule (not cos) wherever the primal value sum(sin(x)) is differentiated.
    expected_grad = rule(X) * np.sum(X) + np.sum(np.sin(X))
    np.testing.assert_allclose(gt.grad(loss)(X), expected_grad, rtol=1e-13)
    expected = np.diag(rule_fd(X)) * np.sum(X) + rule(X)[:, None] + rule(X)[None, :]
    np.testing.assert_allclose(gt.hessian(loss)(X), expected, rtol=1e-7, atol=1e-9)


@custom_kinds
def test_hessian_through_the_ir_passes_is_jvp_of_the_grad_function(kind):
    fn = gt.make_ir(total(kind), X)
    joint, _ = ir.vjp(fn, [0])
    grad_fn = ir.select_outputs(joint, [1])  # (x, ct) -> gradient
    hvp_fn, _ = ir.jvp(grad_fn, [0])  # (x, ct, v) -> (gradient, H v)
    columns = [ir.eval_function(hvp_fn, [X, np.array(1.0), e])[1] for e in np.eye(len(X))]
    np.testing.assert_allclose(np.stack(columns, axis=1), np.diag(rule_fd(X)), rtol=1e-7, atol=1e-9)


@custom_kinds
def test_forward_mode_uses_the_rule_too(kind):
    # custom_jvp: the jvp rule itself; custom_vjp and custom_gradient: bwd / grad_fn
    # transposed (they are linear in the cotangent), so both modes agree.
    _, t = gt.jvp(CUSTOM[kind], (X,), (T,))
    np.testing.assert_allclose(t, rule(X) * T, rtol=1e-14)
    jac = gt.jacfwd(CUSTOM[kind])(X)
    np.testing.assert_allclose(jac, np.diag(rule(X)), rtol=1e-14)


@custom_kinds
def test_every_transform_uses_the_rule(kind):
    f = CUSTOM[kind]
    _, pullback = gt.vjp(f, X)
    np.testing.assert_allclose(pullback(T)[0], rule(X) * T, rtol=1e-14)
    _, linear = gt.linearize(f, X)
    np.testing.assert_allclose(linear(T), rule(X) * T, rtol=1e-14)
    np.testing.assert_allclose(gt.jacrev(f)(X), np.diag(rule(X)), rtol=1e-14)
    np.testing.assert_allclose(gt.hvp(lambda x: gt.sum(f(x)))(X, T), rule_fd(X) * T, rtol=1e-7, atol=1e-9)


@custom_kinds
def test_forward_over_forward_is_the_derivative_of_the_rule(kind):
    f = CUSTOM[kind]
    second = gt.jvp(lambda x: gt.jvp(f, (x,), (T,))[1], (X,), (T,))[1]
    np.testing.assert_allclose(second, rule_fd(X) * T * T, rtol=1e-7, atol=1e-9)


def test_a_numerically_stable_gradient_where_autodiff_gives_nan():
    @gt.custom_vjp
    def log1pexp(x):
        return gt.log1p(gt.exp(x))

    log1pexp.defvjp(lambda x: (log1pexp(x), x), lambda x, g: (g * gt.sigmoid(x),))
    x = np.array([-30.0, 0.0, 800.0])
    np.testing.assert_allclose(gt.grad(lambda x: gt.sum(log1pexp(x)))(x), [1 / (1 + np.exp(30.0)), 0.5, 1.0])
    naive = gt.grad(lambda x: gt.sum(gt.log1p(gt.exp(x))))(x)
    assert np.isnan(naive[2])


# --- structures, several outputs, nondiff arguments -----------------------------------------

@gt.custom_vjp
def polar(xy):
    """Two outputs from a dict argument; the rule scales the true gradient by 2."""
    r = gt.sqrt(xy["x"] ** 2 + xy["y"] ** 2)
    return r, xy["x"] * xy["y"]


def _polar_fwd(xy):
    return polar(xy), {"x": xy["x"], "y": xy["y"]}


def _polar_bwd(res, cts):
    g_r, g_p = cts
    x, y = res["x"], res["y"]
    r = gt.sqrt(x * x + y * y)
    return ({"x": 2.0 * (g_r * x / r + g_p * y), "y": 2.0 * (g_r * y / r + g_p * x)},)


polar.defvjp(_polar_fwd, _polar_bwd)


def test_structured_arguments_and_several_outputs_use_the_rule():
    xy = {"x": np.array([3.0, 1.0]), "y": np.array([4.0, -2.0])}
    r, p = gt.differentiable(polar)(xy)
    np.testing.assert_allclose(r, [5.0, np.sqrt(5.0)])
    np.testing.assert_allclose(p, [12.0, -2.0])

    def loss(xy):
        r, p = polar(xy)
        return gt.sum(r) + 3.0 * gt.sum(p)

    def loss_np(x, y):
        return np.sum(np.sqrt(x * x + y * y)) + 3.0 * np.sum(x * y)

    g = gt.grad(loss)(xy)
    np.testing.assert_allclose(g["x"], 2 * numeric_grad(lambda x: loss_np(x, xy["y"]), xy["x"]), rtol=1e-7)
    np.testing.assert_allclose(g["y"], 2 * numeric_grad(lambda y: loss_np(xy["x"], y), xy["y"]), rtol=1e-7)
    # Only one output used: the other's cotangent is zero.
    g_r = gt.grad(lambda xy: gt.sum(polar(xy)[0]))(xy)
    np.testing.assert_allclose(g_r["x"], 2 * xy["x"] / np.hypot(xy["x"], xy["y"]), rtol=1e-13)


def test_nondiff_arguments_come_first_in_the_rules_and_key_the_cache():
    from functools import partial

    @partial(gt.custom_vjp, nondiff_argnums=(1,))
    def power(x, k):
        return x ** k

    power.defvjp(lambda x, k: (power(x, k), x), lambda k, x, g: (g * k * x ** (k - 1) * 10.0,))

    @partial(gt.custom_jvp, nondiff_argnums=(0,))
    def scale(k, x):
        return x * k

    @scale.defjvp
    def _scale_jvp(k, primals, tangents):
        return scale(k, primals[0]), tangents[0] * (k + 1.0)

    x = np.array([1.5, 2.0])
    for k in (2, 3):
        g = gt.grad(lambda x: gt.sum(power(x, k)))(x)
        np.testing.assert_allclose(g, 10.0 * k * x ** (k - 1))
        np.testing.assert_allclose(gt.grad(lambda x: gt.sum(scale(float(k), x)))(x), [k + 1.0] * 2)
    assert len(power._rules) == 2


def test_integer_arguments_get_no_gradient_and_zero_tangents():
    @gt.custom_jvp
    def shift(x, n):
        return x + gt.cast(n, "float64")

    @shift.defjvp
    def _shift_jvp(primals, tangents):
        x, n = primals
        tx, tn = tangents
        assert tn.dtype == np.int64 and not tn.is_abstract  # a concrete zero
        return shift(x, n), 2.0 * tx

    n = np.array([1, 2, 3, 4])
    np.testing.assert_allclose(gt.grad(lambda x: gt.sum(shift(x, n)))(X), np.full(4, 2.0))
    np.testing.assert_allclose(gt.jvp(lambda x: shift(x, n), (X,), (T,))[1], 2.0 * T)


def test_the_ir_holds_one_custom_equation_with_its_traced_rules():
    text = str(gt.make_ir(sin_vjp, np.ones(2)))
    assert text == (
        "{ a:f64[2] . b:f64[2] = custom_vjp[bwd={ a:f64[2] b:f64[2] . c:f64[2] = neg a ; "
        "d:f64[2] = mul c a ; e:f64[2] = div d 2.0 ; f:f64[2] = exp e ; g:f64[2] = mul a f ; "
        "h:f64[2] = mul b g -> h },fn={ a:f64[2] . b:f64[2] = sin a -> b },fwd={ a:f64[2] . -> a },"
        "index=0,name='sin_vjp',wrt=(0,)] a -> b }"
    )
    text = str(gt.make_ir(sin_jvp, np.ones(2)))
    assert text == (
        "{ a:f64[2] . b:f64[2] = custom_jvp[fn={ a:f64[2] . b:f64[2] = sin a -> b },index=0,"
        "jvp={ a:f64[2] b:f64[2] . c:f64[2] = neg a ; d:f64[2] = mul c a ; e:f64[2] = div d 2.0 ; "
        "f:f64[2] = exp e ; g:f64[2] = mul a f ; h:f64[2] = mul b g -> h },name='sin_jvp'] a -> b }"
    )


def test_calling_the_function_eagerly_without_a_tape_just_runs_it():
    calls = []

    @gt.custom_vjp
    def f(x):
        calls.append(type(x))
        return x * 2.0

    f.defvjp(lambda x: (f(x), None), lambda _, g: (g,))
    np.testing.assert_allclose(f(np.ones(2)), [2.0, 2.0])
    assert calls == [np.ndarray] and f._rules == {}  # nothing traced


# --- on a GradientTape ----------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["custom_vjp", "custom_jvp"])
def test_on_a_tape_the_gradient_is_the_rule_and_nested_tapes_differentiate_it(kind):
    f = CUSTOM[kind]
    x = gt.constant(X)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = gt.sum(f(x))
        np.testing.assert_allclose(y.numpy(), np.sum(np.sin(X)), rtol=1e-14)
        g = inner.gradient(y, x)
        s = gt.sum(g)
    np.testing.assert_allclose(g.numpy(), rule(X), rtol=1e-14)
    np.testing.assert_allclose(outer.gradient(s, x).numpy(), rule_fd(X), rtol=1e-7, atol=1e-9)


@custom_kinds
def test_a_staged_function_using_it_is_differentiated_by_nested_tapes(kind):
    staged = gt.differentiable(total(kind))  # recorded as a `call` of its Function
    x = gt.constant(X)
    with gt.GradientTape() as outer:
        outer.watch(x)
        with gt.GradientTape() as inner:
            inner.watch(x)
            y = staged(x)
        g = inner.gradient(y, x)
        s = gt.sum(g)
    np.testing.assert_allclose(g.numpy(), rule(X), rtol=1e-14)
    np.testing.assert_allclose(outer.gradient(s, x).numpy(), rule_fd(X), rtol=1e-7, atol=1e-9)


def test_a_tape_recording_a_custom_vjp_hits_the_backward_cache_every_step():
    backward_cache.clear_cache()
    w = gt.Variable(X.copy())
    for step in range(3):
        with gt.GradientTape() as tape:
            loss = gt.sum(sin_vjp(w) * w)
        g = tape.gradient(loss, w)
        np.testing.assert_allclose(g.numpy(), rule(w.numpy()) * w.numpy() + np.sin(w.numpy()), rtol=1e-13)
        w.assign_sub(0.1 * g)
    info = backward_cache.cache_info()
    assert (info["misses"], info["hits"], info["uncached"]) == (1, 2, 0)


# --- vmap -----------------------------------------------------------------------------------

@custom_kinds
def test_vmap_of_the_gradient_applies_the_rule_per_row(kind):
    xs = np.stack([X, 0.5 * X, -X])
    np.testing.assert_allclose(gt.vmap(gt.grad(total(kind)))(xs), rule(xs), rtol=1e-14)
    np.testing.assert_allclose(gt.vmap(CUSTOM[kind])(xs), np.sin(xs), rtol=1e-14)


@gt.custom_vjp
def weighted(x, w):
    return gt.sum(x * w)


# A deliberately scaled rule: 2x for x, 3x for w, so sums over a batch show.
weighted.defvjp(lambda x, w: (weighted(x, w), (x, w)), lambda res, g: (2.0 * g * res[1], 3.0 * g * res[0]))


def test_gradient_of_an_operand_shared_by_the_batch_sums_the_rule_over_the_batch():
    xs = np.stack([X, 0.5 * X, -2.0 * X])
    w = T.copy()
    fn = gt.make_ir(weighted, X, w)
    batched = ir.vmap(fn, [0, None], 3)
    assert [e.op.name for e in batched.eqns] == ["custom_vjp"]  # the batching rule kept the op
    np.testing.assert_allclose(ir.eval_function(batched, [xs, w])[0], xs @ w, rtol=1e-14)
    joint, _ = ir.vjp(batched, [0, 1])
    ct = np.array([1.0, -2.0, 0.5])
    _, gx, gw = ir.eval_function(joint, [xs, w, ct])
    np.testing.assert_allclose(gx, 2.0 * ct[:, None] * w[None, :], rtol=1e-14)
    np.testing.assert_allclose(gw, 3.0 * (ct[:, None] * xs).sum(axis=0), rtol=1e-14)
    # The same through the staged transforms: grad of a vmap with in_axes=(0, None).
    gw_staged = gt.grad(lambda w: gt.sum(gt.vmap(weighted, in_axes=(0, None))(xs, w) * ct))(w)
    np.testing.assert_allclose(gw_staged, gw, rtol=1e-14)


def test_vmap_of_a_custom_jvp_batches_the_jvp_rule():
    fn = gt.make_ir(sin_jvp, X)
    batched = ir.vmap(fn, [1], 3)  # batch along the last axis
    xs = np.stack([X, 2 * X, -X], axis=1)
    joint, _ = ir.jvp(batched, [0])
    out, t = ir.eval_function(joint, [xs, np.ones_like(xs)])
    np.testing.assert_allclose(out, np.sin(xs).T, rtol=1e-14)
    np.testing.assert_allclose(t, rule(xs).T, rtol=1e-14)


# --- compiled ----------------------------------------------------------------------------

def _functions_to_compile(kind):
    """The forward, joint gradient and Hessian-vector Functions of sum(f(x)) * sum(x)."""
    f = CUSTOM[kind]
    fn = gt.make_ir(lambda x: gt.sum(f(x)) * gt.sum(x), X)
    joint, _ = ir.vjp(fn, [0])
    hvp_fn, _ = ir.jvp(ir.select_outputs(joint, [1]), [0])
    return [(fn, [X]), (joint, [X, np.array(1.0)]), (hvp_fn, [X, np.array(1.0), T])]


@pytest.mark.native
@custom_kinds
def test_compiled_equals_interpreted(kind):
    for fn, args in _functions_to_compile(kind):
        cf = gt.runtime.compile_function(fn)
        assert cf.native, cf.fallback_reason
        for got, want in zip(cf(*args), ir.eval_function(fn, args)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.native
def test_a_staged_gradient_with_a_custom_rule_runs_native_code():
    g = gt.grad(total("custom_vjp"))
    np.testing.assert_allclose(g(X), rule(X), rtol=1e-13)
    program = next(iter(g._programs.values()))
    assert program.compiled.native and program.compiled.call_path != "interpreter"


# --- errors -------------------------------------------------------------------------------

def _vjp_function(fwd, bwd, name="f"):
    def f(x, y):
        return x * y

    f.__name__ = name
    f = gt.custom_vjp(f)
    f.defvjp(fwd, bwd)
    return f


def _grad_of(f):
    return lambda: gt.grad(lambda x: gt.sum(f(x, np.ones(3))))(np.ones(3))


def test_calling_before_defvjp_or_defjvp_is_an_error():
    f = gt.custom_vjp(lambda x: x)
    with pytest.raises(gt.CustomRuleError, match=r"custom_vjp function '<lambda>' was called before .*\.defvjp\(fwd, bwd\) first"):
        f(np.ones(2))

    @gt.custom_jvp
    def g(x):
        return x

    with pytest.raises(gt.CustomRuleError, match=r"custom_jvp function 'g' was called before .* @g\.defjvp"):
        g(np.ones(2))


def test_bwd_returning_the_wrong_number_of_cotangents_names_the_function():
    f = _vjp_function(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],), name="mul")
    with pytest.raises(gt.CustomRuleError, match=r"custom_vjp function 'mul': bwd returned 1 cotangents for 2 "
                       r"differentiable argument\(s\) \(argument 0, argument 1\)"):
        _grad_of(f)()


def test_bwd_returning_a_single_tensor_instead_of_a_tuple_says_so():
    f = gt.custom_vjp(lambda x: x * 2.0)
    f.defvjp(lambda x: (f(x), None), lambda _, g: g * 2.0)
    with pytest.raises(gt.CustomRuleError, match=r"bwd returned a Tensor f64\[3\] for 1 differentiable .* \(g,\)"):
        gt.grad(lambda x: gt.sum(f(x)))(np.ones(3))


def test_bwd_returning_a_cotangent_of_the_wrong_shape_or_dtype_names_it():
    f = _vjp_function(lambda x, y: (x * y, (x, y)), lambda res, g: (gt.sum(g), g), name="mul")
    with pytest.raises(gt.CustomRuleError, match=r"'mul': bwd's cotangent for argument 0 has shape \(\) but "
                       r"argument 0 has shape \(3,\)"):
        _grad_of(f)()
    f = _vjp_function(lambda x, y: (x * y, (x, y)), lambda res, g: (g, gt.cast(g, "float32")), name="mul")
    with pytest.raises(gt.CustomRuleError, match="bwd's cotangent for argument 1 has dtype float32 but "
                       "argument 1 has dtype float64"):
        _grad_of(f)()


def test_fwd_that_does_not_return_a_pair_or_returns_another_output_is_an_error():
    f = _vjp_function(lambda x, y: x * y, lambda res, g: (g, g), name="mul")
    with pytest.raises(gt.CustomRuleError, match=r"'mul': fwd must return a pair \(output, residuals\), but it "
                       r"returned a Tensor f64\[3\]"):
        _grad_of(f)()
    f = _vjp_function(lambda x, y: (gt.sum(x * y), None), lambda res, g: (g, g), name="mul")
    with pytest.raises(gt.CustomRuleError, match=r"'mul': fwd returned an output of types \(f64\[\]\), but the "
                       r"function returns \(f64\[3\]\)"):
        _grad_of(f)()


def test_jvp_rule_returning_a_tangent_of_the_wrong_shape_names_the_function():
    @gt.custom_jvp
    def twice(x):
        return 2.0 * x

    @twice.defjvp
    def _bad(primals, tangents):
        return twice(primals[0]), gt.sum(tangents[0])

    with pytest.raises(gt.CustomRuleError, match=r"custom_jvp function 'twice': the jvp rule's tangent for output 0 "
                       r"has shape \(\) but output 0 has shape \(3,\)"):
        gt.jvp(twice, (np.ones(3),), (np.ones(3),))

    @gt.custom_jvp
    def thrice(x):
        return 3.0 * x

    thrice.defjvp(lambda primals, tangents: tangents[0] * 3.0)
    with pytest.raises(gt.CustomRuleError, match=r"'thrice': the jvp rule must return a pair \(primal_out, "
                       r"tangent_out\), but it returned a Tensor f64\[3\]"):
        gt.grad(lambda x: gt.sum(thrice(x)))(np.ones(3))


def test_rules_closing_over_traced_values_are_refused_with_the_fix():
    def outer(x):
        @gt.custom_vjp
        def scaled(y):
            return y * x  # x: a traced value of `outer`, not an argument

        scaled.defvjp(lambda y: (scaled(y), None), lambda _, g: (g,))
        return gt.sum(scaled(x))

    with pytest.raises(gt.CustomRuleError, match=r"the function of 'scaled' reads 1 traced value\(s\) of an "
                       r"enclosing function \(f64\[3\]\).*Pass them to the custom function as arguments"):
        gt.grad(outer)(np.ones(3))


def test_a_function_whose_eager_result_differs_from_its_trace_is_an_error_on_a_tape():
    @gt.custom_vjp
    def shifty(x):
        return x * 1.0 if x.is_abstract else gt.cast(x, "float32")

    shifty.defvjp(lambda x: (shifty(x), None), lambda _, g: (g,))
    x = gt.constant(X)
    with gt.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(gt.CustomRuleError, match=r"'shifty' returned \(f32\[4\]\) when run, but its trace "
                           r"for these arguments returned \(f64\[4\]\)"):
            shifty(x)


def test_misuse_of_the_decorators_is_a_type_error():
    with pytest.raises(TypeError, match="custom_vjp expects a function"):
        gt.custom_vjp(3)
    f = gt.custom_vjp(lambda x: x)
    with pytest.raises(TypeError, match="defvjp needs a callable bwd"):
        f.defvjp(lambda x: (x, None), None)
    f.defvjp(lambda x: (x, None), lambda _, g: (g,))
    with pytest.raises(TypeError, match="keyword arguments \\(x\\) are not supported"):
        f(x=np.ones(2))
