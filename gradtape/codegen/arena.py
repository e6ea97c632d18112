"""Arena planning: offsets for the intermediate buffers, shared when their
lifetimes do not overlap.

A buffer lives from the first step that writes it to the last step that
reads (or writes) it. Buffers are placed largest first, each at the lowest
64-byte-aligned offset that overlaps no already placed buffer alive at the
same time (greedy first fit, the usual heuristic for this interval-colouring
problem).

    steps:   s0 writes A   s1 reads A writes B   s2 reads B writes C
    A: [0, 1]  B: [1, 2]  C: [2, 2]   ->  A and C share offset 0, B follows
"""
from __future__ import annotations

ALIGN = 64


def plan_arena(steps, buffers) -> int:
    """Set `offset` on each arena buffer; returns the arena's size in bytes."""
    lifetimes = buffer_lifetimes(steps)
    offsets, total = place(buffers, lifetimes, [buf.nbytes for buf in buffers])
    for buf, offset in zip(buffers, offsets):
        buf.offset = offset
    return total


def buffer_lifetimes(steps) -> dict:
    """Arena buffer -> (first step, last step) that touches it."""
    spans: dict = {}
    for t, step in enumerate(steps):
        for buf in step.writes() | step.reads():
            if buf.kind == "arena":
                spans[buf] = (spans[buf][0] if buf in spans else t, t)
    return spans


def place(buffers, lifetimes: dict, sizes) -> tuple:
    """(offsets, total bytes): each buffer of `sizes` bytes placed first fit, largest first.

    Also run per call size by a dynamic version (codegen/dynamic.py), whose
    buffer sizes are known only then.
    """
    offsets = [0] * len(buffers)
    placed: list = []  # (start, end, lo, hi)
    total = 0
    for i in sorted(range(len(buffers)), key=lambda i: -sizes[i]):
        span = lifetimes.get(buffers[i])
        if span is None:  # never touched (e.g. size 0)
            continue
        start, end = span
        size = max(sizes[i], 1)
        busy = sorted((lo, hi) for s, e, lo, hi in placed if s <= end and start <= e)
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, _align(hi))
        offsets[i] = offset
        placed.append((start, end, offset, offset + size))
        total = max(total, offset + size)
    return offsets, _align(total)


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN
