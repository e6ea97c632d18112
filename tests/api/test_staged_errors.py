"""Misuse of the staged front door: each error names the problem and the fix."""
import numpy as np
import pytest

import gradtape as gt


def test_non_scalar_output_of_grad():
    g = gt.grad(lambda x: x * 2.0)
    with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions\. Output had shape: \(3,\)\."):
        g(np.ones(3))


def test_container_output_of_grad():
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions. Output was a list of 1 value"):
        gt.grad(lambda x: [gt.sum(x)])(np.ones(3))


def test_integer_output_of_grad():
    with pytest.raises(TypeError, match="grad requires real-valued outputs"):
        gt.grad(lambda x: gt.argmax(x))(np.ones(3))


def test_integer_input_of_grad():
    with pytest.raises(TypeError, match=r"grad requires float inputs: argument 0 of <lambda> holds a value of dtype int64"):
        gt.grad(lambda x: x * 2.0)(3)
    with pytest.raises(TypeError, match="value_and_grad requires float inputs: argument 1"):
        gt.value_and_grad(lambda x, n: gt.sum(x * n), argnums=(0, 1))(np.ones(2), np.arange(2))


def test_integer_input_outside_argnums_is_fine():
    f = gt.grad(lambda x, n: gt.sum(x * gt.cast(n, "float64")))
    np.testing.assert_array_equal(f(np.ones(2), np.array([2, 3])), [2.0, 3.0])


def test_has_aux_needs_a_pair():
    with pytest.raises(TypeError, match=r"has_aux=True needs the function to return a pair \(output, aux\)"):
        gt.grad(lambda x: x * 2.0, has_aux=True)(1.0)


def test_unhashable_static_argument():
    f = gt.differentiable(lambda x, sizes: x, static_argnums=(1,))
    with pytest.raises(TypeError, match=r"<lambda>: static argument 1 must be hashable, but got a list \(\[1, 2\]\)"):
        f(1.0, [1, 2])


def test_tensor_as_static_argument():
    f = gt.differentiable(lambda x, y: x, static_argnums=1)
    with pytest.raises(TypeError, match="static argument 1 is a gradtape Tensor"):
        f(1.0, gt.constant(2.0))


def test_python_control_flow_on_a_traced_value():
    def relu_branch(x):
        if x > 0:
            return x
        return -x

    f = gt.differentiable(relu_branch)
    for staged in (f, gt.grad(relu_branch)):
        with pytest.raises(gt.ConcretizationError) as info:
            staged(1.0)
        assert _lines(info) == [
            "bool() needs the concrete value of a traced bool[], which does not exist while gradtape traces "
            "relu_branch",
            f"  at test_staged_errors.py:{_line_of('if x > 0:')} (in relu_branch): `if x > 0:`",
            "  the value depends on argument `x`",
            "Python control flow on traced values is not staged: use gradtape.where(cond, x, y) to select values, "
            "gradtape.cond or gradtape.switch to branch, gradtape.while_loop, fori_loop or scan to loop "
            "(docs/control_flow.md); or, if `x` is a setting rather than data, mark it static (static_argnums) so "
            "Python sees its value."]
        assert any("while gradtape traced relu_branch" in note for note in info.value.__notes__)
    assert f.cache_info().traces == 0


def _lines(info) -> list:
    return str(info.value).splitlines()[:4]  # Python 3.10 appends the notes to the message


def _line_of(text: str) -> int:
    """The line number of the one line of this file that ends with `text`."""
    with open(__file__) as f:
        (n,) = [k + 1 for k, line in enumerate(f) if line.rstrip().endswith(text)]
    return n


def test_a_condition_on_a_value_of_two_arguments_names_both():
    def clipped(w, data, n):
        total = gt.sum(w * data)
        if total > n:  # a Python int argument is traced too
            return total
        return w[0]

    with pytest.raises(gt.ConcretizationError) as info:
        gt.grad(clipped)(np.ones(2), np.ones(2), 3)
    lines = _lines(info)
    where = _line_of("if total > n:  # a Python int argument is traced too")
    assert lines[1] == (f"  at test_staged_errors.py:{where} (in clipped): "
                        "`if total > n:  # a Python int argument is traced too`")
    assert lines[2] == "  the value depends on arguments `w`, `data` and `n`"
    assert lines[3].endswith("or, if `w`, `data` and `n` are settings rather than data, mark them static "
                             "(static_argnums) so Python sees their value.")


