"""`inspect --graph out.html` in a real browser: headless Chromium opens the page, runs its script, opens a
kernel (through the URL fragment, as a click would), and we read what it drew from the DOM it dumps and
from a screenshot. Skips only where no `chromium` is installed (CI installs it: .ci/run)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from gradtape import cli
from gradtape.cli.graph import drawable, kernels_of
from gradtape.cli.stages import run_stages
from gradtape.cli.targets import load_function, parse_shape

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MLP = os.path.join(ROOT, "examples", "losses.py")  # mlp_loss: 61 traced equations, as in docs/inspect_graph.md
LOSSES = os.path.join(ROOT, "tests", "aot", "losses.py")
SHAPES = load_function(f"{MLP}:mlp_loss").__globals__["MLP_SHAPES"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install chromium)")


def chromium(tmp_path, url: str, *mode) -> subprocess.CompletedProcess:
    # --virtual-time-budget: the page's script has run (and the page settled) before the dump or the shot
    argv = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1600,1000", "--virtual-time-budget=5000",
            *mode, url]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)


def state(tmp_path, page, fragment: str = "") -> tuple:
    """The body's data-* attributes after the script ran, and the dumped DOM."""
    dom = chromium(tmp_path, f"file://{page}#{fragment}", "--dump-dom").stdout
    body = re.search(r"<body([^>]*)>", dom).group(1)
    attrs = {k: v for k, v in re.findall(r'data-([a-z]+)="([^"]*)"', body)}
    return attrs, dom


@pytest.fixture(scope="module")
def mlp_page(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "mlp.html"
    argv = ["inspect", f"{MLP}:mlp_loss"] + [a for s in SHAPES for a in ("--shape", s)] + ["--graph", str(path)]
    assert cli.main(argv) == 0
    run = run_stages(load_function(f"{MLP}:mlp_loss"), [parse_shape(s, None)[1] for s in SHAPES], build=False)
    return path, run


def test_the_page_is_one_self_contained_file(mlp_page):
    path, _ = mlp_page
    html = path.read_text()
    assert html.startswith("<!DOCTYPE html>") and "</html>" in html
    # no network: nothing is loaded from anywhere (the SVG namespace is a name, not a request)
    assert not re.search(r"""(src|href)=["'](https?:)?//""", html)
    assert not re.search(r"""(fetch|XMLHttpRequest|import)\(""", html)


@needs_chromium
def test_open_a_kernel_in_headless_chromium(mlp_page, tmp_path):
    path, run = mlp_page
    adjoint = drawable(run.adjoint)
    inputs = len(adjoint.invars)
    membership = kernels_of(adjoint)
    sizes: dict = {}
    for e in adjoint.eqns:
        sizes[membership[e.out][0]] = sizes.get(membership[e.out][0], 0) + 1
    fused = [n for n in sizes.values() if n > 1]
    # The 61-equation traced program opens with every kernel open: a box per equation and argument.
    traced, dom = state(tmp_path, path)
    assert traced["ready"] == "1" and traced["panel"] == "traced"
    assert int(traced["equations"]) == len(run.traced.eqns) == 61
    assert int(traced["nodes"]) == 61 + len(run.traced.invars) == len(re.findall(r'<g class="node ', dom))
    # The adjoint (194 equations) opens with its kernels closed: one box per fused kernel.
    closed, dom = state(tmp_path, path, "panel=adjoint")
    assert int(closed["equations"]) == len(adjoint.eqns) > 80
    assert int(closed["boxes"]) == len(fused) == len(re.findall(r'<g class="box', dom))
    assert int(closed["nodes"]) == inputs + len(sizes) - len(fused)
    # Open one kernel: its box becomes a group with one box per equation.
    kernel = re.search(r'<g class="box[^"]*" id="(k\d+)"', dom).group(1)
    opened, dom = state(tmp_path, path, f"panel=adjoint&expand={kernel}")
    assert int(opened["open"]) == 1 and int(opened["boxes"]) == len(fused) - 1
    assert f'id="group-{kernel}"' in dom
    members = int(opened["nodes"]) - int(closed["nodes"])
    assert members >= 2 and f"{members} equations" in dom
    # All open: every equation drawn; the search box finds a variable and an op.
    everything, _ = state(tmp_path, path, "panel=adjoint&expand=all&search=tanh")
    assert int(everything["nodes"]) == len(adjoint.eqns) + inputs and int(everything["boxes"]) == 0
    assert int(everything["matches"]) == sum(e.op.name == "tanh" for e in adjoint.eqns) == 3


@needs_chromium
def test_screenshot(tmp_path, capsys):
    page = tmp_path / "loss.html"
    assert cli.main(["inspect", f"{LOSSES}:loss", "--shape", "w=4,3", "--shape", "x=5,4", "--graph", str(page)]) == 0
    shot = tmp_path / "loss.png"
    chromium(tmp_path, f"file://{page}#panel=adjoint&expand=all", f"--screenshot={shot}")
    import matplotlib.image

    image = matplotlib.image.imread(shot)
    assert image.shape[:2] == (1000, 1600)
    drawn = image[60:, :1200, :3]  # the picture, below the header and left of the details pane
    assert (drawn < 0.5).any() and (drawn > 0.9).any()  # text and boxes on a white page
    yellow = (abs(drawn - [0.992, 0.949, 0.816]) < 0.03).all(axis=-1)  # the argument boxes' #fdf2d0
    assert yellow.sum() > 500
