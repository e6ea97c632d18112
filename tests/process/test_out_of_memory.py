"""Running out of memory in compiled code raises MemoryError and the process goes on.

Each test runs a child process under a memory limit (RLIMIT_AS: the address
space it has when the limit is set, plus a margin) after compiling what it
needs, so that only the calls being tested can meet the limit.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gradtape as gt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")

LIMIT = textwrap.dedent('''
    import resource

    def limit_memory(margin):
        """Address space from now on: what the process maps already, plus `margin` bytes."""
        size = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize"))
        resource.setrlimit(resource.RLIMIT_AS, (size + margin, resource.RLIM_INFINITY))
''')


def _run(child: str, *args, timeout=300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT, "GRADTAPE_ASYNC_COMPILE": "0", "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", LIMIT + textwrap.dedent(child), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def _lines(run) -> dict:
    assert run.returncode == 0, f"child died ({run.returncode}):\n{run.stdout}\n{run.stderr[-3000:]}"
    return dict(line.split(" ", 1) for line in run.stdout.splitlines())


# --- point 9: reverse mode through while_loop, whose stack of carries cannot grow --------------

WHILE_CHILD = '''
    import numpy as np
    import gradtape as gt

    def body(c):
        v, k = c
        return v * 0.998 + 0.0005 * (v * v) + 0.0015, k + 1   # 1 stays 1, at a rate 0.999

    def f(x, n):
        v, k = gt.while_loop(lambda c: c[1] < n, body, (x, 0))
        return gt.sum(v)

    g = gt.grad(f)
    staged = gt.differentiable(f)
    # value and gradient of a loss reading the loop's value: one loop pushes, the gradient pops
    paired = gt.value_and_grad(lambda x, n: gt.sum(gt.while_loop(lambda c: c[1] < n, body, (x, 0))[0] ** 2))
    x = np.ones(64)                                   # a step keeps its 64 floats (the derivative reads v): 512 bytes

    def on_tape(x, n):
        xt = gt.constant(x)
        with gt.GradientTape() as tape:
            tape.watch(xt)
            y = staged(xt, gt.constant(n))             # (a Python int would be baked into the plan)
        return tape.gradient(y, xt).numpy()

    g(x, 10)
    paired(x, 10)
    for _ in range(5):                                # a tape's backward plan is compiled at its 5th run
        on_tape(x, 10)
    limit_memory(300 << 20)
    for name, grad in (("grad", g), ("tape", on_tape), ("paired", paired)):
        try:
            grad(x, 4_000_000)                        # 2 GB of residuals
            print(name, "no error")
        except MemoryError as e:
            print(name, e)
    print("after", *g(x, 1000)[:3], *on_tape(x, 1000)[:3])
    print("long", *g(x, 100_000)[:3])                 # 51 MB of residuals: under the limit
    print("paired_after", *paired(x, 1000)[1][:3])
'''


def test_a_while_loop_stack_that_cannot_grow_raises_memory_error_and_the_process_goes_on():
    out = _lines(_run(WHILE_CHILD))
    for name in ("grad", "tape", "paired"):
        m = re.fullmatch(r"while_loop: out of memory after ([\d,]+) iterations: reverse mode keeps "
                         r"values of every iteration for the backward pass \(([\d,]+) bytes held; growing it to "
                         r"([\d,]+) bytes failed\); bound the number of iterations, make the carry smaller, or "
                         r"differentiate in forward mode \(gt\.jvp\), which keeps no stack", out[name])
        assert m, out[name]
        steps, held, asked = (int(g.replace(",", "")) for g in m.groups())
        # Blocks of 16, 32, 64, ... frames of 512 bytes: full at 16 (2^j - 1) steps, the next block 16 2^j frames.
        blocks = steps // 16 + 1
        assert steps >= 16 and steps % 16 == 0 and blocks & (blocks - 1) == 0
        assert held == steps * 512 and asked == held + (steps + 16) * 512
        assert held < 300 << 20  # what the stack held fit under the limit
    # d x_n / d x_0 = 0.999^n for each element: x stays at the fixed point 1, where f' = 0.998 + 0.001 x
    np.testing.assert_allclose([float(v) for v in out["after"].split()], [0.999 ** 1000] * 6, rtol=1e-12)
    np.testing.assert_allclose([float(v) for v in out["long"].split()], [0.999 ** 100_000] * 3, rtol=1e-9)
    # d sum(x_n^2) / d x_0 = 2 x_n 0.999^n, x_n = 1
    np.testing.assert_allclose([float(v) for v in out["paired_after"].split()], [2 * 0.999 ** 1000] * 3, rtol=1e-12)


def _exported_while_grad(tmp_path):
    def f(x, n):
        return gt.sum(gt.while_loop(lambda c: c[1] < n, lambda c: (c[0] * 0.998 + 0.0005 * (c[0] * c[0]) + 0.0015,
                                                                   c[1] + 1), (x, 0))[0])
    g = gt.compile(gt.grad(f), gt.ShapeDtype((64,)), gt.ShapeDtype((), np.int64))
    return gt.export_c(g, tmp_path / "libwgrad.so", header=tmp_path / "wgrad.h")


C_MAIN = textwrap.dedent('''
    #include <stdio.h>
    #include <stdint.h>
    #include <sys/resource.h>
    #include "wgrad.h"
    static double x[64], grad[64];
    int main(void) {
        for (int i = 0; i < 64; i++) x[i] = 1.0;
        struct rlimit r = {200 << 20, RLIM_INFINITY};
        if (setrlimit(RLIMIT_AS, &r) != 0) return 2;
        int64_t n = 4000000;                        /* 2 GB of residuals */
        int failed = wgrad(x, &n, grad);
        n = 1000;
        int again = wgrad(x, &n, grad);
        printf("%d %d %.17g %.17g\\n", failed, again, grad[0], grad[63]);
        return 0;
    }
''')


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
def test_an_exported_library_returns_minus_one_when_the_stack_cannot_grow(tmp_path):
    result = _exported_while_grad(tmp_path)
    header = " ".join(open(result.header).read().replace("*", " ").split())
    assert "When it cannot grow they free it and return -1" in header
    (tmp_path / "main.c").write_text(C_MAIN)
    build = subprocess.run(["cc", "-std=c11", "main.c", f"-I{tmp_path}", f"-L{tmp_path}", "-lwgrad",
                            f"-Wl,-rpath,{tmp_path}", "-o", "main"], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run(["./main"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    failed, again, first, last = run.stdout.split()
    assert (failed, again) == ("-1", "0")
    np.testing.assert_allclose([float(first), float(last)], [0.999 ** 1000] * 2, rtol=1e-12)


# --- point 10: outputs and scratch arenas that cannot be allocated ------------------------------

ALLOC_CHILD = '''
    import numpy as np
    import gradtape as gt

    # dynamic=False: the second size compiles its own native code (with the automatic policy its
    # first calls would run in the interpreter, whose arrays NumPy allocates)
    double = gt.differentiable(lambda x: x * 2.0, dynamic=False)
    pooled = np.ones(1 << 20)                          # an 8 MiB result: from runtime.alloc's pool
    double(pooled)
    big = np.ones(1 << 25)                             # 256 MiB in
    limit_memory(200 << 20)                            # its 256 MiB result cannot be had
    try:
        double(big)
        print("error none")
    except MemoryError as e:
        print("error", e)
    print("after", double(pooled)[:2].sum(), double(np.arange(3.0)).sum())
'''


def test_a_result_that_cannot_be_mapped_raises_memory_error_with_its_size():
    out = _lines(_run(ALLOC_CHILD))
    assert out["error"] == "Unable to allocate 256 MiB for an array with shape (33554432,) and data type float64"
    assert out["after"].split() == ["4.0", "6.0"]
