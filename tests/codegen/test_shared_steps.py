"""Steps with the same code are emitted once and called with each step's buffers
(codegen/shared_steps.py), when steps are functions of their own; results do not change.

A chain that repeats a 5-op pattern, cut every 5 ops (MAX_INLINE_DEPTH = 4),
stores a value after each repetition, and with one loop per stored value
(MAX_FUSED_FILLS = 1) its forward loops are the same code on different
buffers. The module then defines fewer step functions than it
calls, and the results are those of the same module with every copy kept,
bit for bit, and of the reference interpreter.
"""
from __future__ import annotations

import re

import llvmlite.ir as ir
import numpy as np
import pytest

import gradtape as gt
from gradtape import codegen
from gradtape import ir as gir
from gradtape import runtime
from gradtape.codegen import lowering, steps
from gradtape.codegen.math_loops import _LoopId
from gradtape.codegen.shared_steps import StepTable
from gradtape.runtime import config as rt_config

PATTERN = (gt.sin, lambda u: u * 1.01, lambda u: u + 0.1, gt.tanh, lambda u: u * 0.9)


def _chain(k):
    def f(v):
        for i in range(k):
            v = PATTERN[i % len(PATTERN)](v)
        return gt.sum(v * v)

    return f


@pytest.fixture(autouse=True)
def _no_caches(monkeypatch):
    # Lowerings with and without sharing have one cache key: neither cache may serve the other.
    monkeypatch.setattr(rt_config, "disk_cache", False)
    runtime.clear_cache()
    yield
    runtime.clear_cache()


def _steps(text):
    defined = len(re.findall(r'define internal void @"f\.step\d+"', text))
    called = len(re.findall(r'call void @"f\.step\d+"', text))
    return defined, called


def _compiled(fn):
    runtime.clear_cache()
    compiled = runtime.compile_function(fn)
    assert compiled.native, compiled.fallback_reason
    return compiled


def _program(which, x):
    fn = gt.make_ir(_chain(60), x)
    if which == "value":  # its stored values take turns in two arena buffers: copies see them swapped
        return fn, lambda v: [v]
    joint, _ = gir.vjp(fn, [0])
    return joint, lambda v: [v, np.array(1.0)]


@pytest.mark.parametrize("threshold", ["MAX_INLINED_STEPS", "MAX_INLINED_INSTRUCTIONS"])
@pytest.mark.parametrize("which", ["value", "gradient"])
def test_equal_steps_are_defined_once_with_the_same_results(which, threshold, monkeypatch):
    x = np.linspace(-1.0, 1.0, 37)  # odd: the vector loops leave a scalar remainder
    fn, args = _program(which, x)
    monkeypatch.setattr(lowering, "MAX_INLINE_DEPTH", 4)
    monkeypatch.setattr(steps, "MAX_FUSED_FILLS", 1)
    monkeypatch.setattr(lowering, threshold, 0)

    defined, called = _steps(str(codegen.lower(fn, "f").module))
    assert called >= 12 and defined < called / 2  # 12 forward loops of the same 5 ops, among others
    shared = _compiled(fn)

    monkeypatch.setattr(lowering, "SHARE_EQUAL_STEPS", False)
    defined_apart, called_apart = _steps(str(codegen.lower(fn, "f").module))
    assert defined_apart == called_apart == called
    apart = _compiled(fn)

    # Two inputs in turn: a step called with its buffers swapped would read what the
    # previous call left in the scratch arena, which the second input tells apart.
    for v in (x, 0.5 - x):
        reference = gir.eval_function(fn, args(v))
        for s, a, r in zip(shared(*args(v)), apart(*args(v)), reference):
            np.testing.assert_array_equal(s, a)
            np.testing.assert_allclose(s, r, rtol=1e-12, atol=1e-300)


def test_small_functions_keep_their_steps_inline():
    x = np.linspace(-1.0, 1.0, 37)
    joint, _ = gir.vjp(gt.make_ir(_chain(60), x), [0])
    text = str(codegen.lower(joint, "f").module)
    assert "noinline" not in text.split("gradtape.math")[0]


