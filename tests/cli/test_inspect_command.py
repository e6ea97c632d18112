"""`python -m gradtape inspect`: the IR of each stage with its time, and the graphs as SVG or PNG."""
from __future__ import annotations

import contextlib
import io
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import gradtape as gt
from gradtape import cli
from gradtape.cli.graph import drawable, kernels_of
from gradtape.cli.targets import load_function
from gradtape.codegen.fusion import plan_storage

from ..aot.losses import data, loss

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOSSES = os.path.join(ROOT, "tests", "aot", "losses.py")
SHAPES = ["--shape", "w=4,3", "--shape", "x=5,4"]
SVG = "{http://www.w3.org/2000/svg}"


def inspect(capsys, *extra) -> str:
    assert cli.main(["inspect", f"{LOSSES}:loss", *SHAPES, *extra]) == 0
    return capsys.readouterr().out


def sections(text: str) -> dict:
    """{title line: body} of the `== title` sections."""
    parts = re.split(r"^== (.*)$", text, flags=re.M)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts), 2)}


def section(text: str, start: str) -> tuple:
    [(title, body)] = [(t, b) for t, b in sections(text).items() if t.startswith(start)]
    return title, body


@pytest.fixture(scope="module")
def svg_run(tmp_path_factory):
    """inspect's output and the SVG it drew, shared by the tests that read them."""
    path = tmp_path_factory.mktemp("graph") / "loss.svg"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["inspect", f"{LOSSES}:loss", *SHAPES, "--graph", str(path)]) == 0
    return out.getvalue(), ET.parse(path).getroot()


def test_each_stage_is_printed_with_its_time(svg_run):
    text, _ = svg_run
    titles = list(sections(text))
    assert [t.split(" (")[0] for t in titles] == ["traced IR", "adjoint IR", "optimized IR", "time per stage"]
    _, traced = section(text, "traced IR")
    assert traced == gt.make_ir(loss, *data()).pretty()  # the tracer's own text of the same function
    title, adjoint = section(text, "adjoint IR")
    assert re.match(r"adjoint IR \(adjoint [\d.]+ ms, \d+ equations\)", title)
    assert adjoint.startswith("{ a:f64[4,3] b:f64[5,4] .")
    _, times = section(text, "time per stage")
    times, wrote = times.split("\n\n")
    assert wrote.startswith("wrote ") and wrote.endswith("loss.svg")
    stages = [line.split()[0] for line in times.splitlines()]
    assert stages[:3] == ["trace", "adjoint", "optimize"]
    assert {"lower", "parse", "emit_object", "load", "total"} <= set(stages)
    assert all(float(line.split()[-1]) >= 0 for line in times.splitlines())


def test_the_optimized_ir_is_what_value_and_grad_compiles(svg_run):
    text, _ = svg_run
    _, optimized = section(text, "optimized IR")
    # the printed program computes loss and its gradient: run it with the reference interpreter
    from gradtape.cli.stages import run_stages

    run = run_stages(loss, [gt.ShapeDtype((4, 3)), gt.ShapeDtype((5, 4))], build=False)
    assert run.optimized.pretty() == optimized
    w, x = data()
    value, dw, dx = gt.ir.eval_function(run.optimized, [w, x])
    vg = gt.value_and_grad(loss, argnums=(0, 1))
    want_value, (want_dw, want_dx) = vg(w, x)
    assert value == pytest.approx(want_value, rel=1e-13)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-12)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-12)


def _panel(root, name):
    [panel] = [g for g in root.iter(f"{SVG}g") if g.get("id") == f"panel-{name}"]
    return panel


def _groups(panel, cls):
    return [g for g in panel.iter(f"{SVG}g") if cls in (g.get("class") or "").split()]


def test_the_svg_has_one_node_per_equation_and_one_box_per_kernel(svg_run):
    text, root = svg_run
    traced = gt.make_ir(loss, *data())
    from gradtape.cli.stages import run_stages

    run = run_stages(loss, [gt.ShapeDtype((4, 3)), gt.ShapeDtype((5, 4))], build=False)
    for name, fn in (("traced", traced), ("adjoint", run.adjoint), ("optimized", run.optimized)):
        panel = _panel(root, name)
        eqns = _groups(panel, "eqn")
        assert len(eqns) == len(drawable(fn).eqns) == len(fn.eqns)
        titles = [g.find(f"{SVG}title").text for g in eqns]
        printed = fn.pretty().splitlines()[1:-1]
        assert [t.splitlines()[0].strip() for t in titles] == [line.strip() for line in printed]  # in order
        # ... and the user's line that traced it (the adjoint's own: the line whose derivative it is)
        assert all(re.fullmatch(r"at losses\.py:\d+( \(derivative\))?", t.splitlines()[1]) for t in titles)
        labels = [g.find(f"{SVG}text").text for g in eqns]
        assert labels == [_var_op(line) for line in printed]  # "c = contract": the printed line's name and op
        assert len(_groups(panel, "input")) == len(fn.invars)
        kernels = _groups(panel, "kernel")
        assert len(kernels) == len(plan_storage(drawable(fn)))  # a box per stored value: the kernels
        assert len(panel.findall(f"{SVG}path")) >= len(fn.eqns) - 1  # the data flow
    assert _panel(root, "traced").find(f"{SVG}text").text.startswith(f"traced ({len(traced.eqns)} equations")


