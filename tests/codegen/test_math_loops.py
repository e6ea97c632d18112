"""Loop hints for chains of math calls (gradtape.codegen.math_loops) and the
AVX-512 libmvec functions they let the vectorizer call.

What the hints are is asked of the target (codegen.cpu), never assumed of
this machine; the numbers are checked against NumPy (the gradient of the
chain written out by hand) and against libm-quality references in ULPs, at
sizes that leave remainders after the widest interleaved vector body.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from llvmlite import ir

import gradtape as gt
from gradtape import ir as gt_ir, runtime
from gradtape.codegen import cpu, math_loops
from gradtape.codegen.lowering import lower_function
from gradtape.codegen.math import MATH_LIBRARIES, emit_math
from gradtape.ir import all_ops

from . import isa
from .loop_kernel import jit_loop, loop_module
from .test_math import DTYPES, IR_TYPES, ULP_BOUND, numpy_fn, sample, ulp_error

HAS_LIBMVEC = bool(MATH_LIBRARIES)


def chain(x, ops=12):
    """W7's chain (bench/workloads.py), shorter: sin, * 1.01, + 0.1, tanh, repeated."""
    for i in range(ops):
        k = i % 4
        x = gt.sin(x) if k == 0 else x * 1.01 if k == 1 else x + 0.1 if k == 2 else gt.tanh(x)
    return gt.sum(x)


def chain_grad_numpy(x, ops=12):
    """The same gradient by hand: forward values kept, then the chain rule backwards."""
    values = []
    for i in range(ops):
        k = i % 4
        values.append(x)
        x = np.sin(x) if k == 0 else x * 1.01 if k == 1 else x + 0.1 if k == 2 else np.tanh(x)
    g = np.ones_like(x)
    for i in reversed(range(ops)):
        k, u = i % 4, values[i]
        g = g * np.cos(u) if k == 0 else g * 1.01 if k == 1 else g if k == 2 else g * (1 - np.tanh(u) ** 2)
    return g


def loop_hints(text: str) -> list:
    """[{hint name: value}] of every `llvm.loop` node in a module's text."""
    nodes = dict(re.findall(r"^(!\d+) = (.*)$", text, re.M))
    out = []
    for ref in re.findall(r"!llvm\.loop (!\d+)", text):
        members = re.findall(r"!\d+", nodes[ref])
        assert members[0] == ref and nodes[ref].startswith("distinct"), f"not a loop ID: {nodes[ref]}"
        out.append({name: int(v) if v else True for m in members[1:]
                    for name, v in re.findall(r'!"([\w.]+)"(?:, i32 (\d+))?', nodes[m])})
    return out


def lanes(dtype) -> int:
    return math_loops.vector_bits() // (8 * np.dtype(dtype).itemsize)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_chain_of_math_calls_gets_interleaved_vectors_of_the_widest_registers(dtype):
    lowered = lower_function(gt.make_ir(gt.grad(chain), np.ones(256, dtype)), "f")
    hints = loop_hints(str(lowered.module))
    assert len(hints) == 1, hints
    assert hints[0]["llvm.loop.interleave.count"] == math_loops.INTERLEAVE
    if cpu.current().is_x86 and HAS_LIBMVEC:  # sin and cos have vector functions of every width here
        assert hints[0]["llvm.loop.vectorize.width"] == lanes(dtype)


def test_a_loop_with_one_polynomial_call_keeps_llvms_choice():
    lowered = lower_function(gt.make_ir(lambda x: gt.tanh(x) * 2.0 + x, np.ones(256)), "f")
    assert loop_hints(str(lowered.module)) == []