def _copy_function(module, name, swap: bool, addend: float, hint=None) -> ir.Function:
    """dest[i] = src[i] + addend for i < 4, src and dest as arguments (0, 1), or (1, 0) if `swap`;
    `hint` = (name, value): a loop over i with that llvm.loop hint instead of straight code."""
    i8p = ir.IntType(8).as_pointer()
    f64p = ir.DoubleType().as_pointer()
    i64 = ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i8p, i8p]), name)
    fn.linkage = "internal"
    src, dest = fn.args[::-1] if swap else fn.args
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    s, d = b.bitcast(src, f64p), b.bitcast(dest, f64p)

    def body(at):
        value = b.fadd(b.load(b.gep(s, [at])), ir.Constant(ir.DoubleType(), addend))
        b.store(value, b.gep(d, [at]))

    if hint is None:
        for i in range(4):
            body(ir.Constant(i64, i))
    else:
        loop = fn.append_basic_block("loop")
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(i64)
        i.add_incoming(ir.Constant(i64, 0), entry)
        body(i)
        nxt = b.add(i, ir.Constant(i64, 1))
        i.add_incoming(nxt, loop)
        end = fn.append_basic_block("end")
        branch = b.cbranch(b.icmp_unsigned("<", nxt, ir.Constant(i64, 4)), loop, end)
        branch.set_metadata("llvm.loop", _LoopId(module, [module.add_metadata([hint[0], ir.IntType(32)(hint[1])])]))
        b.position_at_end(end)
    b.ret_void()
    return fn


def test_a_copy_with_its_arguments_in_another_order_calls_the_first_with_them_reordered():
    module = ir.Module()
    first = _copy_function(module, "a", swap=False, addend=1.0)
    again = _copy_function(module, "b", swap=True, addend=1.0)  # (dest, src)
    other = _copy_function(module, "c", swap=False, addend=2.0)  # another constant: not the same
    table = StepTable(module)
    assert table.share(first, ["SRC", "DEST"]) == (first, ["SRC", "DEST"])
    assert table.share(again, ["DEST2", "SRC2"]) == (first, ["SRC2", "DEST2"])
    assert "b" not in module.globals and table.shared == 1
    assert table.share(other, ["SRC3", "DEST3"]) == (other, ["SRC3", "DEST3"])
    text = str(module)
    assert '@"a"' in text and '@"c"' in text and '@"b"' not in text


def test_loops_are_the_same_when_their_hints_are_not_when_they_differ():
    module = ir.Module()
    width = ("llvm.loop.vectorize.width", 4)
    fns = [_copy_function(module, "a", False, 1.0, width),
           _copy_function(module, "b", False, 1.0, width),  # a loop ID of its own, the same hint
           _copy_function(module, "c", False, 1.0, ("llvm.loop.vectorize.width", 2)),
           _copy_function(module, "d", False, 1.0)]  # no loop at all
    entry = ir.Function(module, ir.FunctionType(ir.VoidType(), [fns[0].args[0].type] * 2), "entry")
    b = ir.IRBuilder(entry.append_basic_block())
    calls = [b.call(fn, list(entry.args)) for fn in fns]
    b.ret_void()
    assert StepTable(module).share_calls(calls) == 1
    assert [c.callee.name for c in calls] == ["a", "a", "c", "d"]
    assert "b" not in module.globals and "c" in module.globals


def test_a_dynamic_version_shares_steps_with_the_sizes_vector_first(monkeypatch):
    tables = []

    class Recorded(StepTable):
        def __init__(self, module):
            super().__init__(module)
            tables.append(self)

    monkeypatch.setattr(lowering, "StepTable", Recorded)
    monkeypatch.setattr(lowering, "MAX_INLINE_DEPTH", 4)
    monkeypatch.setattr(steps, "MAX_FUSED_FILLS", 1)
    monkeypatch.setattr(lowering, "MAX_INLINED_STEPS", 0)
    sizes = (40, 23, 64, 5)  # the second size compiles the dynamic version, which serves the rest
    dynamic, specialized = gt.grad(_chain(30)), gt.grad(_chain(30), dynamic=False)
    shared = [dynamic(np.linspace(-1.0, 1.0, n)) for n in sizes]
    assert dynamic.cache_info().compiles == 2
    assert any(t.shared for t in tables)

    monkeypatch.setattr(lowering, "SHARE_EQUAL_STEPS", False)
    apart = gt.grad(_chain(30))
    for n, got in zip(sizes, shared):
        x = np.linspace(-1.0, 1.0, n)
        np.testing.assert_array_equal(got, apart(x))
        # (a dynamic version's vector loops round a lane or two differently from a specialized one's)
        np.testing.assert_allclose(got, specialized(x), rtol=1e-13, atol=1e-300)
