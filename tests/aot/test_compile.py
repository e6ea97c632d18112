"""gradtape.compile: one signature compiled ahead of time, called without tracing; save and load."""
from __future__ import annotations

import os

import numpy as np
import pytest

import gradtape as gt
from gradtape import runtime
from gradtape.runtime import entry_file

from .losses import data, loss, loss_grads_np, loss_np

W, X = data()
SPECS = (gt.ShapeDtype(W.shape), gt.ShapeDtype(X.shape))


@pytest.fixture(scope="module")
def value_and_grad():
    return gt.compile(gt.value_and_grad(loss, argnums=(0, 1)), *SPECS)


def test_value_and_grad_matches_numpy(value_and_grad):
    value, (dw, dx) = value_and_grad(W, X)
    assert value == pytest.approx(loss_np(W, X), rel=1e-13)
    want_dw, want_dx = loss_grads_np(W, X)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-12, atol=1e-14)
    assert value_and_grad.native and value_and_grad.fn is not None
    assert value_and_grad.signature() == "(f64[4,3], f64[5,4]) -> (f64[], f64[4,3], f64[5,4])"


def test_a_call_does_not_trace():
    staged = gt.grad(loss)
    compiled = gt.compile(staged, W, X)  # example arrays instead of specs
    traces = staged.cache_info().traces
    for seed in range(3):
        w, x = data(seed)
        np.testing.assert_allclose(compiled(w, x), loss_grads_np(w, x)[0], rtol=1e-12, atol=1e-14)
    assert staged.cache_info().traces == traces == 1


def test_a_plain_function_is_compiled_as_differentiable():
    compiled = gt.compile(loss, *SPECS)
    assert compiled.transform == "differentiable" and compiled.arg_names == ["w", "x"]
    assert compiled(W, X) == pytest.approx(loss_np(W, X), rel=1e-13)


def test_arguments_are_converted_or_refused(value_and_grad):
    value, _ = value_and_grad(np.asfortranarray(W), X.tolist())  # other layouts, nested lists
    assert value == pytest.approx(loss_np(W, X), rel=1e-13)
    with pytest.raises(runtime.ArgumentError, match=r"argument 0 must be f64\[4,3\]"):
        value_and_grad(np.ones((3, 3)), X)
    with pytest.raises(runtime.ArgumentError, match="float64"):
        value_and_grad(W.astype(np.float32), X)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        value_and_grad(W)


def test_nested_arguments_and_results():
    def f(params, x):
        return {"y": gt.tanh(x @ params["w"]) + params["b"], "norm": gt.sum(params["w"] ** 2)}

    params = {"w": gt.ShapeDtype((4, 3)), "b": gt.ShapeDtype((3,))}
    compiled = gt.compile(f, params, gt.ShapeDtype((5, 4)))
    b = np.arange(3.0)
    out = compiled({"w": W, "b": b}, X)
    np.testing.assert_allclose(out["y"], np.tanh(X @ W) + b, rtol=1e-13)
    assert out["norm"] == pytest.approx(np.sum(W**2))
    with pytest.raises(TypeError, match="must have the structure"):
        compiled([W, b], X)


def test_static_arguments_are_compiled_in():
    def scaled(x, power):
        return gt.sum(x**power)

    compiled = gt.compile(scaled, gt.ShapeDtype((4,)), 3, static_argnums=(1,))
    x = np.array([1.0, 2.0, -1.0, 0.5])
    assert compiled(x) == pytest.approx(np.sum(x**3))
    with pytest.raises(TypeError, match="static arguments are compiled in"):
        compiled(x, 3)


def test_float32_and_scalar_specs():
    def f(x, s):
        return gt.sum(gt.exp(x) * s)

    compiled = gt.compile(gt.value_and_grad(f), gt.ShapeDtype((6,), "float32"), gt.ShapeDtype(()))
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    value, grad = compiled(x, 2.0)
    assert grad.dtype == np.float32
    np.testing.assert_allclose(grad, 2 * np.exp(x), rtol=1e-6)
    assert value == pytest.approx(2 * np.sum(np.exp(x.astype(np.float64))), rel=1e-6)


def test_shape_dtype():
    assert gt.ShapeDtype(3) == gt.ShapeDtype((3,), np.float64)
    assert repr(gt.ShapeDtype((2, 3), "float32")) == "ShapeDtype((2, 3), 'float32')"
    with pytest.raises(ValueError, match="negative"):
        gt.ShapeDtype((2, -1))
    with pytest.raises(TypeError, match="tuple of ints"):
        gt.ShapeDtype("abc")