def test_a_loop_with_one_libmvec_call_gets_the_width_of_its_only_vector_function():
    """Its call site offers one width (math_libmvec.py); below it the helper would run lane by lane."""
    lowered = lower_function(gt.make_ir(lambda x: gt.sin(x) * 2.0 + x, np.ones(256)), "f")
    hints = loop_hints(str(lowered.module))
    if cpu.current().is_x86 and HAS_LIBMVEC:
        assert hints == [{"llvm.loop.vectorize.width": lanes(np.float64), "llvm.loop.unroll.disable": True}]
    else:
        assert hints == []


@pytest.mark.skipif(math_loops.vector_bits() == 0, reason="vector widths are known for x86-64 targets only")
def test_a_loop_shorter_than_the_vector_gets_no_hint_and_one_shorter_than_two_gets_no_interleave():
    width = lanes(np.float64)
    if width > 2:  # a loop of width - 1 iterations (fewer would leave no loop to hint)
        few = lower_function(gt.make_ir(gt.grad(chain), np.ones(width - 1)), "f")
        assert loop_hints(str(few.module)) == []
    between = lower_function(gt.make_ir(gt.grad(chain), np.ones(width + 1)), "f")
    hints = loop_hints(str(between.module))
    assert len(hints) == 1 and "llvm.loop.interleave.count" not in hints[0], hints


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 3, 7, 8, 17, 33, 256, 1001])
def test_hinted_chain_gradient_matches_numpy(n, dtype):
    """Remainders of every size after the hinted vector body (up to 2 x 16 lanes) included."""
    x = np.random.default_rng(n).uniform(-1, 1, n).astype(dtype)
    got = gt.grad(chain)(x)
    gt.runtime.wait_for_compiles()
    got_compiled = gt.grad(chain)(x)
    want = chain_grad_numpy(x.astype(np.float64))
    rtol = 1e-12 if dtype == np.float64 else 3e-5
    for g in (got, got_compiled):
        np.testing.assert_allclose(g, want.astype(dtype), rtol=rtol, atol=rtol)


def test_the_loop_id_is_valid_llvm():
    """The distinct, self-referencing node parses (a wrong one is an LLVM error, not a lost hint)."""
    import llvmlite.binding as llvm

    module = lower_function(gt.make_ir(gt.grad(chain), np.ones(64)), "f").module
    llvm.parse_assembly(str(module)).verify()


@pytest.mark.skipif(not HAS_LIBMVEC, reason="libmvec not available")
@pytest.mark.parametrize("name", ["sin", "cos", "tan", "arctan", "exp2"])
@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_libmvec_at_the_hinted_width_is_as_accurate(name, dtype, monkeypatch):
    """The widest variants (AVX-512's `_ZGVe` on such a target) through the hint, against NumPy in ULPs."""
    monkeypatch.setattr(math_loops, "MIN_MATH_CALLS", 1)
    module = loop_module(IR_TYPES[dtype](), 1, lambda b, xs: emit_math(b, all_ops[name], xs[0]))
    assert math_loops.hint_math_loops(module) == 1
    fn, _, asm = jit_loop(module, 1)
    variant = isa.libmvec_variant_prefix(dtype)
    assert variant in asm, f"{name} {dtype}: no call to {variant}*"
    (x,) = sample(name, dtype)
    out = np.empty_like(x)
    fn(out.ctypes.data, x.ctypes.data, x.size)
    with np.errstate(all="ignore"):
        ref = numpy_fn(name)(x.astype(np.float64))
    err = ulp_error(out, ref, DTYPES[dtype])
    worst = int(np.argmax(err))
    assert err[worst] <= ULP_BOUND[name, dtype], f"{name} {dtype}: {err[worst]:.2f} ULP at x={x[worst]!r}"