def _var_op(line: str) -> str:
    var, rest = line.strip().split(" = ", 1)
    return f"{var.split(':')[0]} = {re.match(r'[a-z_0-9]+', rest).group()}"


def test_every_node_sits_inside_its_kernels_box(svg_run):
    _, root = svg_run
    panel = _panel(root, "adjoint")
    boxes = {}
    for k in _groups(panel, "kernel"):
        r = k.find(f"{SVG}rect")
        boxes[k.get("id")] = tuple(float(r.get(a)) for a in ("x", "y", "width", "height"))
    inside = 0
    for node in _groups(panel, "eqn"):
        r = node.find(f"{SVG}rect")
        x, y = float(r.get("x")), float(r.get("y"))
        containing = [b for b in boxes.values() if b[0] <= x <= b[0] + b[2] and b[1] <= y <= b[1] + b[3]]
        assert len(containing) == 1  # kernel boxes never overlap
        inside += 1
    assert inside == len(_groups(panel, "eqn"))


def test_fused_values_belong_to_the_kernels_that_read_them():
    fn = drawable(gt.make_ir(lambda x: gt.sum(gt.exp(x) * x) + gt.max(x), np.ones(5)))
    kernels = kernels_of(fn)
    exp_eqn = next(e for e in fn.eqns if e.op.name == "exp")
    reduce_sum = next(e for e in fn.eqns if e.op.name == "reduce_sum")
    assert kernels[exp_eqn.out] == [reduce_sum.out]  # exp is computed inside the sum's loop
    assert kernels[reduce_sum.out] == [reduce_sum.out]


def test_png(tmp_path, capsys):
    path = tmp_path / "loss.png"
    inspect(capsys, "--graph", str(path), "--forward")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    image = matplotlib.image.imread(path)
    assert image.shape[0] > 200 and image.shape[1] > 300
    assert (image[..., :3] < 0.5).any() and (image[..., :3] > 0.9).any()  # drawn on: not a blank page


def test_forward_and_llvm(capsys):
    text = inspect(capsys, "--forward", "--llvm")
    titles = [t.split(" (")[0] for t in sections(text)]
    assert titles == ["traced IR", "optimized IR", "LLVM IR", "time per stage"]
    _, llvm = section(text, "LLVM IR")
    assert 'define void @"loss_kernel"(i8**' in llvm


def test_a_vector_output_gets_cotangent_inputs(capsys):
    path = os.path.join(ROOT, "tests", "cli", "vector_fn.py")
    assert cli.main(["inspect", f"{path}:scaled_tanh", "--shape", "x=3"]) == 0
    _, adjoint = section(capsys.readouterr().out, "adjoint IR")
    assert adjoint.startswith("{ a:f64[3] b:f64[3] .")  # x, then the cotangent of the output


def test_argnums_and_its_errors(capsys):
    text = inspect(capsys, "--argnums", "1")
    assert "adjoint w.r.t. argument 1" in text.splitlines()[0]
    assert cli.main(["inspect", f"{LOSSES}:loss", *SHAPES, "--argnums", "4"]) == 2
    assert "no float argument there" in capsys.readouterr().err
    assert cli.main(["inspect", f"{LOSSES}:loss", *SHAPES, "--graph", "x.pdf"]) == 2
    assert ".html, .svg or .png" in capsys.readouterr().err


def test_a_large_svg_draws_each_kernel_as_one_box(tmp_path, capsys):
    # The MLP of docs/inspect_graph.md: 61 traced equations drawn one by one, its adjoint's 194 as kernels.
    mlp = os.path.join(ROOT, "examples", "losses.py")
    shapes = load_function(f"{mlp}:mlp_loss").__globals__["MLP_SHAPES"]
    path = tmp_path / "mlp.svg"
    assert cli.main(["inspect", f"{mlp}:mlp_loss", *[a for s in shapes for a in ("--shape", s)],
                     "--graph", str(path)]) == 0
    root = ET.parse(path).getroot()
    assert len(_groups(_panel(root, "traced"), "eqn")) == 61 and not _groups(_panel(root, "traced"), "collapsed")
    adjoint = _panel(root, "adjoint")
    boxes, eqns = _groups(adjoint, "collapsed"), _groups(adjoint, "eqn")
    inside = sum(len(g.find(f"{SVG}title").text.splitlines()) - 1 for g in boxes)  # the last line: "at ..."
    assert len(eqns) + inside == 194 and len(eqns) + len(boxes) < 194 / 2  # each equation once, in fewer boxes
    assert "collapsed" in adjoint.find(f"{SVG}text").text
    for g in boxes:  # each box holds its equations' text, the last one named on the box
        lines = g.find(f"{SVG}title").text.splitlines()
        assert len(lines) >= 3 and lines[-1].startswith("at losses.py:")
        assert g.find(f"{SVG}text").text.split(" = ")[0] == lines[-2].split(":")[0]
