"""The trace context (gradtape/tracer/trace_context.py): which trace an op emits into, and
abstract tensors that leak out of their trace (issue 14: like JAX's UnexpectedTracerError)."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import gradtape as gt
from gradtape.tracer import trace_context


def _leak_from_f():
    """An abstract tensor of f's trace, kept in a list while f was traced."""
    kept = []

    @gt.differentiable
    def f(x):
        kept.append(x * 2.0)
        return gt.sum(x)

    f(np.ones(3))
    return kept[0]


LEAK_TEXT = "used after that trace ended: it leaked out of 'f'"


def test_a_leaked_tensor_in_an_eager_op_raises_naming_its_function():
    leaked = _leak_from_f()
    with pytest.raises(gt.UnexpectedTracerError, match=LEAK_TEXT) as err:
        leaked * 3.0
    assert "f64[3]" in str(err.value) and "Return it from 'f'" in str(err.value)


def test_a_leaked_tensor_on_a_tape_raises_instead_of_a_none_gradient():
    leaked = _leak_from_f()
    x = gt.constant(np.ones(3))
    with gt.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(gt.UnexpectedTracerError, match=LEAK_TEXT):
            gt.sum(leaked * x)
    with pytest.raises(gt.UnexpectedTracerError, match=LEAK_TEXT):
        tape.gradient(leaked, x)


def test_reading_a_leaked_tensors_value_raises_the_leak_error():
    leaked = _leak_from_f()
    with pytest.raises(gt.UnexpectedTracerError, match=LEAK_TEXT):
        leaked.numpy()
    with pytest.raises(gt.UnexpectedTracerError, match=LEAK_TEXT):
        float(leaked[0])


def test_a_leaked_tensor_in_a_later_trace_raises():
    leaked = _leak_from_f()
    with pytest.raises(gt.UnexpectedTracerError, match=LEAK_TEXT):
        gt.grad(lambda y: gt.sum(y * leaked))(np.ones(3))  # closed over
    staged = gt.differentiable(lambda y: y * 2.0)
    with pytest.raises(gt.UnexpectedTracerError, match=LEAK_TEXT):
        staged(leaked)  # passed to a staged call eagerly


def test_a_tensor_leaked_from_an_inner_trace_into_the_outer_result_raises():
    kept = []

    def inner(y):
        kept.append(y * y)
        return gt.sum(y)

    @gt.differentiable
    def outer(x):
        gt.grad(inner)(x)
        return kept[0]  # a value of inner's trace, not outer's

    with pytest.raises(gt.UnexpectedTracerError, match="leaked out of 'inner'"):
        outer(np.ones(2))


def test_closure_values_of_an_enclosing_trace_differentiate_correctly():
    # inner reads outer's x: x*x*y*y emits into inner's trace (the newest), with x captured.
    def outer(x):
        return gt.sum(gt.grad(lambda y: gt.sum(x * x * y * y))(x))  # sum(2 x^3)

    x = np.array([0.5, -1.5, 2.0])
    value, grad = gt.value_and_grad(outer)(x)
    np.testing.assert_allclose(value, np.sum(2 * x**3), rtol=1e-14)
    np.testing.assert_allclose(grad, 6 * x**2, rtol=1e-14)


def test_no_trace_in_progress_outside_traces_and_one_inside():
    assert not trace_context.in_trace() and trace_context.current_builder([1.0]) is None
    seen = []

    @gt.differentiable
    def f(x):
        seen.append((trace_context.in_trace(), trace_context.current_builder([x]) is x._sym.builder))
        return x

    f(1.0)
    assert seen == [(True, True)]
    assert not trace_context.in_trace()


def test_every_module_holds_the_one_bind_whatever_the_import_order():
    # variable.py used to be imported while dispatch.py was, and kept the Python bind.
    code = (
        "import gradtape.tracer.variable, gradtape.tracer.recording, gradtape, sys\n"
        "from gradtape.tracer import dispatch\n"
        "binds = (dispatch.python_bind, dispatch.bind)\n"
        "stale = [n for n, m in list(sys.modules.items()) if n.startswith('gradtape')"
        " and getattr(m, 'bind', None) in binds and m.bind is not dispatch.bind]\n"
        "print(stale, dispatch.bind is (dispatch.python_bind if dispatch._crecord is None"
        " or dispatch._record is not dispatch._crecord.record else dispatch._crecord.bind))\n"
    )
    root = pathlib.Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "[] True"
