"""Make docs/images/graph_rosenbrock.png, graph_mlp.png and graph_mlp_adjoint.png: `inspect --graph
out.html` pages as headless Chromium shows them (docs/inspect_graph.md).

    python tools/graph_screenshots.py            # needs `chromium` (Debian: apt-get install chromium)

Each page is opened with a URL fragment that picks the tab, opens a kernel and selects a box (the page
reads #panel=...&expand=...&select=...), so the picture shows what a click would. The screenshot is
then reduced to a 256-colour palette with Pillow (matplotlib's dependency): the pages are flat colours,
and the docs' images stay small.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gradtape import cli  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples")
SHOTS = [
    # (image, inspect's arguments, fragment, window)
    ("graph_rosenbrock.png", ["gradtape.demo:rosenbrock", "--shape", "x=1000"],
     "panel=adjoint&select=e", "1500,760"),
    ("graph_mlp.png", [f"{EXAMPLES}/losses.py:mlp_loss"], "panel=traced&select=bf", "1800,1200"),
    ("graph_mlp_adjoint.png", [f"{EXAMPLES}/losses.py:mlp_loss"], "panel=adjoint&expand=k42&search=tanh",
     "1800,1200"),
]


def mlp_shapes() -> list:
    sys.path.insert(0, EXAMPLES)
    import losses

    return [a for s in losses.MLP_SHAPES for a in ("--shape", s)]


def main():
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("needs chromium (Debian: apt-get install chromium)")
    from PIL import Image

    with tempfile.TemporaryDirectory() as tmp:
        for image, args, fragment, window in SHOTS:
            page = os.path.join(tmp, image.replace(".png", ".html"))  # (the MLP's page is written twice: cheap)
            extra = mlp_shapes() if "mlp_loss" in args[0] else []
            with open(os.devnull, "w") as quiet:
                stdout, sys.stdout = sys.stdout, quiet
                try:
                    assert cli.main(["inspect", *args, *extra, "--graph", page]) == 0
                finally:
                    sys.stdout = stdout
            shot = os.path.join(tmp, image)
            subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            f"--user-data-dir={tmp}/profile", f"--window-size={window}",
                            "--virtual-time-budget=5000", f"--screenshot={shot}", f"file://{page}#{fragment}"],
                           check=True, capture_output=True)
            out = os.path.join(ROOT, "docs", "images", image)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            Image.open(shot).convert("RGB").quantize(256).save(out, optimize=True)
            print(f"{os.path.relpath(out, ROOT)}: {os.path.getsize(out) // 1024} KB")


if __name__ == "__main__":
    main()
