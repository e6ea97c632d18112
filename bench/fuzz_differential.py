"""Differential fuzzing of gradtape: N random programs, each through every front
door (staged, eager tape, staged call on a tape, jvp, vmap of grad, hvp),
against the reference interpreter, NumPy and finite differences.

Programs run in batches in worker subprocesses, so a crash in native code
(SIGABRT, SIGSEGV) or a hang costs one batch, not the run: it is counted
with the seed that was running and the run goes on from the next seed.

Usage (from the repository root):

    python bench/fuzz_differential.py --n 10000 --seed 0 --jobs 1
    python bench/fuzz_differential.py --replay 1234     # one program: its text and findings
    python bench/fuzz_differential.py --version 1 ...   # the generator before control flow and sorting

Prints the count of findings by category, then the reproducing seed, program
text and details of each. Exit status 1 if anything was found.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _worker(first: int, last: int, version: int) -> None:
    """Check seeds first..last-1, one JSON line before and after each (read by _run_batch)."""
    sys.path.insert(0, ROOT)
    from tests.fuzz import differential, generator

    differential.configure()
    for seed in range(first, last):
        print(json.dumps({"start": seed}), flush=True)
        t0 = time.perf_counter()
        checked = set()
        try:
            findings = [(f.category, f.detail) for f in differential.check(generator.generate(seed, version), checked)]
        except Exception as e:  # noqa: BLE001 - a failure of the harness itself is reported too
            findings = [(f"harness:{type(e).__name__}", str(e)[:1000])]
        print(json.dumps({"seed": seed, "findings": findings, "checked": sorted(checked),
                          "seconds": time.perf_counter() - t0}), flush=True)


def _run_batch(first: int, last: int, timeout: float, version: int) -> list:
    """[(seed, findings, independent checks applied)] for seeds first..last-1, restarting the worker after a crash or hang."""
    results = []
    while first < last:
        with tempfile.TemporaryFile() as err:
            env = dict(os.environ, GRADTAPE_DISK_CACHE="0", PYTHONPATH=ROOT)
            proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--worker", str(first), str(last), str(version)],
                stdout=subprocess.PIPE, stderr=err, env=env, text=True, cwd=ROOT,
            )
            running, hung = None, False
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            while True:
                if not sel.select(timeout):
                    hung = True
                    proc.kill()
                    break
                line = proc.stdout.readline()
                if not line:
                    break
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue  # something else wrote to stdout
                if "start" in msg:
                    running = msg["start"]
                else:
                    results.append((msg["seed"], msg["findings"], msg["checked"]))
                    running = None
                    first = msg["seed"] + 1
            sel.close()
            rc = proc.wait()
            if running is None:
                if rc != 0 and first < last:  # died between programs: count it on the next seed
                    running = first
                else:
                    continue
            err.seek(0)
            tail = err.read().decode(errors="replace")[-1500:]
            if hung:
                category = "crash:timeout"
            elif rc < 0:
                category = f"crash:native:{signal.Signals(-rc).name}"
            else:
                category = f"crash:process_exit_{rc}"
            results.append((running, [(category, f"worker exit status {rc}; stderr tail:\n{tail}")], []))
            first = running + 1
    return results


def _replay(seed: int, version: int) -> int:
    sys.path.insert(0, ROOT)
    from tests.fuzz import differential, generator

    differential.configure()
    program = generator.generate(seed, version)
    print(program.text())
    checked = set()
    findings = differential.check(program, checked)
    for f in findings:
        print(f"[{f.category}]\n{f.detail}\n")
    fd = sorted(checked - {"ill_conditioned", "masked_zero", "fd_ill_conditioned", "ill_conditioned_decision"})
    print(f"{len(findings)} finding(s); finite differences of the NumPy reference checked: "
          f"{', '.join(fd) or 'nothing (not smooth or not finite at the point)'}")
    if "ill_conditioned" in checked:
        print("a path differed from the interpreter within the interpreter's own rounding uncertainty "
              "(ill-conditioned at the point: differential.rounding_spread), not reported")
    if "ill_conditioned_decision" in checked:
        print("a path's value was one of the interpreter's results with its intermediates moved by an ulp, at a point "
              "where such moves change a decision (differential.rounding_outcomes), not reported")
    if "fd_ill_conditioned" in checked:
        print("not checked: ill-conditioned: a float32 derivative differed from the finite differences, and moving "
              "its float32 intermediates by an ulp moves it by more than the tolerance "
              "(differential.fd_rounding_spread)")
    if "masked_zero" in checked:
        print("a gradient was 0 on one path and NaN on another where the forward is not finite (a cotangent "
              "masked by a where on one, multiplied by an infinite partial on the other: "
              "differential.masked_zero_or_nan), not reported")
    return 1 if findings else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="number of programs (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first program (program i has seed+i)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes at once (default 1)")
    parser.add_argument("--batch", type=int, default=100, help="programs per worker process (default 100)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds without progress before a worker is killed")
    parser.add_argument("--replay", type=int, metavar="SEED", help="run one program and print its text and findings")
    parser.add_argument("--version", type=int, default=None,
                        help="generator version (default: the latest; 1 has no control flow or sorting)")
    parser.add_argument("--worker", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, ROOT)
    from tests.fuzz import generator

    version = generator.LATEST if args.version is None else args.version
    if args.worker:
        _worker(*args.worker)
        return 0
    if args.replay is not None:
        return _replay(args.replay, version)

    t0 = time.perf_counter()
    batches = [(s, min(s + args.batch, args.seed + args.n)) for s in range(args.seed, args.seed + args.n, args.batch)]
    found, done, checked = {}, 0, collections.Counter()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(_run_batch, a, b, args.timeout, version) for a, b in batches]
        for fut in concurrent.futures.as_completed(futures):
            for seed, findings, applied in fut.result():
                done += 1
                checked.update(applied)
                if findings:
                    found[seed] = findings
                    print(f"seed {seed}: {', '.join(sorted({c for c, _ in findings}))}", file=sys.stderr, flush=True)
            print(f"... {done}/{args.n} programs, {len(found)} with findings, {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)
    _report(found, done, time.perf_counter() - t0, version, checked)
    return 1 if found else 0


def _report(found: dict, done: int, seconds: float, version: int, checked: collections.Counter) -> None:
    sys.path.insert(0, ROOT)
    from tests.fuzz import generator

    def kind(category):  # "mismatch:staged_grad[1]" -> "mismatch:staged_grad"
        return category.split("[")[0].split(" row ")[0]

    per_program = {seed: {kind(c) for c, _ in fs} for seed, fs in found.items()}
    by_category = collections.Counter(c for cats in per_program.values() for c in cats)
    mismatched = sum(any(c.startswith("mismatch:") for c in cats) for cats in per_program.values())
    crashed = sum(any(c.startswith(("crash:", "harness:")) for c in cats) for cats in per_program.values())
    print(f"\n{done} programs (generator version {version}) in {seconds:.0f} s; {len(found)} with findings")
    print(f"programs with a mismatch: {mismatched}, with a crash: {crashed}")
    print(f"derivatives checked by finite differences of the NumPy reference: first order in "
          f"{checked['first_order']} programs, second order (HVP) in {checked['second_order']}")
    print(f"programs where a path differed from the interpreter within the interpreter's rounding "
          f"uncertainty (ill-conditioned, not reported): {checked['ill_conditioned']}")
    print(f"programs where a path's value was a result of the interpreter with its intermediates moved by an ulp, "
          f"where such moves change a decision (not reported): {checked['ill_conditioned_decision']}")
    print(f"programs with a float32 derivative not compared with finite differences (ill-conditioned: float32 "
          f"rounding moves it by more than the tolerance): {checked['fd_ill_conditioned']}")
    print(f"programs where a gradient was 0 on one path and NaN on another at a non-finite point (a where's "
          f"mask carried further on one path, not reported): {checked['masked_zero']}")
    print("programs by category (one program may be in several):")
    for category, count in sorted(by_category.items()):
        print(f"  {count:6d}  {category}")
    for seed in sorted(found):
        print(f"\n===== seed {seed}: {', '.join(sorted({c for c, _ in found[seed]}))}")
        print(generator.generate(seed, version).text())
        for category, detail in found[seed]:
            print(f"[{category}]\n{detail}\n")


if __name__ == "__main__":
    sys.exit(main())
