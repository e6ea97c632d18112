"""export_c: a C program compiled with the system compiler against the exported library gets
gradtape's value and gradient."""
from __future__ import annotations

import os
import shutil
import subprocess
import textwrap

import numpy as np
import pytest

import gradtape as gt

from .losses import data, loss, loss_grads_np, loss_np

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")

# 30 x 30 products: big enough that the JIT calls BLAS for them, which the library must not.
W, X = data(1, m=30, k=30, n=30)

MAIN = textwrap.dedent('''
    #include <stdio.h>
    #include <stdlib.h>
    #include "loss.h"

    /* Reads the inputs from argv[1], writes the outputs of both entry points to argv[2]. */
    static double w[30 * 30], x[30 * 30], value, dw[30 * 30], dx[30 * 30];
    static double value2, dw2[30 * 30], dx2[30 * 30];

    int main(int argc, char **argv) {
        FILE *in = fopen(argv[1], "rb");
        if (!in || fread(w, sizeof w, 1, in) != 1 || fread(x, sizeof x, 1, in) != 1) return 2;
        fclose(in);
        if (loss(w, x, &value, dw, dx) != 0) return 3;
        void *workspace = aligned_alloc(LOSS_WORKSPACE_ALIGNMENT, (loss_workspace_bytes() + 63) / 64 * 64 + 64);
        if (loss_with_workspace(w, x, &value2, dw2, dx2, workspace) != 0) return 4;
        free(workspace);
        FILE *out = fopen(argv[2], "wb");
        fwrite(&value, sizeof value, 1, out); fwrite(dw, sizeof dw, 1, out); fwrite(dx, sizeof dx, 1, out);
        fwrite(&value2, sizeof value2, 1, out); fwrite(dw2, sizeof dw2, 1, out); fwrite(dx2, sizeof dx2, 1, out);
        fclose(out);
        printf("workspace %zu\\n", loss_workspace_bytes());
        return 0;
    }
''')


@pytest.fixture(scope="module")
def compiled():
    return gt.compile(gt.value_and_grad(loss, argnums=(0, 1)), gt.ShapeDtype(W.shape), gt.ShapeDtype(X.shape))


@pytest.fixture(scope="module")
def exported(compiled, tmp_path_factory):
    where = tmp_path_factory.mktemp("export")
    result = gt.export_c(compiled, where / "libloss.so", header=where / "include" / "loss.h")
    return where, result


def test_the_library_and_header_are_written(exported):
    where, result = exported
    assert result.library == str(where / "libloss.so") and result.header == str(where / "include" / "loss.h")
    assert result.function == "loss" and result.workspace_bytes >= 0
    header = open(result.header).read()
    assert "int loss(const double *w, const double *x, double *out0, double *out1, double *out2);" in header
    assert "int loss_with_workspace(" in header and "size_t loss_workspace_bytes(void);" in header
    assert f"#define LOSS_WORKSPACE_BYTES {result.workspace_bytes}" in header
    assert "C-contiguous (row-major)" in header and "may be\n *   called from any number of threads" in header
    assert "[30][30]" in header and "result[1][0]" in header


def test_the_library_needs_nothing_of_python_numpy_or_blas(compiled, exported):
    assert any("cblas" in s for s in compiled._compiled._native.symbols)  # the JIT's code calls BLAS
    where, result = exported
    if shutil.which("ldd"):
        needed = subprocess.run(["ldd", result.library], capture_output=True, text=True).stdout
        assert "python" not in needed and "openblas" not in needed.lower() and "numpy" not in needed
    if shutil.which("nm"):
        undefined = subprocess.run(["nm", "-D", "--undefined-only", result.library], capture_output=True,
                                   text=True).stdout
        assert "cblas" not in undefined and "Py" not in undefined


def test_a_c_program_gets_gradtapes_value_and_gradient(compiled, exported, tmp_path):
    where, result = exported
    (tmp_path / "main.c").write_text(MAIN)
    include = os.path.dirname(result.header)
    build = subprocess.run(
        ["cc", "-std=c11", "-O1", "main.c", f"-I{include}", f"-L{where}", "-lloss", f"-Wl,-rpath,{where}", "-o", "main"],
        cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    (tmp_path / "in.bin").write_bytes(W.tobytes() + X.tobytes())
    run = subprocess.run(["./main", "in.bin", "out.bin"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"workspace {result.workspace_bytes}"
    out = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype=np.float64)
    n = W.size
    first, second = out[: 1 + 2 * n], out[1 + 2 * n :]
    np.testing.assert_array_equal(first, second)  # both entry points run the same code
    value, dw, dx = first[0], first[1 : 1 + n].reshape(W.shape), first[1 + n :].reshape(X.shape)

    py_value, (py_dw, py_dx) = compiled(W, X)  # gradtape in Python (BLAS for the products)
    assert value == pytest.approx(py_value, rel=1e-12)
    np.testing.assert_allclose(dw, py_dw, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(dx, py_dx, rtol=1e-11, atol=1e-13)
    want_dw, want_dx = loss_grads_np(W, X)  # and an independent reference
    assert value == pytest.approx(loss_np(W, X), rel=1e-12)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-11, atol=1e-13)


def test_float32_and_the_default_names(tmp_path):
    def energy(x):
        return gt.sum(gt.exp(x) * x)

    compiled = gt.compile(gt.grad(energy), gt.ShapeDtype((7,), "float32"))
    result = gt.export_c(compiled, tmp_path / "libenergy.so")
    assert result.function == "energy" and result.header == str(tmp_path / "energy.h")
    header = open(result.header).read()
    assert "int energy(const float *x, float *out);" in header
    (tmp_path / "main.c").write_text(textwrap.dedent('''
        #include <stdio.h>
        #include "energy.h"
        int main(void) {
            float x[7], g[7];
            for (int i = 0; i < 7; i++) x[i] = (float)(i - 3) / 4;
            if (energy(x, g)) return 1;
            for (int i = 0; i < 7; i++) printf("%.9g\\n", g[i]);
            return 0;
        }
    '''))
    build = subprocess.run(["cc", "-std=c11", "main.c", f"-I{tmp_path}", f"-L{tmp_path}", "-lenergy",
                            f"-Wl,-rpath,{tmp_path}", "-o", "main"], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run(["./main"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    got = np.array(run.stdout.split(), dtype=np.float32)
    x = (np.arange(7, dtype=np.float32) - 3) / 4
    np.testing.assert_allclose(got, compiled(x), rtol=2e-6)
    np.testing.assert_allclose(got, np.exp(x) * (1 + x), rtol=2e-6)


def test_a_loaded_function_cannot_be_exported(compiled, tmp_path):
    compiled.save(tmp_path / "f.gtc")
    with pytest.raises(gt.aot.AotError, match="loaded from a file"):
        gt.export_c(gt.load(tmp_path / "f.gtc"), tmp_path / "libf.so")


def test_without_a_c_compiler_the_error_says_so(compiled, tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "no-such-compiler-gradtape")
    with pytest.raises(gt.aot.AotError, match="no C compiler found"):
        gt.export_c(compiled, tmp_path / "libf.so")