def test_hints_need_a_vector_function_of_that_width(monkeypatch):
    """A call the vectorizer could only scalarize at the widest width keeps LLVM's width."""
    monkeypatch.setattr(math_loops, "MIN_MATH_CALLS", 1)
    module = loop_module(ir.DoubleType(), 1, lambda b, xs: emit_math(b, all_ops["sin"], xs[0]))
    call = next(i for i in module.get_global("kernel").blocks[1].instructions if isinstance(i, ir.CallInstr))
    call.attributes = type(call.attributes)()  # as if libmvec had no variant at all
    call.callee.attributes.discard("alwaysinline")
    math_loops.hint_math_loops(module)
    hints = loop_hints(str(module))
    assert hints and "llvm.loop.vectorize.width" not in hints[0]


def test_a_loop_of_more_math_calls_than_the_cap_keeps_the_width_but_is_not_interleaved(monkeypatch):
    """Interleaving the largest bodies costs LLVM's backend more than linearly (math_loops.MAX_INTERLEAVED_CALLS)."""
    monkeypatch.setattr(math_loops, "MAX_INTERLEAVED_CALLS", 3)  # chain(12 ops)'s gradient calls 9
    hints = loop_hints(str(lower_function(gt.make_ir(gt.grad(chain), np.ones(256)), "f").module))
    assert len(hints) == 1 and "llvm.loop.interleave.count" not in hints[0], hints
    if cpu.current().is_x86 and HAS_LIBMVEC:
        assert hints[0]["llvm.loop.vectorize.width"] == lanes(np.float64)


def _arctan_mask(x0, x1, x2):
    """Fuzz seed 965, reduced: vmap of its gradient is a 2 x 2 loop nest of float32 arctan."""
    v0 = gt.arctan(x1)
    v5 = gt.where(gt.logical_and(v0 > 1.0, v0 >= 0.0), v0 * v0, v0)
    return gt.sum(v5 * np.array([-1.0, 1.5], np.float32))


def test_a_loop_too_short_for_the_vector_functions_compiles_without_their_mapping():
    """LLVM unrolls it, and its SLP vectorizer aborted on calls naming vector functions."""
    args = [np.ones((2, 1), np.float32), np.array([[3.67, 0.41], [0.3, 1.2]], np.float32),
            np.ones((2, 2, 3, 3), np.float32)]
    fn = gt.make_ir(gt.vmap(gt.grad(_arctan_mask, argnums=(0, 1, 2))), *args)
    compiled = runtime.compile_function(fn)
    assert compiled.native, compiled.fallback_reason
    for got, want in zip(compiled(*args), gt_ir.eval_function(fn, args)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    text = str(lower_function(fn, "f").module)
    assert "gradtape.math.arctan" in text and "vector-function-abi-variant" not in text


def test_a_long_loop_keeps_the_mapping():
    text = str(lower_function(gt.make_ir(lambda x: gt.arctan(x) * 2.0, np.ones(64, np.float32)), "f").module)
    assert ("vector-function-abi-variant" in text) == (cpu.current().is_x86 and HAS_LIBMVEC)


def test_a_loop_of_libmvec_calls_with_a_remainder_is_not_unrolled_and_compiles():
    """Fuzz seed 6748: cos over 6 values, 4 at a time; LLVM unrolled the 2-iteration remainder
    and its SLP vectorizer aborted on the two calls. Unrolling is off for such loops.

    The case is one vector of the target's widest plus 2 values (6 on AVX2): with a fixed 6,
    an AVX-512 target's 8-lane cos is never reached, the call rightly loses its mapping
    and the loop gets no hint at all (math_loops.py), so there is nothing to check."""
    n = lanes(np.float64) + 2
    x = np.linspace(-2.0, 2.0, n).reshape(n // 2, 2)
    fn = gt.make_ir(lambda x: gt.cos(x), x)
    compiled = runtime.compile_function(fn)
    assert compiled.native, compiled.fallback_reason
    np.testing.assert_allclose(compiled(x)[0], np.cos(x), rtol=4e-16)
    hints = loop_hints(str(lower_function(fn, "f").module))
    if cpu.current().is_x86 and HAS_LIBMVEC:
        assert hints and all("llvm.loop.unroll.disable" in h for h in hints), hints
