"""Timing helpers for benchmarks: calibrated loops, median of repeats.

Machines are shared and noisy, so every benchmark reports ratios to a
baseline measured in the same run, never absolute targets alone.
"""
from __future__ import annotations

import time


def per_call(fn, repeats: int = 7, min_time: float = 0.2) -> float:
    """Median seconds per call of fn() over `repeats` calibrated runs."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / repeats or n >= 1 << 24:
            break
        n *= 2
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    samples.sort()
    return samples[len(samples) // 2]


def interleaved_best(fns: dict, rounds: int = 30, calls: int = 10, clock=time.perf_counter,
                     warmup: bool = False) -> dict:
    """Seconds per call of each function: the best of `rounds` rounds that run them in turn,
    so that all of them meet the same quiet moments (a shared machine drifts in seconds).
    `clock=time.thread_time` leaves out the time other processes held the core. `warmup`
    makes one untimed call before each timed run: the first call after another function's
    pays for waking its threads and refilling its caches (measured: 2x on a 40 us Jacobian
    timed right after NumPy's objective)."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            if warmup:
                fn()
            t0 = clock()
            for _ in range(calls):
                fn()
            best[name] = min(best[name], (clock() - t0) / calls)
    return best


def fmt(seconds: float) -> str:
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.2f} ms"
