"""The tape's compile hook with dynamic versions: backward plans that differ only in a size share one.

A training loop on a GradientTape whose batches vary in size records one
structure per size, so each size gets its own backward plan and, served by
ServedFunction, its own compile at its `compile_after`-th run. This hook
(installed by the package root as `tracer.backward_plan.serve`) groups plans
whose Functions have the same ops and ranks into families
(dynamic_family.py), and counts runs per family: once a family has run
`compile_after` times over at least two sizes, its dynamic version is
built in the background: the run that gets there is served as before (by
its plan's ServedFunction, hence by the interpreter, since that plan has
not yet run `compile_after` times) and then submits the build, and the next
run that needs it waits for it, so which code serves a run never depends
on timing. From then on every plan of the family runs it, a new size with
no compile at all (when its Function is exactly the dynamic one at its N;
otherwise the plan is served as before). A family of one size is served
exactly as ServedFunction serves it.

    serve = DynamicServing()
    served = serve(fn, compile_after=5, prepare=optimize)   # as ServedFunction(fn, ...)
    outs = served(*arrays)                                  # interpreted, dynamic or specialized
"""
from __future__ import annotations

import collections
import logging
import threading

from . import config
from .serving import ServedFunction

logger = logging.getLogger("gradtape")

MAX_FAMILIES = 256  # the oldest is forgotten past this (plans themselves are bounded by the tape's cache)


class DynamicServing:
    """`serve(fn, compile_after=..., prepare=...)`: ServedFunction's signature, with families."""

    def __init__(self):
        self._families: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, fn, *, compile_after: int = 1, prepare=None, compiler=None):
        served = ServedFunction(fn, compile_after=compile_after, prepare=prepare, compiler=compiler)
        if compiler is not None or not config.dynamic_plans:
            return served
        key = _structure_key(fn)
        with self._lock:
            group = self._families.get(key)
            if group is None:
                group = self._families[key] = _Group(fn, compile_after, prepare)
                while len(self._families) > MAX_FAMILIES:
                    self._families.popitem(last=False)
            else:
                self._families.move_to_end(key)
        return _Served(served, group, fn)

    def clear(self):
        with self._lock:
            self._families.clear()


class _Group:
    """A family of plans and its counters."""

    def __init__(self, fn, compile_after, prepare):
        self.lock = threading.Lock()
        self.compile_after, self.prepare = compile_after, prepare
        self.first = fn  # the first plan's Function, until the family has its dynamic version
        self.family = None
        self.runs = 0
        self.sizes = set()


class _Served:
    """One plan: its ServedFunction, or the family's dynamic version once there is one."""

    __slots__ = ("served", "group", "fn", "dims", "compiled", "_checked", "_build", "_target")

    def __init__(self, served, group, fn):
        self.served, self.group, self.fn = served, group, fn
        self.dims = [d for t in fn.in_types for d in t.shape]
        self.compiled = None
        self._checked = False  # the family's dynamic version was tried on this plan
        self._build = None  # the dynamic version's build this plan started, until its next run
        self._target = None

    def __call__(self, *args):
        compiled = self.compiled
        if compiled is None:
            compiled = self._dynamic()
        if compiled is not None:
            return compiled(*args)
        try:
            outs = self.served(*args)
        finally:
            if self._build is not None:
                self._build.submit()  # the background build, once the run that started it is done
        if self.served.compiled is not None:
            self.compiled = self.served.compiled
        return outs

    def _dynamic(self):
        group = self.group
        if self._build is not None:  # this plan started the build: its next run waits for it
            with group.lock:
                run = group.family.offer(self.dims, self._target, "tape backward plan")
            self._build = self._target = None
            self.compiled = run
            return run
        if self._checked or self.served.compiled is not None:
            return None
        with group.lock:
            group.runs += 1
            group.sizes.add(tuple(self.dims))
            if group.family is None and (group.runs < group.compile_after or len(group.sizes) < 2
                                         or tuple(self.dims) == tuple(_dims(group.first))):
                return None
            self._checked = True
            target = self.fn if group.prepare is None else group.prepare(self.fn)
            if group.family is None:
                from .dynamic_family import Family  # the code generator: loaded by the first family

                first = group.first if group.prepare is None else group.prepare(group.first)
                group.family = Family(_dims(group.first), first, _PlanLog())
            family = group.family
            family.settle()
            if family.kernel is None and not family.failed:
                # The run that makes the family's dynamic version is served as before (its plan's
                # count of runs says by what: the interpreter, as it is not yet at compile_after) and
                # then starts the build in the background; the next run that needs it waits for it.
                build = family.start(self.dims, target, "tape backward plan")
                if build is not None:
                    self._build, self._target = build, target
                    return None
            run = family.offer(self.dims, target, "tape backward plan")
        self.compiled = run
        return run


def _dims(fn) -> list:
    return [d for t in fn.in_types for d in t.shape]


def _structure_key(fn):
    """What members of a family share: ops, ranks and dtypes (sizes aside)."""
    ranks = tuple((len(t.shape), t.dtype) for t in (*fn.in_types, *fn.out_types))
    return ranks, tuple(e.op for e in fn.eqns)


class _PlanLog:
    """What a family of backward plans says, on the `gradtape` logger (GRADTAPE_LOG=compiles)."""

    def starting(self, label, background=False):
        logger.info("%s: building a dynamic version (%s)", label,
                    "in the background" if background else "this run waits for it")

    def compiled(self, label, kernel, symbolic):
        how = "loaded a dynamic version from the disk cache" if kernel.loaded_from_disk else "compiled a dynamic version"
        logger.info("%s: %s for (%s), N >= 2 a run-time size, in %.1f ms", label, how,
                    ", ".join(map(repr, symbolic.fn.in_types[:symbolic.n_inputs])), kernel.compile_seconds * 1e3)

    def used(self, label, n):
        logger.info("%s: runs its dynamic version at N=%d (no compile)", label, n)

    def declined(self, label, why):
        logger.info("%s: not the dynamic version (%s); served as its own", label, why)

    def failed(self, label, why):
        logger.info("%s: no dynamic version (%s); each size compiles its own", label, why)
