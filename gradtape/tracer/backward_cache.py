"""The cache of backward plans, keyed by what a tape recorded.

In a training loop every step records the same program (same ops, params,
shapes, dtypes and wiring) on fresh values, so `tape.gradient` builds the
backward function (adjoint pass, output selection, forward values as
inputs) and compiles it once, then reuses it:

    key = (recording.structure,              see recording.py
           position of each target,
           positions of each source's Vars)  a leaf per read of a variable, or the tapped Var

A seed (`output_gradients`) is an input of the backward function either
way, and `unconnected_gradients` is applied after it runs, so neither is in
the key. Scalar literals are in the structure by exact value (they are
baked into the backward function); array constants and variable values are
inputs, so assigning a variable or feeding a new batch still hits. A Python
scalar that changes every step (a schedule multiplied into the loss) makes
every step a miss: pass it as a `gradtape.constant` instead.

The cache is a process-wide LRU of `max_plans` entries (256 by default) and
counts:
  hits, misses   lookups that found a plan / built one;
  uncached       gradients computed without the cache: the recording holds a
                 custom_gradient or an unhashable param, or the cache is off
                 (`set_max_plans(0)`, or inside `disabled()`);
  replayed       gradients replayed on an active tape (higher orders),
                 which never use the cache.
"""
from __future__ import annotations

import collections
import contextlib
import itertools
import threading
import time

from . import plan_log

_lock = threading.Lock()
_plans: collections.OrderedDict = collections.OrderedDict()  # _Key -> plan, least recent first
_counts = {"misses": 0, "uncached": 0, "replayed": 0}
# Hits, the event of every step of a training loop, are counted without the lock:
# next() of an itertools.count is one C call, which no other thread interrupts.
# Reading the count takes a number too (`_hits`, under the lock).
_hit_ticks = itertools.count()
_ticks_read = 0  # numbers taken from _hit_ticks by _hits, not by hits
_max_plans = 256
_disabled = 0  # depth of `disabled()` contexts
# (key parts, plan) of the most recently used plan, compared first: a training
# loop asks the same question of the same structure every step, and comparing
# two tuples costs less than hashing one and keeping the LRU order.
_recent = None


class _Key:
    """A structure key whose hash is computed once (tuples do not cache theirs,
    and a recording's structure can be long)."""

    __slots__ = ("parts", "hash")

    def __init__(self, parts):
        self.parts = parts
        self.hash = hash((_structure_hash(parts[0]), parts[1]))

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        return self.hash == other.hash and self.parts == other.parts


_hashed = (None, 0)  # the structure key hashed last, and its hash


def _structure_hash(structure: tuple) -> int:
    """hash(structure), once per tuple in a row: a first gradient looks its structure up in
    `find`, then in `lookup`, and Recording.structure_key gives both the same tuple."""
    global _hashed
    last = _hashed
    if last[0] is structure:
        return last[1]
    h = hash(structure)
    _hashed = (structure, h)
    return h


def lookup(rec, question_key, build):
    """The plan for `question_key` on recording `rec`, made with `build()` on a miss.

    Returns None when the recording cannot key a cache (or the cache is
    off): the caller then builds a backward of its own, as without a cache.
    """
    global _recent
    if rec.uncacheable is not None or _max_plans == 0 or _disabled:
        count("uncached")
        return None
    parts = (rec.structure_key(), question_key)
    plan, key = _cached(parts)
    if plan is not None:
        return plan
    if key is None:  # an unhashable param: no key, but still a gradient
        count("uncached")
        return None
    with _lock:
        _counts["misses"] += 1
        cached = [k.parts[0] for k in _plans] if plan_log.enabled() else []
    started = time.perf_counter()
    plan = build()  # outside the lock: building and compiling may take a while
    plan.log_label = plan_log.built(rec, parts[0], cached, time.perf_counter() - started)
    with _lock:
        _plans[key] = plan
        while len(_plans) > _max_plans:
            _plans.popitem(last=False)
        _recent = (parts, plan) if _max_plans else None
    return plan


def find(rec, question_key):
    """The plan for `question_key` on recording `rec` when the cache holds one (a hit,
    counted), else None, counting nothing: the caller then asks `lookup`, which counts
    what happens. The fast path of tape.gradient, which must not build a plan before
    it has checked everything else."""
    if rec.uncacheable is not None or _max_plans == 0 or _disabled:
        return None
    parts = (rec.structure_key(), question_key)
    recent = _recent
    if recent is not None and recent[0] == parts:  # _cached's first case, without its call
        next(_hit_ticks)
        return recent[1]
    return _in_lru(parts)[0]


