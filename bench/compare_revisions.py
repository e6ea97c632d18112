"""Run benchmarks of two checkouts of gradtape side by side, alternating, in one run.

    python bench/compare_revisions.py BEFORE_DIR AFTER_DIR [--rounds 3] [--bench training_step.py ...]

Each checkout is a directory holding a gradtape/ package (a `git worktree`
of another revision, with its C extension built by
`python setup.py build_ext --inplace`). Every benchmark script runs in
BEFORE, then in AFTER, `--rounds` times over, so a machine that gets busier
or quieter in the meantime affects both alike. The scripts report each
speed as a ratio to hand-written NumPy measured in the same process, which
is what to compare between the two columns; the raw output of every run is
printed, labelled.

The default benchmarks are the ones that guard the hot paths: the training
step (bench/training_step.py), one eager op (bench/eager_op_overhead.py)
and the transforms (bench/transform_workloads.py).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

DEFAULT = ["training_step.py --runs 1", "eager_op_overhead.py", "transform_workloads.py"]


def run(checkout: str, bench: str) -> str:
    script, *args = bench.split()
    env = dict(os.environ, PYTHONPATH=checkout)  # the checkout's gradtape, not the installed one
    path = os.path.join(checkout, "bench", script)
    done = subprocess.run([sys.executable, path, *args], cwd=checkout, env=env, capture_output=True, text=True)
    return done.stdout + (f"\n[exit {done.returncode}]\n{done.stderr[-2000:]}" if done.returncode else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bench", action="append", help="script and arguments, e.g. 'training_step.py --runs 1'")
    args = parser.parse_args(argv)
    for bench in args.bench or DEFAULT:
        for r in range(args.rounds):
            for label, checkout in (("before", args.before), ("after", args.after)):
                print(f"===== {bench} | round {r + 1} | {label}: {checkout}", flush=True)
                print(run(checkout, bench), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
