"""Reverse mode through while_loop by a run-time stack (ir/ops/while_vjp.py,
codegen/control_stack.py): exact gradients for trip counts 0, 1, data-dependent
and in the thousands, natively, to second and third order, under vmap."""
import importlib

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.codegen.control import WhileLoop
from gradtape.codegen.control_stack import StackedWhileVJP, WhilePop, WhilePush
from gradtape.codegen.lowering import SubFunction
from gradtape.ir.ops.while_vjp import while_vjp_p
from gradtape.ir.op import impls
from gradtape.runtime import compile_function
from gradtape.testing import check_grads


def loop_kinds(fn):
    """The loop steps of fn's native code, in order, by class name."""
    kinds = (WhileLoop, WhilePush, WhilePop, StackedWhileVJP)
    return [type(s).__name__ for s in SubFunction(fn).ctx.steps if isinstance(s, kinds)]


def compound(x, rate):
    """Grow x (and a running sum) by (1 + rate) until x passes 2: about log(2/x)/rate steps."""
    def body(c):
        v, total = c
        return v * (1.0 + rate) + 1e-3 * gt.sin(v), total + v
    v, total = gt.while_loop(lambda c: c[0] < 2.0, body, (x, x * 0.0))
    return v + 0.01 * total


def compound_steps(x, rate):
    n = 0
    while x < 2.0:
        x, n = x * (1.0 + rate) + 1e-3 * np.sin(x), n + 1
    return n


def compound_unrolled(x, rate, n):
    v, total = x, x * 0.0
    for _ in range(n):
        v, total = v * (1.0 + rate) + 1e-3 * gt.sin(v), total + v
    return v + 0.01 * total


@pytest.mark.parametrize("x, steps", [(2.5, 0), (1.99, 1), (1.2, None)])
def test_trip_counts_zero_one_and_data_dependent_to_third_order(x, steps):
    n = compound_steps(x, 0.05)
    assert n == steps if steps is not None else n > 5
    check_grads(compound, [x, 0.05], order=3, modes=("rev", "fwd"))
    for argnum in (0, 1):
        got = gt.grad(compound, argnums=argnum)(x, 0.05)
        want = gt.grad(lambda x, r: compound_unrolled(x, r, n), argnums=argnum)(x, 0.05)
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_thousands_of_steps_natively_match_the_closed_form():
    """x (1 + r)^n until past 2: d x_n / d x_0 = (1 + r)^n, with n = 7,000 steps."""
    def grow(x):
        return gt.while_loop(lambda v: v < 2.0, lambda v: v * 1.0001, x)
    x0 = 2.0 / 1.0001 ** 7000 * 0.99999
    n = int(np.ceil(np.log(2.0 / x0) / np.log(1.0001)))
    assert 6999 <= n <= 7001
    joint, _ = ir.vjp(gt.make_ir(grow, x0), [0])
    code = compile_function(joint)
    assert code.native, code.fallback_reason
    assert loop_kinds(joint) == ["WhilePush", "WhilePop"]      # the value's loop pushes, the gradient's pops
    value, grad = code(np.float64(x0), np.float64(1.0))
    steps = round(np.log(value / x0) / np.log(1.0001))
    np.testing.assert_allclose(grad, 1.0001 ** steps, rtol=1e-9)
    np.testing.assert_allclose(grad, ir.eval_function(joint, [np.float64(x0), np.float64(1.0)])[1], rtol=1e-12)


def test_one_stack_loop_for_all_carries_and_constants():
    def f(x, w):
        def body(c):
            a, b, k = c
            return gt.tanh(a * w) + b, b * 0.9 + a, k + 1
        a, b, k = gt.while_loop(lambda c: c[2] < 6, body, (x, x * 0.5, 0))
        return gt.sum(a * b)
    x, w = np.array([0.3, -0.2]), np.array([1.1, 0.7])
    joint, _ = ir.vjp(gt.make_ir(f, x, w), [0, 1])
    runs = []
    inner = impls[while_vjp_p]
    impls[while_vjp_p] = lambda *a, **p: runs.append(1) or inner(*a, **p)
    try:
        got = ir.eval_function(joint, [x, w, np.float64(1.0)])
    finally:
        impls[while_vjp_p] = inner
    assert len(runs) == 1                       # cotangents of a, b and w: one forward-backward pair
    assert loop_kinds(joint) == ["WhilePush", "WhilePop"]
    native = compile_function(joint)(x, w, np.float64(1.0))
    for a, b in zip(native, got):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    check_grads(f, [x, w], order=2, modes=("rev",))


def test_native_second_order_matches_the_interpreter():
    f = lambda x, r: compound(x, r)
    fn = gt.make_ir(gt.grad(gt.grad(f)), 1.2, 0.05)
    code = compile_function(fn)
    assert code.native, code.fallback_reason
    np.testing.assert_allclose(code(np.float64(1.2), np.float64(0.05))[0],
                               ir.eval_function(fn, [np.float64(1.2), np.float64(0.05)])[0], rtol=1e-12)
    n = compound_steps(1.2, 0.05)
    want = gt.grad(gt.grad(lambda x, r: compound_unrolled(x, r, n)))(1.2, 0.05)
    np.testing.assert_allclose(code(np.float64(1.2), np.float64(0.05))[0], want, rtol=1e-10)


def test_vmap_of_the_gradient_lanes_with_their_own_trip_counts():
    xs = np.array([2.5, 1.99, 1.2, 0.4])
    assert len({compound_steps(x, 0.05) for x in xs}) == 4
    g = gt.vmap(gt.grad(compound, argnums=(0, 1)), in_axes=(0, None))(xs, 0.05)
    for i, x in enumerate(xs):
        n = compound_steps(x, 0.05)
        want = gt.grad(lambda x, r: compound_unrolled(x, r, n), argnums=(0, 1))(x, 0.05)
        np.testing.assert_allclose(g[0][i], want[0], rtol=1e-12)
        np.testing.assert_allclose(g[1][i], want[1], rtol=1e-12)


def test_the_interpreter_names_the_while_loop_when_its_stack_runs_out_of_memory(monkeypatch):
    """As native code does (tests/process/test_out_of_memory.py, under a real memory limit): here the
    40th evaluation of the body fails as NumPy would when memory runs out."""
    module = importlib.import_module("gradtape.ir.ops.while_vjp")  # the package exports a function of that name
    x = np.full(8, 1.5)
    joint, _ = ir.vjp(gt.make_ir(lambda x: gt.sum(gt.while_loop(lambda v: v[0] < 1e9, lambda v: v * 1.5, x)), x),
                      [0])
    calls, inner = [], module.eval_function

    def failing(fn, args):
        calls.append(fn)
        if sum(f is calls[0] for f in calls) > 40:  # calls[0] is the condition; the body alternates with it
            raise MemoryError("Unable to allocate 64 bytes for an array with shape (8,) and data type float64")
        return inner(fn, args)

    monkeypatch.setattr(module, "eval_function", failing)
    with pytest.raises(MemoryError) as e:
        ir.eval_function(joint, [x, np.float64(1.0)])
    assert str(e.value) == (
        "while_loop: out of memory after 40 iterations: reverse mode keeps values of every iteration for the "
        "backward pass (2,560 bytes held); bound the number of iterations, make the carry smaller, or "
        "differentiate in forward mode (gt.jvp), which keeps no stack")
