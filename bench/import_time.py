"""`import gradtape` against `import numpy`: best of N fresh processes each, interleaved.

Each process runs `python -X importtime -c "import <module>"` and the
figure is the module's cumulative import time as -X importtime reports it
(the interpreter's own start-up and `site` are not in it). The ratio's base
is `import numpy` alone, best of the same rounds (gradtape imports NumPy,
so the ratio says what gradtape costs against NumPy's own import on this
machine at this load). Target (issue 24.7): gradtape at most 0.4 s where
NumPy takes 0.1 s, a ratio of 4.

Modules load from cached bytecode, as in an installed package (the cache
is kept under the temp directory and written by an untimed first run).
`--tree MS` also prints, from gradtape's fastest run, every module whose
cumulative import took at least MS milliseconds, indented as imported.

    python bench/import_time.py [--runs 5] [--tree 5]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def _env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "gradtape-bench-pycache")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    return env


def import_profile(module: str) -> list:
    """[(cumulative seconds, depth, name)] of one fresh `import module`, in -X importtime's order."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], cwd=ROOT,
                         env=_env(), capture_output=True, text=True, check=True).stderr
    rows = []
    for line in out.splitlines():
        m = _LINE.match(line)
        if m:
            rows.append((int(m[2]) / 1e6, len(m[3]) // 2, m[4]))
    return rows


def total(rows: list, module: str) -> float:
    """`module`'s cumulative import time in `rows` (its outermost import)."""
    return -min((depth, -seconds) for seconds, depth, name in rows if name == module)[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=float, metavar="MS", help="print gradtape's import tree down to MS ms")
    args = parser.parse_args(argv)
    sys.path.insert(0, HERE)
    from _quiet import wait_quiet

    import_profile("gradtape")  # untimed: writes the bytecode cache
    busy = wait_quiet()
    best = {"numpy": (float("inf"), []), "gradtape": (float("inf"), [])}
    for _ in range(args.runs):
        for module in best:
            rows = import_profile(module)
            seconds = total(rows, module)
            if seconds < best[module][0]:
                best[module] = (seconds, rows)
    numpy_s, gradtape_s = best["numpy"][0], best["gradtape"][0]
    print(f"best of {args.runs} fresh processes each (CPUs {busy:.0%} busy before)")
    print(f"  import numpy     {numpy_s * 1e3:7.1f} ms")
    print(f"  import gradtape  {gradtape_s * 1e3:7.1f} ms  ({gradtape_s / numpy_s:.2f}x numpy; "
          f"target: 0.4 s at numpy's 0.1 s, i.e. <= 4x)")
    if args.tree is not None:
        print(f"\ngradtape's fastest import, modules of {args.tree:g} ms or more (cumulative ms):")
        for seconds, depth, name in best["gradtape"][1]:
            if seconds * 1e3 >= args.tree:
                print(f"  {seconds * 1e3:7.1f}  {'  ' * depth}{name}")


if __name__ == "__main__":
    main()
