"""The lowering table covers every op; what cannot be compiled says so.

`custom_vjp` and `custom_jvp` are inlined like `call` (they compute their
primal Function); only an eager `custom_gradient` (a Python callback) has no rule."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.codegen import Unsupported, lower
from gradtape.ir.inline_calls import inline_calls
from gradtape.codegen.rules import RULES

from .test_native_coverage import INTERPRETED_ONLY


def test_every_op_but_the_interpreted_ones_has_a_rule():
    missing = [name for name, op in ir.all_ops.items() if name not in INTERPRETED_ONLY and op not in RULES]
    assert missing == []
    assert ir.all_ops["custom_gradient"] not in RULES


def test_custom_ops_are_inlined_as_calls_of_their_primal_function():
    @gt.custom_vjp
    def f(x):
        return gt.sin(x) * 2.0

    f.defvjp(lambda x: (f(x), x), lambda x, g: (g * gt.cos(x),))
    for kind in ("custom_vjp", "custom_jvp"):
        assert RULES[ir.all_ops[kind]].kind == "inlined"
    fn = gt.make_ir(f, np.ones(3))
    assert [e.op.name for e in fn.eqns] == ["custom_vjp"]
    assert [e.op.name for e in inline_calls(fn).eqns] == ["sin", "mul"]
    lower(fn, "f")  # no Unsupported


def _eager_custom_gradient_function():
    """A Function holding a `custom_gradient` equation whose f could not be traced
    (it ran eagerly): the op then calls Python, which native code cannot."""

    @gt.custom_gradient
    def f(x):
        if float(gt.sum(x)) > 1e9:  # Python control flow on a value: untraceable
            raise AssertionError("not reached")
        return gt.sin(x), lambda g: g * gt.cos(x)

    x = gt.constant(np.ones(3))
    with gt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    rec = tape._tape
    return rec.function([y])


def test_custom_gradient_is_unsupported_and_named():
    fn = _eager_custom_gradient_function()
    with pytest.raises(Unsupported, match="custom_gradient"):
        lower(fn, "f")


def test_a_traced_custom_gradient_compiles():
    @gt.custom_gradient
    def f(x):
        return gt.sin(x), lambda g: g * gt.cos(x)

    fn = gt.make_ir(f, np.ones(3))
    assert [e.op.name for e in fn.eqns] == ["custom_vjp"]
    lower(fn, "f")


def test_float16_is_unsupported_with_the_fix():
    fn = gt.make_ir(lambda x: x * x, np.ones(3, np.float16))
    with pytest.raises(Unsupported, match="float16.*cast"):
        lower(fn, "f")


def test_lowered_follows_the_contract():
    x = np.ones((2, 3))
    fn = gt.make_ir(lambda x: (gt.sum(x * x), gt.exp(x)), x)
    lowered = lower(fn, "my_kernel")
    assert lowered.name == "my_kernel"
    assert lowered.in_types == fn.in_types and lowered.out_types == fn.out_types
    text = str(lowered.module)
    assert 'define void @"my_kernel"(i8** %".1")' in text
    assert lowered.arena_bytes % 64 == 0
