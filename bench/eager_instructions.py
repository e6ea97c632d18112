"""Python's cost of one eager W4 step, in instructions: a count that does not drift
with a shared machine, for comparing versions of the recording hot path.

    python bench/eager_instructions.py          (needs valgrind)

Runs the eager training step (bench/training_step.py's `eager` loop) under
callgrind with the native call replaced by one returning a saved result, so
only Python is counted, and collects inside `map` only (the loop itself, not
imports or compiles). The difference between 300 and 100 steps, over 200,
is the cost per step: one-time work cancels out. Reports the forward pass
(recording) alone and the whole step (recording, tape.gradient, apply_gradients),
then one recorded `x[0]` and one recorded `x * y` (chains of 100 on a fresh
tape, as bench/eager_tape.py times them; per op).
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run_op(part: str, steps: int) -> None:
    """`steps` tapes each recording 100 of one op (x[0] or x * y), inside map()."""
    import numpy as np

    import gradtape as gt

    x, y = gt.constant(np.array([1.2, 0.7])), gt.constant(np.array([0.3, 0.4]))
    op = (lambda: x[0]) if part == "x[0]" else (lambda: x * y)

    def chain(_):
        with gt.GradientTape() as tape:
            tape.watch(x)
            for _ in range(100):
                op()

    for _ in range(20):
        chain(0)
    collections.deque(map(chain, range(steps)), maxlen=0)


def _run(part: str, steps: int) -> None:
    """The measured program: warm up, stub the native call, then `steps` steps inside map()."""
    if part in ("x[0]", "x * y"):
        _run_op(part, steps)
        return
    import gradtape as gt
    import workloads as W
    from gradtape.tracer import backward_cache

    X, y = W.logreg_data()
    w = gt.Variable(X[0] * 0.0, name="w")
    opt = gt.optimizers.SGD(0.1)

    def forward(_):
        with gt.GradientTape() as tape:
            loss = W.logreg_loss(w, X, y)
        return tape, loss

    def step(_):
        tape, loss = forward(0)
        opt.apply_gradients([(tape.gradient(loss, w), w)])

    def compiled_plan():
        return next((p for p in backward_cache._plans.values() if p._compiled is not None), None)

    for _ in range(200):  # the plan compiles after a few runs, in the background; a later step collects it
        step(0)
        gt.runtime.wait_for_compiles()
        if compiled_plan() is not None:
            break
    plan = compiled_plan()
    if plan is None:
        raise SystemExit("the tape's backward plan never compiled: nothing native to stub out")
    saved = plan._compiled(w.numpy(), X, y)
    plan._compiled = lambda *args: saved
    plan._entry = plan._compiled  # plans call the compiled entry point when they have one
    collections.deque(map(forward if part == "forward" else step, range(steps)), maxlen=0)


def _instructions(part: str, steps: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=map_next",
                        f"--callgrind-out-file={out}", sys.executable, __file__, "--child", part, str(steps)],
                       check=True, capture_output=True)
        with open(out) as f:
            totals = re.search(r"^totals:\s*(\d+)", f.read(), re.MULTILINE)
        return int(totals.group(1))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _run(sys.argv[2], int(sys.argv[3]))
        return
    if shutil.which("valgrind") is None:
        sys.exit("bench/eager_instructions.py needs valgrind (apt install valgrind)")
    for part in ("forward", "step"):
        per_step = (_instructions(part, 300) - _instructions(part, 100)) / 200
        print(f"eager W4 {part:8s} {per_step:10,.0f} Python instructions per step")
    per_op = {part: (_instructions(part, 30) - _instructions(part, 10)) / 2000 for part in ("x[0]", "x * y")}
    for part, n in per_op.items():
        print(f"recorded {part:8s} {n:10,.0f} instructions per op ({n / per_op['x * y']:.2f}x x * y)")


if __name__ == "__main__":
    main()
