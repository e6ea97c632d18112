"""Control flow through gt.compile (saved and loaded in a new process), the disk
cache, and export_c (a C program runs the loops as native code)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir, runtime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
W = np.array([0.9, -0.4, 0.3])
XS = np.random.default_rng(7).normal(size=(6, 3)) * 0.5


def loss(w, xs):
    """A scan (RNN), a cond on its result and a data-dependent while loop: every construct."""
    last, hs = gt.scan(lambda h, x: (gt.tanh(h * w + x), h), gt.zeros_like(w), xs)
    y = gt.cond(gt.sum(last) > 0, lambda v: v * v, lambda v: -v, last)
    grown = gt.while_loop(lambda v: gt.sum(v * v) < 9.0, lambda v: v * 1.5 + 0.1 * gt.sin(v), y + 0.5)
    return gt.sum(grown) + gt.sum(hs * hs)


def loss_np(w, xs):
    h, hs = np.zeros_like(w), []
    for x in xs:
        hs.append(h)
        h = np.tanh(h * w + x)
    y = h * h if np.sum(h) > 0 else -h
    v = y + 0.5
    while np.sum(v * v) < 9.0:
        v = v * 1.5 + 0.1 * np.sin(v)
    return np.sum(v) + np.sum(np.array(hs) ** 2)


def fd_grad(w, xs, eps=1e-6):
    g = np.zeros_like(w)
    for i in range(len(w)):
        e = np.zeros_like(w)
        e[i] = eps
        g[i] = (loss_np(w + e, xs) - loss_np(w - e, xs)) / (2 * eps)
    return g


@pytest.fixture(scope="module")
def compiled():
    return gt.compile(gt.value_and_grad(loss), gt.ShapeDtype((3,)), gt.ShapeDtype((6, 3)))


def test_compiled_ahead_with_native_loops(compiled):
    assert compiled.native
    value, grad = compiled(W, XS)
    np.testing.assert_allclose(value, loss_np(W, XS), rtol=1e-12)
    np.testing.assert_allclose(grad, fd_grad(W, XS), rtol=1e-6)
    np.testing.assert_allclose(grad, gt.grad(loss)(W, XS), rtol=1e-13)


def test_saved_and_loaded_in_a_new_process(compiled, tmp_path):
    compiled.save(tmp_path / "loss.gtc")
    np.savez(tmp_path / "data.npz", w=W, xs=XS)
    child = textwrap.dedent('''
        import sys, numpy as np, gradtape as gt
        f = gt.load(sys.argv[1]); d = np.load(sys.argv[2])
        value, grad = f(d["w"], d["xs"])
        assert f.native
        np.save(sys.argv[3], np.concatenate([[value], grad]))
    ''')
    run = subprocess.run([sys.executable, "-c", child, str(tmp_path / "loss.gtc"), str(tmp_path / "data.npz"),
                          str(tmp_path / "out.npy")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert run.returncode == 0, run.stderr
    out = np.load(tmp_path / "out.npy")
    value, grad = compiled(W, XS)
    np.testing.assert_array_equal(out, np.concatenate([[value], grad]))


def test_the_disk_cache_serves_the_loops_to_a_new_process():
    fn, _ = ir.vjp(gt.make_ir(loss, W, XS), [0])
    args = [W, XS, np.float64(1.0)]
    first = runtime.compile_function(fn)
    assert first.native
    runtime.clear_cache()  # forget what is in memory (and zero the counters): the next compile finds only the disk
    again = runtime.compile_function(fn)
    assert runtime.cache_info()["disk_loads"] == 1  # (the first may have been a load too, in a full run)
    for a, b, c in zip(again(*args), first(*args), ir.eval_function(fn, args)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=1e-12)


MAIN = textwrap.dedent('''
    #include <stdio.h>
    #include "loss.h"
    static double w[3], xs[6 * 3], value, grad[3];
    int main(int argc, char **argv) {
        FILE *in = fopen(argv[1], "rb");
        if (!in || fread(w, sizeof w, 1, in) != 1 || fread(xs, sizeof xs, 1, in) != 1) return 2;
        fclose(in);
        for (int i = 0; i < 3; i++) { if (loss(w, xs, &value, grad) != 0) return 3; }  /* the stack is freed */
        FILE *out = fopen(argv[2], "wb");
        fwrite(&value, sizeof value, 1, out); fwrite(grad, sizeof grad, 1, out);
        fclose(out);
        return 0;
    }
''')


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
def test_a_c_program_runs_the_loops_natively(compiled, tmp_path):
    result = gt.export_c(compiled, tmp_path / "libloss.so", header=tmp_path / "loss.h")
    (tmp_path / "main.c").write_text(MAIN)
    build = subprocess.run(["cc", "-std=c11", "main.c", f"-I{tmp_path}", f"-L{tmp_path}", "-lloss",
                            f"-Wl,-rpath,{tmp_path}", "-o", "main"], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    (tmp_path / "in.bin").write_bytes(W.tobytes() + XS.tobytes())
    run = subprocess.run(["./main", "in.bin", "out.bin"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    out = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype=np.float64)
    value, grad = compiled(W, XS)
    assert out[0] == pytest.approx(value, rel=1e-13)
    np.testing.assert_allclose(out[1:], grad, rtol=1e-12)
    np.testing.assert_allclose(out[1:], fd_grad(W, XS), rtol=1e-6)
    assert result.function == "loss"


def test_vmap_of_cond_and_switch_without_operands():
    pick = gt.vmap(lambda p: gt.cond(p > 0, lambda: np.array([1.0, 2.0]), lambda: np.array([-1.0, 0.5])))
    np.testing.assert_array_equal(pick(np.array([1.0, -2.0, 3.0])), [[1.0, 2.0], [-1.0, 0.5], [1.0, 2.0]])
    table = gt.vmap(lambda i: gt.switch(i, [lambda: 1.0, lambda: 2.0, lambda: 3.0]))
    np.testing.assert_array_equal(table(np.array([0, 5, -1, 1])), [1.0, 3.0, 1.0, 2.0])   # clamped