def test_a_conversion_in_a_helper_names_the_helper_line_and_the_traced_function():
    def steps(v):
        return range(int(v["n"]))  # the helper's line

    def repeat(params, x):
        for _ in steps(params):
            x = gt.sin(x)
        return x

    with pytest.raises(gt.ConcretizationError) as info:
        gt.differentiable(repeat)({"n": np.int64(3), "unused": 1.0}, 0.5)
    assert _lines(info)[:3] == [
        "int() needs the concrete value of a traced i64[], which does not exist while gradtape traces repeat",
        f"  at test_staged_errors.py:{_line_of('# the helper' + chr(39) + 's line')} (in steps): "
        "`return range(int(v[\"n\"]))  # the helper's line`",
        "  the value depends on argument `params['n']`"]


def test_a_conversion_under_vmap_names_the_batched_argument():
    def pick(x, y):
        return x if float(y) > 0 else -x

    with pytest.raises(gt.ConcretizationError) as info:
        gt.vmap(pick, in_axes=(None, 0))(1.0, np.array([1.0, -2.0]))
    lines = _lines(info)
    assert lines[0] == ("float() needs the concrete value of a traced f64[], which does not exist while gradtape "
                        "traces pick")
    assert lines[1].startswith(f"  at test_staged_errors.py:{_line_of('return x if float(y) > 0 else -x')} (in pick)")
    assert lines[2] == "  the value depends on argument `y`"


def test_a_value_of_the_enclosing_trace_is_named_with_its_function():
    def outer(x):
        return gt.grad(lambda y: y * x if x > 0 else y)(x)  # inner reads outer's x

    with pytest.raises(gt.ConcretizationError) as info:
        gt.differentiable(outer)(1.0)
    assert _lines(info)[0].endswith("while gradtape traces <lambda>")
    assert _lines(info)[2] == "  the value depends on argument `x` (of the enclosing outer)"


def test_float_of_a_traced_value():
    with pytest.raises(gt.ConcretizationError, match=r"^float\(\) needs the concrete value of a traced f64\[\]"):
        gt.differentiable(lambda x: float(x))(1.0)
    with pytest.raises(gt.ConcretizationError, match=r"^\.numpy\(\) needs the concrete value of a traced f64\[3\],"
                                                     r"(.|\n)*depends on argument `x`\nReturn it from the traced "
                                                     r"function to get its value\."):
        gt.differentiable(lambda x: x.numpy())(np.ones(3))


def test_non_array_leaf_names_its_path():
    f = gt.differentiable(lambda p: p["w"][0])
    with pytest.raises(TypeError, match=r"<lambda>: argument 0\['w'\]\[1\] is a str \('abc'\), not an array or a number"):
        f({"w": [np.ones(2), "abc"]})
    with pytest.raises(TypeError, match=r"argument 1 is a NoneType"):
        gt.differentiable(lambda a, b: a)(1.0, None)


def test_unsupported_dtype():
    with pytest.raises(TypeError, match="argument 0 has dtype <U1, which gradtape does not support; "
                                        "use a float, complex, integer or bool dtype"):
        gt.differentiable(lambda x: x)(np.array(["a", "b"]))


def test_complex_arguments_are_staged():  # refused before issue 28; docs/complex.md
    z = np.array([1 + 2j, -3j])
    np.testing.assert_array_equal(gt.differentiable(lambda x: x * x)(z), z * z)
    np.testing.assert_array_equal(gt.differentiable(lambda x: x * 2)(1 + 1j), (1 + 1j) * 2)


def test_keyword_arguments_are_refused():
    with pytest.raises(TypeError, match="keyword arguments are not supported; pass arguments positionally"):
        gt.differentiable(lambda x: x)(x=1.0)


def test_bad_argnums():
    with pytest.raises(TypeError, match="argnums must be a non-negative int"):
        gt.grad(lambda x: x, argnums=-1)
    with pytest.raises(ValueError, match="argnums 2 is out of range for a call with 1 positional arguments"):
        gt.grad(lambda x: x, argnums=2)(1.0)
    with pytest.raises(ValueError, match="argument 1 is both in argnums and static_argnums"):
        gt.grad(lambda x, n: x, argnums=1, static_argnums=1)


def test_not_callable():
    with pytest.raises(TypeError, match="differentiable expects a function, got a int"):
        gt.differentiable(3)


def test_bad_result_type():
    with pytest.raises(TypeError, match="must return arrays or Tensors .* output 0 is a str"):
        gt.differentiable(lambda x: "no")(1.0)


def test_wrong_shape_never_gives_a_wrong_answer():
    f = gt.differentiable(lambda x: gt.sum(x))
    assert f(np.ones(2)) == 2.0
    assert f(np.ones(5)) == 5.0
    assert f(np.ones((2, 2))) == 4.0
