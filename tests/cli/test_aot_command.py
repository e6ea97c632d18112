"""`python -m gradtape aot`: a C library (and a saved function) from the command line."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import gradtape as gt
from gradtape import cli

from ..aot.losses import data, loss_grads_np, loss_np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOSSES = os.path.join(ROOT, "tests", "aot", "losses.py")

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")


def test_python_dash_m_gradtape_aot(tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "gradtape", "aot", f"{LOSSES}:loss", "--shape", "w=4,3", "--shape", "x=5,4",
           "--value-and-grad", "--argnums", "0,1", "-o", str(out / "libl.so"), "--save", str(out / "l.gtc")]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr
    assert "wrote out/libl.so and out/l.h: l(...)" in proc.stdout
    header = (out / "l.h").read_text()
    assert "int l(const double *w, const double *x, double *out0, double *out1, double *out2);" in header
    assert (out / "libl.so").stat().st_size > 0
    value, (dw, dx) = gt.load(out / "l.gtc")(*data())
    assert value == pytest.approx(loss_np(*data()), rel=1e-13)
    want_dw, want_dx = loss_grads_np(*data())
    np.testing.assert_allclose(dw, want_dw, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-12, atol=1e-14)


def test_grad_with_a_name_and_a_header_path(tmp_path, capsys):
    code = cli.main(["aot", f"{LOSSES}:loss", "--shape", "4,3", "--shape", "5,4:float32", "--grad", "--argnums", "1",
                     "-o", str(tmp_path / "libthing.so"), "--name", "dloss_dx", "--header", str(tmp_path / "d.h")])
    assert code == 0
    header = (tmp_path / "d.h").read_text()
    # unnamed --shape: the Python parameter names; x float32 (so w is promoted: the product is f64)
    assert "int dloss_dx(const double *w, const float *x, float *out);" in header
    assert "grad(loss)" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["aot", "nosuchmodule_gradtape:f", "--shape", "3", "-o", "x.so"], "cannot import 'nosuchmodule_gradtape'"),
    (["aot", f"{LOSSES}:nothing", "--shape", "3", "-o", "x.so"], "has no attribute 'nothing'"),
    (["aot", f"{LOSSES}", "--shape", "3", "-o", "x.so"], "expected module:function"),
    (["aot", f"{LOSSES}:loss", "--shape", "w=3,a", "-o", "x.so"], "write \\[name=\\]d0,d1"),
    (["aot", f"{LOSSES}:loss", "-o", "x.so"], "give one --shape per argument"),
])
def test_usage_errors_exit_2_with_the_fix(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    assert re.search(message, capsys.readouterr().err)
