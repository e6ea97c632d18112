"""Hand-built kernels compile to native code and give NumPy's answers, on every call path."""
from __future__ import annotations

import numpy as np
import pytest

from gradtape import codegen, ir, runtime
from gradtape.ir.ops import add, mul, sub
from gradtape.runtime import config

from .samples import add_fn, chain_fn, chain_reference, f64, function

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_elementwise_add_matches_numpy(handmade, dtype):
    cf = runtime.compile_function(add_fn((8,), dtype))
    a, b = (RNG.integers(-50, 50, size=8).astype(dtype) for _ in range(2))
    (c,) = cf(a, b)
    assert cf.native and cf.call_path == "fastcall" and cf.fallback_reason is None
    assert c.dtype == dtype and c.shape == (8,)
    np.testing.assert_array_equal(c, a + b)


def test_kernel_with_arena_external_symbol_and_two_outputs(handmade):
    cf = runtime.compile_function(chain_fn((3, 4)))
    assert cf.arena_bytes > 0  # mul and cos results are intermediates
    a, b = RNG.standard_normal((2, 3, 4))
    outs = cf(a, b)
    assert isinstance(outs, list) and len(outs) == 2
    for got, want in zip(outs, chain_reference(a, b)):
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    assert outs[0] is not outs[1]


def test_matches_reference_interpreter(handmade):
    fn = function(lambda a, b: mul(sub(a, b), add(a, b)), f64(5, 2), f64(5, 2))
    a, b = RNG.standard_normal((2, 5, 2))
    np.testing.assert_allclose(runtime.compile_function(fn)(a, b)[0], ir.eval_function(fn, [a, b])[0])


def test_outputs_are_fresh_every_call(handmade):
    cf = runtime.compile_function(add_fn())
    a = np.arange(8.0)
    first, second = cf(a, a)[0], cf(a, a)[0]
    assert first is not second and not np.shares_memory(first, second)
    assert first.flags.owndata and first.flags.writeable and first.flags.c_contiguous


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1, 1, 1, 1)])
def test_scalar_and_empty_shapes(handmade, shape):
    cf = runtime.compile_function(chain_fn(shape))
    a, b = np.full(shape, 0.5), np.full(shape, 2.0)
    for got, want in zip(cf(a, b), chain_reference(a, b)):
        assert got.shape == shape
        np.testing.assert_allclose(got, want)


def test_python_scalars_for_rank0_inputs(handmade):
    cf = runtime.compile_function(chain_fn(()))
    for got, want in zip(cf(0.5, 2.0), chain_reference(np.float64(0.5), np.float64(2.0))):
        np.testing.assert_allclose(got, want)


def test_ctypes_path_gives_the_same_answers(handmade, monkeypatch):
    monkeypatch.setattr(config, "fast_call", False)
    cf = runtime.compile_function(chain_fn((3, 4)))
    assert cf.native and cf.call_path == "ctypes"
    a, b = RNG.standard_normal((2, 3, 4))
    for got, want in zip(cf(a, b), chain_reference(a, b)):
        np.testing.assert_allclose(got, want, rtol=1e-15)
    out = [np.empty((3, 4)), np.empty((3, 4))]
    assert cf(a.T.copy().T, b, out=out) == out
    np.testing.assert_allclose(out[1], a + b)
    with pytest.raises(TypeError, match="argument 1 must be f64"):
        cf(a, b.astype(np.float32))


def test_gil_releasing_kernel_gives_the_same_answers(handmade, monkeypatch):
    monkeypatch.setattr(config, "release_gil_bytes", 0)  # every kernel releases the GIL
    cf = runtime.compile_function(chain_fn((3, 4)))
    assert cf._native.release_gil
    a, b = RNG.standard_normal((2, 3, 4))
    for got, want in zip(cf(a, b), chain_reference(a, b)):
        np.testing.assert_allclose(got, want, rtol=1e-15)
    out = [np.empty((3, 4)), np.empty((3, 4))]
    cf(a, b, out=out)
    np.testing.assert_allclose(out[0], np.cos(a * b) - a)


@pytest.mark.parametrize("worker_after", [0, -1])
def test_compile_stages_are_timed(handmade, monkeypatch, worker_after):
    monkeypatch.setattr(config, "llvm_worker_after", worker_after)
    cf = runtime.compile_function(add_fn())
    stages = {"lower", "ir_text", "parse", "optimize", "emit_object", "load", "entry"}
    if worker_after == 0:  # LLVM's stages in its worker process: the pipes' time, and the wait for its start
        stages.add("worker_transfer")
        assert set(cf.compile_stages) - stages <= {"worker_wait"}
        stages |= set(cf.compile_stages) & {"worker_wait"}
    assert set(cf.compile_stages) == stages
    assert all(s >= 0 for s in cf.compile_stages.values())
    assert cf.compile_seconds >= sum(cf.compile_stages.values()) * 0.99


