"""gt.cond and gt.switch: values, native code, derivatives, batching, errors.

References are independent: NumPy on the branch taken, finite differences
(check_grads), and a Python loop over batch elements.
"""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.runtime import compile_function
from gradtape.testing import check_grads

X = np.array([0.3, -1.2, 2.0])


def piecewise(x):
    """x**2 * sin where the sum is positive, else exp(x) - cos."""
    return gt.cond(gt.sum(x) > 0, lambda v: v * v * gt.sin(v), lambda v: gt.exp(v) - gt.cos(v), x)


def piecewise_numpy(x):
    return x * x * np.sin(x) if np.sum(x) > 0 else np.exp(x) - np.cos(x)


BRANCHES = [lambda v, s: v * s, lambda v, s: gt.tanh(v) + s, lambda v, s: gt.sin(v) * s * s]


def by_index(i, x, s):
    return gt.switch(i, BRANCHES, x, s)


def by_index_numpy(i, x, s):
    return [x * s, np.tanh(x) + s, np.sin(x) * s * s][min(max(i, 0), 2)]


_native: dict = {}


def native(f, *args):
    """f traced for args' types and compiled (asserted native), once per function."""
    key = (f, tuple(np.asarray(a).dtype for a in args), tuple(np.shape(a) for a in args))
    if key not in _native:
        fn = gt.make_ir(f, *args)
        code = compile_function(fn)
        assert code.native, code.fallback_reason
        _native[key] = (fn, code)
    return _native[key]


@pytest.mark.parametrize("x", [X, -X])
def test_cond_traced_is_one_equation_and_native_code_takes_the_right_branch(x):
    fn, code = native(piecewise, X)
    assert [e.op.name for e in fn.eqns].count("cond") == 1
    np.testing.assert_allclose(code(x)[0], piecewise_numpy(x), rtol=1e-13)
    np.testing.assert_allclose(ir.eval_function(fn, [x])[0], piecewise_numpy(x), rtol=1e-13)


@pytest.mark.parametrize("i", [-5, 0, 1, 2, 3, 100])
def test_switch_clamps_its_index_in_native_code_the_interpreter_and_eagerly(i):
    s = np.float64(1.5)
    fn, code = native(by_index, np.int64(0), X, s)
    want = by_index_numpy(i, X, s)
    np.testing.assert_allclose(code(np.int64(i), X, s)[0], want, rtol=1e-13)
    np.testing.assert_allclose(ir.eval_function(fn, [np.int64(i), X, s])[0], want, rtol=1e-13)
    np.testing.assert_allclose(by_index(i, gt.constant(X), s).numpy(), want, rtol=1e-13)


WIDE_INDICES = [np.int64(2**40), np.int64(-2**40), np.int64(-2**32 + 1), np.int64(2**32 + 1),
                np.uint32(2**31), np.uint32(2**32 - 1), np.uint64(2**63), np.uint64(2**64 - 1),
                np.int8(-128), np.int8(127), np.int8(-1), np.uint8(255), np.int16(1), 2**40, -2**40]


@pytest.mark.parametrize("i", WIDE_INDICES, ids=repr)
def test_switch_clamps_an_index_of_any_integer_dtype_before_narrowing_it(i):
    """The index is clamped in its own dtype: cast to int32 first, 2**40 and 2**31 wrap to 0 or below."""
    s = np.float64(1.5)
    want = by_index_numpy(int(i), X, s)
    fn, code = native(by_index, i, X, s)
    np.testing.assert_allclose(code(i, X, s)[0], want, rtol=1e-13)
    np.testing.assert_allclose(ir.eval_function(fn, [np.asarray(i, fn.in_types[0].dtype), X, s])[0], want,
                               rtol=1e-13)
    np.testing.assert_allclose(gt.differentiable(by_index)(i, X, s), want, rtol=1e-13)
    np.testing.assert_allclose(by_index(i, gt.constant(X), s).numpy(), want, rtol=1e-13)
    grad = gt.grad(lambda x: gt.sum(by_index(i, x, s)))(X)
    np.testing.assert_allclose(grad, [np.full(3, s), 1 - np.tanh(X) ** 2, np.cos(X) * s * s][min(max(int(i), 0), 2)],
                               rtol=1e-13)


def test_switch_of_the_issue_example_takes_the_last_branch():
    g = gt.differentiable(lambda i, x: gt.switch(i, [lambda x: x, lambda x: 2 * x, lambda x: 3 * x], x))
    assert float(g(np.int64(2**40), 1.0)) == 3.0
    assert float(g(np.uint32(2**31), 1.0)) == 3.0
    assert float(g(np.int64(-2**40), 1.0)) == 1.0