def _cached(parts) -> tuple:
    """(the plan cached under key parts `parts` or None, its _Key or None when `parts` is
    unhashable); counts a hit."""
    recent = _recent
    if recent is not None and recent[0] == parts:  # already the most recent in the LRU order
        next(_hit_ticks)
        return recent[1], None
    return _in_lru(parts)


def _in_lru(parts) -> tuple:
    """_cached, once the most recent plan is not the one: a lookup in the LRU order."""
    global _recent
    try:
        key = _Key(parts)
    except TypeError:
        return None, None
    with _lock:
        plan = _plans.get(key)
        if plan is not None:
            _plans.move_to_end(key)
            next(_hit_ticks)
            _recent = (parts, plan)
    return plan, key


# How many times each program's last value was read before a gradient (value_plans.py), by a
# stand-in for its structure (`stand_in`): a plan is built for such reads only once its program
# repeats, and a gradient's plan built after them is compiled at once.
_met: dict = {}
_MAX_MET = 4096


def stand_in(rec) -> tuple:
    """A key equal for recordings of equal structures, made in constant time. Unequal
    structures may share it: it only counts meetings; plans are found by the whole structure."""
    structure = rec.structure
    n = len(structure)
    if not n:
        return 0, len(rec.leaves)
    return n, structure[-1], structure[n >> 1], structure[n >> 2], len(rec.leaves)


def meet(key: tuple) -> int:
    """Count one more meeting of the program whose `stand_in` is `key`; returns the count
    (saturating past 255)."""
    met = _met.get(key, 0) + 1
    if met < 256:
        if len(_met) >= _MAX_MET:
            _met.clear()
        _met[key] = met
    return met


def met(key: tuple) -> int:
    """How many times `meet` counted the program whose `stand_in` is `key`."""
    return _met.get(key, 0)


def count(what: str):
    with _lock:
        _counts[what] += 1


def cache_info() -> dict:
    """Counters of the backward-plan cache.

    Returns:
      {"hits", "misses", "uncached", "replayed", "entries", "max_plans"}
      (see the module docstring for what each counts).

    Example::

        >>> from gradtape.tracer import backward_cache
        >>> sorted(backward_cache.cache_info())
        ['entries', 'hits', 'max_plans', 'misses', 'replayed', 'uncached']
    """
    with _lock:
        return dict(hits=_hits(), **_counts, entries=len(_plans), max_plans=_max_plans)


def _hits() -> int:
    """The number of hits so far (call under the lock: it takes a number from the counter)."""
    global _ticks_read
    hits = next(_hit_ticks) - _ticks_read
    _ticks_read += 1
    return hits


def clear_cache():
    """Drop every plan and reset the counters."""
    global _recent, _hit_ticks, _ticks_read
    with _lock:
        _plans.clear()
        _met.clear()
        _recent = None
        for k in _counts:
            _counts[k] = 0
        _hit_ticks, _ticks_read = itertools.count(), 0


@contextlib.contextmanager
def disabled():
    """Within this context, gradients are computed without the cache, as if it
    did not exist (the plans stay for later). For checking a suspected cache
    problem, and as the reference in tests. It holds for every thread.

    Example::

        >>> from gradtape.tracer import backward_cache
        >>> w = gradtape.Variable(np.ones(3))
        >>> with gradtape.GradientTape() as tape:
        ...     loss = gradtape.sum(w * w)
        >>> with backward_cache.disabled():
        ...     reference = tape.gradient(loss, w)
        >>> reference.numpy()
        array([2., 2., 2.])
    """
    global _disabled
    with _lock:
        _disabled += 1
    try:
        yield
    finally:
        with _lock:
            _disabled -= 1


def set_max_plans(n: int) -> int:
    """Keep at most `n` plans (least recently used go first); 0 turns the cache off.

    Returns:
      The previous bound.

    Raises:
      ValueError: if `n` is negative.
    """
    global _max_plans, _recent
    if int(n) < 0:
        raise ValueError(f"set_max_plans: the bound must be >= 0, got {n}")
    with _lock:
        previous, _max_plans = _max_plans, int(n)
        while len(_plans) > _max_plans:
            _plans.popitem(last=False)
        if _recent is not None and _Key(_recent[0]) not in _plans:
            _recent = None
    return previous