@pytest.mark.parametrize("level", [0, 3])
def test_other_optimization_levels(handmade, monkeypatch, level):
    monkeypatch.setattr(config, "opt_level", level)
    cf = runtime.compile_function(chain_fn((2, 3)))
    a, b = RNG.standard_normal((2, 2, 3))
    np.testing.assert_allclose(cf(a, b)[0], np.cos(a * b) - a, rtol=1e-15)


@pytest.mark.parametrize("unroll", [False, True])
def test_loop_unrolling_setting_keeps_results(handmade, monkeypatch, unroll):
    monkeypatch.setattr(config, "loop_unrolling", unroll)
    cf = runtime.compile_function(chain_fn((5, 7)))  # short rows: fully unrolled when on
    assert cf.native
    a, b = RNG.standard_normal((2, 5, 7))
    np.testing.assert_allclose(cf(a, b)[0], np.cos(a * b) - a, rtol=1e-15)


# -- falling back to the interpreter ------------------------------------------------------


def test_unsupported_falls_back_to_interpreter(monkeypatch):
    def unsupported(fn, name="gradtape_fn"):
        raise codegen.Unsupported("no rule for 'add' (test)")

    monkeypatch.setattr(codegen, "lower", unsupported)
    cf = runtime.compile_function(chain_fn((3, 4)))
    assert not cf.native and cf.call_path == "interpreter"
    assert "no rule for 'add' (test)" in cf.fallback_reason
    a, b = RNG.standard_normal((2, 3, 4))
    for got, want in zip(cf(a, b), chain_reference(a, b)):
        np.testing.assert_allclose(got, want)
    assert runtime.cache_info()["fallbacks"] == 1


def test_missing_codegen_module_falls_back(monkeypatch):
    def absent(fn, name="gradtape_fn"):
        raise ModuleNotFoundError("No module named 'gradtape.codegen.lowering'", name="gradtape.codegen.lowering")

    monkeypatch.setattr(codegen, "lower", absent)
    cf = runtime.compile_function(add_fn())
    assert not cf.native and "not available" in cf.fallback_reason


def test_handmade_lowering_refuses_what_it_cannot_do(handmade):
    fn = function(lambda a: mul(a, 2.0), f64(3))  # a literal operand: not in the hand-made subset
    cf = runtime.compile_function(fn)
    assert not cf.native
    np.testing.assert_array_equal(cf(np.arange(3.0))[0], [0.0, 2.0, 4.0])


def test_interpreter_outputs_never_alias_inputs(monkeypatch):
    monkeypatch.setattr(codegen, "lower", _raise_unsupported)
    b = ir.Builder()
    x = b.input(f64(3))
    fn = b.build([x], [x, x])  # outputs are the input itself, twice
    cf = runtime.compile_function(fn)
    a = np.arange(3.0)
    o1, o2 = cf(a)
    o1[0] = 99.0
    assert a[0] == 0.0 and o2[0] == 0.0


def _raise_unsupported(fn, name="gradtape_fn"):
    raise codegen.Unsupported("test")


def test_compile_error_raises_when_asked(monkeypatch):
    def broken(fn, name="gradtape_fn"):
        raise ValueError("boom in codegen")

    monkeypatch.setattr(codegen, "lower", broken)
    with pytest.raises(runtime.CompileError, match="boom in codegen"):
        runtime.compile_function(add_fn())
    assert runtime.cache_info()["entries"] == 0 and runtime.cache_info()["errors"] == 1


def test_compile_error_warns_and_falls_back_by_default(monkeypatch):
    monkeypatch.setattr(config, "compile_errors", "warn")

    def broken(fn, name="gradtape_fn"):
        raise ValueError("boom in codegen")

    monkeypatch.setattr(codegen, "lower", broken)
    with pytest.warns(RuntimeWarning, match="boom in codegen"):
        cf = runtime.compile_function(add_fn())
    assert not cf.native
    np.testing.assert_array_equal(cf(np.ones(8), np.ones(8))[0], np.full(8, 2.0))


def test_llvm_rejecting_the_ir_is_a_compile_error(handmade, monkeypatch):
    from . import handmade_lowering

    def bad_ir(fn, name="gradtape_fn"):
        lowered = handmade_lowering.lower(fn, name)
        lowered.module = _module_calling_undeclared(name)
        return lowered

    monkeypatch.setattr(codegen, "lower", bad_ir)
    with pytest.raises(runtime.CompileError, match="cannot resolve: gradtape_test_nowhere"):
        runtime.compile_function(add_fn())


def _module_calling_undeclared(name):
    """A kernel calling a symbol nobody registered: must be an error, not a crash in finalize."""
    from llvmlite import ir as llir

    mod = llir.Module()
    p = llir.IntType(8).as_pointer().as_pointer()
    k = llir.Function(mod, llir.FunctionType(llir.VoidType(), [p]), name)
    ext = llir.Function(mod, llir.FunctionType(llir.VoidType(), []), "gradtape_test_nowhere")
    b = llir.IRBuilder(k.append_basic_block())
    b.call(ext, [])
    b.ret_void()
    return mod


def test_wrong_lowered_signature_is_a_compile_error(handmade, monkeypatch):
    from . import handmade_lowering

    def mislabeled(fn, name="gradtape_fn"):
        lowered = handmade_lowering.lower(fn, name)
        lowered.out_types = (f64(1),)
        return lowered

    monkeypatch.setattr(codegen, "lower", mislabeled)
    with pytest.raises(runtime.CompileError, match="returned types"):
        runtime.compile_function(add_fn())


# -- symbols the kernel needs ---------------------------------------------------------------


def _powi_exp_kernel(fn, name="gradtape_fn"):
    """out = powi(a, int(b)) + exp(a): `exp` comes from the process (libm), and `llvm.powi`
    becomes a call to compiler-rt's __powidf2 only during instruction selection."""
    from llvmlite import ir as llir

    from . import handmade_lowering

    lowered = handmade_lowering.lower(fn, name)
    mod = llir.Module()
    f64t, i32, i64 = llir.DoubleType(), llir.IntType(32), llir.IntType(64)
    pp = llir.IntType(8).as_pointer().as_pointer()
    k = llir.Function(mod, llir.FunctionType(llir.VoidType(), [pp]), name)
    powi = llir.Function(mod, llir.FunctionType(f64t, [f64t, i32]), "llvm.powi.f64.i32")
    exp = llir.Function(mod, llir.FunctionType(f64t, [f64t]), "exp")
    b = llir.IRBuilder(k.append_basic_block())
    a, e, out = (b.bitcast(b.load(b.gep(k.args[0], [llir.Constant(i64, j)])), f64t.as_pointer()) for j in range(3))
    for i in range(fn.in_types[0].size):  # unrolled by hand: a few elements
        idx = [llir.Constant(i64, i)]
        x = b.load(b.gep(a, idx))
        y = b.fadd(b.call(powi, [x, b.fptosi(b.load(b.gep(e, idx)), i32)]), b.call(exp, [x]))
        b.store(y, b.gep(out, idx))
    b.ret_void()
    lowered.module = mod
    return lowered


def test_symbols_from_the_process_and_compiler_runtime_resolve(monkeypatch):
    monkeypatch.setattr(codegen, "lower", _powi_exp_kernel)
    cf = runtime.compile_function(add_fn((4,)))
    assert cf.native
    a, n = np.array([1.5, -2.0, 0.5, 3.0]), np.array([2.0, 3.0, -1.0, 0.0])
    np.testing.assert_allclose(cf(a, n)[0], a ** n + np.exp(a), rtol=1e-15)


def test_object_symbol_table_lists_what_the_machine_code_calls(monkeypatch):
    from gradtape.runtime import elf

    monkeypatch.setattr(codegen, "lower", _powi_exp_kernel)
    cf = runtime.compile_function(add_fn((4,)))
    undefined = set(elf.undefined_symbols(cf._native.code.object_bytes))
    assert {"exp", "__powidf2"} <= undefined and "llvm.powi.f64.i32" not in undefined
    assert elf.undefined_symbols(b"not an object") is None


def test_dump_prints_each_stage(handmade, monkeypatch, capsys):
    monkeypatch.setattr(config, "dump", frozenset({"llvm", "opt", "asm"}))
    runtime.compile_function(add_fn())
    err = capsys.readouterr().err
    for stage in ("llvm", "opt", "asm"):
        assert f"; ---- gradtape {stage}: gradtape_kernel_" in err
    assert "define void @gradtape_kernel_" in err


def test_a_big_arena_alone_makes_a_kernel_release_the_gil(handmade, monkeypatch):
    # chain_fn((3, 4)): inputs and outputs hold 4 x 96 bytes, the arena 2 x 128.
    monkeypatch.setattr(config, "release_gil_bytes", 500)
    cf = runtime.compile_function(chain_fn((3, 4)))
    assert cf.arena_bytes == 256 and cf._native.release_gil
    a, b = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(cf(a, b)[0], np.cos(a * b) - a, rtol=1e-15)


def test_all_kernels_share_one_pair_of_entry_points(handmade):
    from gradtape.runtime import fastcall

    one, two = runtime.compile_function(add_fn((2,))), runtime.compile_function(chain_fn((2, 2)))
    shared = fastcall._wrapper_addresses()["code"]
    assert one.entry.__self__ is not two.entry.__self__  # each has its own spec
    assert runtime.compile_function(add_fn((3,))) and fastcall._wrapper_addresses()["code"] is shared
    spec = one.entry.__self__
    assert spec.dtype == np.int64 and not spec.flags.writeable
    assert spec[0] == one._native.kernel_address and list(spec[1:3]) == [2, 1]