def test_other_staged_transforms_compile_too():
    jacobian = gt.compile(gt.jacobian(lambda x: gt.sin(x) * x), gt.ShapeDtype((3,)))
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(jacobian(x), np.diag(np.cos(x) * x + np.sin(x)), rtol=1e-14, atol=1e-15)
    assert jacobian.transform == "jacobian"


# --- save and load in this process ------------------------------------------------------

def test_save_and_load_round_trip(value_and_grad, tmp_path):
    path = tmp_path / "vg.gtc"
    value_and_grad.save(path)
    loaded = gt.load(path)
    assert loaded.fn is None and loaded.signature() == value_and_grad.signature()
    assert loaded.arg_names == ["w", "x"] and "contract" in loaded.ir
    w, x = data(5)
    got, want = loaded(w, x), value_and_grad(w, x)
    assert got[0] == want[0]
    for a, b in zip(got[1], want[1]):
        np.testing.assert_array_equal(a, b)
    assert isinstance(got[1], tuple)


def test_loaded_results_keep_their_structure(tmp_path):
    def f(x):
        return {"a": x * 2.0, "b": [gt.sum(x), x + 1.0]}

    compiled = gt.compile(f, gt.ShapeDtype((3,)))
    compiled.save(tmp_path / "f.gtc")
    out = gt.load(tmp_path / "f.gtc")(np.arange(3.0))
    assert sorted(out) == ["a", "b"] and isinstance(out["b"], list)
    np.testing.assert_array_equal(out["b"][1], [1.0, 2.0, 3.0])


def _rewrite(path, change_meta=None, header=None):
    with open(path, "rb") as f:
        data_ = f.read()
    if header is not None:
        data_ = header(data_)
    else:
        meta, payload = entry_file.decode(data_)
        change_meta(meta)
        data_ = entry_file.encode(meta, payload)
    with open(path, "wb") as f:
        f.write(data_)


@pytest.fixture
def saved(value_and_grad, tmp_path):
    path = tmp_path / "vg.gtc"
    value_and_grad.save(path)
    return path


def test_a_file_for_another_cpu_is_refused(saved):
    _rewrite(saved, lambda meta: meta["built_for"].update(cpu="cortex-a72", features="+neon"))
    with pytest.raises(gt.aot.AotError) as info:
        gt.load(saved)
    text = str(info.value)
    assert "built for another machine or version" in text and "cpu: cortex-a72 in the file" in text
    assert "features: the file has +neon" in text and "gradtape.compile(f, *args).save(path)" in text


def test_a_file_for_another_version_is_refused(saved):
    _rewrite(saved, lambda meta: meta["built_for"].update(llvm="9.0.0", codegen=-1))
    with pytest.raises(gt.aot.AotError, match=r"llvm: 9.0.0 in the file, .* here; codegen: -1 in the file"):
        gt.load(saved)


def test_a_file_of_another_format_version_is_refused(saved):
    _rewrite(saved, header=lambda d: d[:8] + (99).to_bytes(4, "little") + d[12:])
    with pytest.raises(gt.aot.AotError, match="file format version 99; this gradtape reads version 1"):
        gt.load(saved)


@pytest.mark.parametrize("damage, message", [
    (lambda d: d[:-10], "truncated"),
    (lambda d: d[:-5] + bytes([d[-5] ^ 1]) + d[-4:], "corrupted"),
    (lambda d: b"NOTGRADT" + d[8:], "not a gradtape file"),
])
def test_a_damaged_file_is_refused(saved, damage, message):
    _rewrite(saved, header=damage)
    with pytest.raises(gt.aot.AotError, match=message):
        gt.load(saved)


def test_a_cache_entry_is_not_a_saved_function(tmp_path):
    entry = entry_file.encode({"kind": "kernel", "built_for": entry_file.machine()}, b"")
    (tmp_path / "e.gtc").write_bytes(entry)
    with pytest.raises(gt.aot.AotError, match="not a saved compiled function"):
        gt.load(tmp_path / "e.gtc")


def test_an_interpreted_function_cannot_be_saved(tmp_path):
    compiled = gt.compile(lambda x: gt.sum(x * x), gt.ShapeDtype((3,), "float16"))  # float16: not compiled
    assert not compiled.native
    assert compiled(np.ones(3, np.float16)) == 3.0
    with pytest.raises(gt.aot.AotError, match="runs in the reference interpreter"):
        compiled.save(tmp_path / "f.gtc")
    assert not os.path.exists(tmp_path / "f.gtc")