@pytest.mark.parametrize("dtype", [np.int64, np.uint32, np.uint64, np.int8])
def test_vmap_of_switch_clamps_wide_indices_per_element(dtype):
    info = np.iinfo(dtype)
    idx = np.array([info.max, info.min, 1, info.max // 2 + 1], dtype=dtype)
    xs = np.linspace(-1, 1, 8).reshape(4, 2)
    want = np.stack([by_index_numpy(int(i), x, 0.5) for i, x in zip(idx, xs)])
    np.testing.assert_allclose(gt.vmap(lambda i, x: by_index(i, x, 0.5))(idx, xs), want, rtol=1e-13)
    shared = gt.vmap(lambda i, x: by_index(i, x, 0.5), in_axes=(None, 0))
    np.testing.assert_allclose(shared(idx[0], xs), [by_index_numpy(int(idx[0]), x, 0.5) for x in xs], rtol=1e-13)


def test_switch_rejects_a_bool_index_on_both_paths():
    """As JAX's switch: an index is an integer; a predicate goes to cond."""
    for f in (lambda i: gt.switch(i, BRANCHES, X, 1.0), gt.differentiable(lambda i: gt.switch(i, BRANCHES, X, 1.0))):
        with pytest.raises(TypeError, match=r"switch: index must be an integer scalar .*got bool\[\]"):
            f(np.bool_(True))


@pytest.mark.parametrize("x", [X, -X])
def test_cond_gradients_match_finite_differences_to_second_order(x):
    check_grads(lambda v: gt.sum(piecewise(v)), [x], order=2, modes=("rev", "fwd"))


def test_grad_of_staged_cond_matches_the_branch_derivative():
    g = gt.grad(lambda v: gt.sum(piecewise(v)))
    np.testing.assert_allclose(g(X), 2 * X * np.sin(X) + X * X * np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(g(-X), np.exp(-X) + np.sin(-X), rtol=1e-12)


def test_gradient_code_of_cond_is_native_and_matches_the_interpreter():
    fn = gt.make_ir(lambda v: gt.sum(piecewise(v)), X)
    joint, _ = ir.vjp(fn, [0])
    code = compile_function(joint)
    assert code.native, code.fallback_reason
    for x in (X, -X):
        want = ir.eval_function(joint, [x, np.float64(1.0)])
        for got, w in zip(code(x, np.float64(1.0)), want):
            np.testing.assert_allclose(got, w, rtol=1e-12)


def test_switch_gradients_match_finite_differences_for_each_branch():
    for i in range(3):
        check_grads(lambda v, s, i=i: gt.sum(by_index(gt.constant(np.int64(i)) * 1, v, s)), [X, 0.7], order=2)


def test_branches_that_close_over_traced_values():
    def f(x, y):
        return gt.cond(x[0] > 0, lambda v: v * y, lambda v: v + gt.sin(y), x)

    y = np.array([2.0, -1.0, 0.5])
    check_grads(f, [X, y], order=2)
    check_grads(f, [-X, y], order=2)


def test_pytree_operands_and_results():
    def f(x, s):
        return gt.cond(s > 0, lambda p: {"a": p[0] * p[1], "b": (p[0],)},
                       lambda p: {"a": p[0] - p[1], "b": (-p[0],)}, (x, s))

    out = gt.differentiable(f)(X, 2.0)
    np.testing.assert_allclose(out["a"], X * 2.0)
    np.testing.assert_allclose(out["b"][0], X)
    out = gt.differentiable(f)(X, -2.0)
    np.testing.assert_allclose(out["a"], X + 2.0)
    check_grads(lambda x, s: gt.sum(f(x, s)["a"] * f(x, s)["b"][0]), [X, 0.5], order=2)


def test_nested_cond():
    def f(x):
        return gt.cond(x[0] > 0, lambda v: gt.cond(v[1] > 0, lambda w: w * 2.0, lambda w: w * 3.0, v),
                       lambda v: -v, x)

    for sign in ([1, 1, 1], [1, -1, 1], [-1, 1, 1]):
        x = X * np.array(sign)
        want = x * 2.0 if x[0] > 0 and x[1] > 0 else x * 3.0 if x[0] > 0 else -x
        fn, code = native(f, X)
        np.testing.assert_allclose(code(x)[0], want)


def test_vmap_with_a_batched_predicate_selects_per_element():
    xs = np.array([[0.5, 1.0], [-2.0, 0.1], [3.0, -4.0], [-0.2, -0.3]])
    f = gt.vmap(lambda x: piecewise(x))
    got = f(xs)
    np.testing.assert_allclose(got, np.stack([piecewise_numpy(x) for x in xs]), rtol=1e-13)


def test_vmap_with_a_shared_predicate_and_batched_operand():
    xs = np.array([[0.5, 1.0], [-2.0, 0.1], [3.0, -4.0]])
    f = gt.vmap(lambda x, s: gt.cond(s > 0, lambda v: v * s, lambda v: v - s, x), in_axes=(0, None))
    np.testing.assert_allclose(f(xs, 2.0), xs * 2.0)
    np.testing.assert_allclose(f(xs, -2.0), xs + 2.0)


def test_vmap_of_switch_with_batched_index():
    idx = np.array([0, 2, 1, 7, -3])
    xs = np.linspace(-1, 1, 10).reshape(5, 2)
    f = gt.vmap(lambda i, x: by_index(i, x, 0.5))
    want = np.stack([by_index_numpy(int(i), x, 0.5) for i, x in zip(idx, xs)])
    np.testing.assert_allclose(f(idx, xs), want, rtol=1e-13)


def test_eager_cond_on_a_tape_runs_one_branch_and_records_it():
    x = gt.Variable(X)
    calls = []

    def true_fun(v):
        calls.append("true")
        return v * v

    def false_fun(v):
        calls.append("false")
        return -v

    with gt.GradientTape() as tape:
        y = gt.sum(gt.cond(gt.sum(x) > 0, true_fun, false_fun, x))
    assert calls == ["true"]
    np.testing.assert_allclose(tape.gradient(y, x), 2 * X)


# --- bad input ---------------------------------------------------------------------------------

def _trace(f):
    return gt.make_ir(f, X)


def test_branches_returning_different_dtypes_name_both_types():
    with pytest.raises(TypeError, match=r"cond: false_fun and true_fun must return the same shapes and dtypes; "
                                        r"output leaf 0 is f32\[3\] in false_fun and f64\[3\] in true_fun"):
        _trace(lambda x: gt.cond(x[0] > 0, lambda v: v, lambda v: v.astype(np.float32), x))


def test_branches_returning_different_shapes_name_both_types():
    with pytest.raises(TypeError, match=r"switch: branch 0 and branch 1 .*f64\[3\] in branch 0 and f64\[\] in branch 1"):
        _trace(lambda x: gt.switch(gt.argmax(x), [lambda v: v, lambda v: gt.sum(v)], x))


def test_branches_returning_different_structures():
    with pytest.raises(TypeError, match=r"cond: .*same structure.*\(\*, \*\)"):
        _trace(lambda x: gt.cond(x[0] > 0, lambda v: (v, v), lambda v: v, x))


@pytest.mark.parametrize("pred,got", [(np.ones(2, bool), r"bool\[2\]"), (1.0, r"f64\[\]")])
def test_predicate_must_be_a_boolean_scalar(pred, got):
    with pytest.raises(TypeError, match=r"cond: pred must be a boolean scalar .*got " + got):
        gt.cond(pred, lambda v: v, lambda v: v, X)


def test_traced_predicate_must_be_a_boolean_scalar():
    with pytest.raises(TypeError, match=r"cond: pred must be a boolean scalar .*got bool\[3\]"):
        _trace(lambda x: gt.cond(x > 0, lambda v: v, lambda v: v, x))


def test_switch_index_must_be_an_integer_scalar_and_branches_nonempty():
    with pytest.raises(TypeError, match=r"switch: index must be an integer scalar .*got f64\[\]"):
        gt.switch(1.0, BRANCHES, X, 1.0)
    with pytest.raises(TypeError, match=r"switch: branches must be a nonempty list or tuple of functions"):
        gt.switch(0, [], X)


def test_shape_rule_rejects_mismatched_branches():
    a = gt.make_ir(lambda v: v * 2.0, X)
    b = gt.make_ir(lambda v: gt.sum(v), X)
    with pytest.raises(ir.ShapeError, match=r"cond: branch 1 returns f64\[\] but branch 0 returns f64\[3\]"):
        ir.shape_rules[ir.all_ops["cond"]](ir.TensorType((), np.int32), ir.TensorType((3,), np.float64),
                                           branches=(a, b))


def test_a_python_if_on_a_traced_value_names_the_constructs_as_the_fix():
    def f(x):
        return x if x > 0 else -x

    with pytest.raises(TypeError, match=r"gradtape.cond or gradtape.switch to branch, "
                                        r"gradtape.while_loop, fori_loop or scan to loop"):
        gt.make_ir(f, 1.0)
