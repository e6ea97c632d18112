"""Compile once per rank: the dynamic versions of one staged function.

Signatures that differ only in the sizes of their arrays (same structure,
ranks, dtypes and static values) form a family. The policy (the `dynamic`
argument of `differentiable`, `grad`, ...):

  - None (automatic, the default): the first signature of a family compiles
    as always; when a second one differs in the sizes of some dimensions, all
    by the same N1 -> N2, those dimensions become one run-time size N, and
    one dynamic version (runtime/dynamic_family.py)
    serves that signature and every later one of the family that matches;
  - a set of (argnum, axis) pairs, or True (axis 0 of the last array
    argument and of every array whose axis 0 has its size, e.g. a batch):
    those dimensions are dynamic from the first call, which traces once more
    at another size to generalize;
  - False: every signature compiles its own specialized version.

With the automatic policy the dynamic version is built in the background
by a rule of calls, never of time (so results do not depend on timing):
the call that meets the second size runs in the reference interpreter and
then submits the build (generalizing the two traces, lowering, LLVM) to the
compile thread (runtime/cache.py's BackgroundBuild). That size's next calls
run in the interpreter too, up to INTERPRETED_RUNS in all (1 for a Function
with loops); the call after them (through runtime/serving.py's
ServedAfterBuild), or the first call at a later size (through `attach`),
waits for the build. With a policy given up front, the first call builds
it in the call, as a first call compiles its specialized version.

Each new size is still traced and transformed (no compile) and used only
when it is exactly the dynamic Function at that size; sizes 0 and 1 (and
anything else that does not match) get specialized versions. A Function
that code generation cannot make dynamic (control flow, ...) falls back to
specialized versions for the whole family, said once in the compile log.
"""
from __future__ import annotations

import numpy as np

from ..tracer import tree
from . import compile_log, program as program_module

MAX_FAMILIES = 64  # per staged function; the oldest is forgotten past this


def check_policy(dynamic, name: str):
    """The `dynamic` argument as stored: None, True, False or a frozenset of (argnum, axis).

    Raises:
      TypeError: anything else, naming the function and the accepted forms.
    """
    if dynamic is None or dynamic is True or dynamic is False:
        return dynamic
    try:
        pairs = frozenset((int(a), int(x)) for a, x in dynamic)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name}: dynamic={dynamic!r} is not one of None (automatic), True, False or a set of "
            "(argnum, axis) pairs such as {(1, 0), (2, 0)}") from None
    if not pairs or any(a < 0 or x < 0 for a, x in pairs):
        raise TypeError(f"{name}: dynamic={dynamic!r} needs at least one (argnum, axis) pair of non-negative ints")
    return pairs


class DynamicVersions:
    """The families of one staged function and their dynamic versions (used under its traces' lock)."""

    def __init__(self, policy):
        self.policy = policy
        self.families: dict = {}
        self.compiles = 0  # dynamic versions compiled in the call (StagedFunction.cache_info adds them)
        self._up_front = False  # building the family of a first call (the policy's second size)

    def attach(self, staged, sig, args, program, title: str, described) -> bool:
        """After `program` was built for the new signature `sig`: make it run a dynamic
        version when the policy and the family allow. Returns whether it now does."""
        if self.policy is False or sig.abstract or sig.tensors or program.captured:
            return False
        if program_module.compiler is not None:  # a stand-in compiler (tests of staging logic)
            return False
        key, dims = _rank_key(sig.parts)
        family = self.families.get(key)
        log = _Log(title, described)
        if family is None:
            from ..runtime import cache as runtime_cache
            from ..runtime.dynamic_family import Family  # the code generator: loaded by the first family

            family = self.families[key] = Family(dims, program.fn, log)
            if self.policy is None and len(self.families) == 1:  # a second size builds in the background:
                runtime_cache.prestart_background()  # its thread starts now, not in the call that meets it
            while len(self.families) > MAX_FAMILIES:
                del self.families[next(iter(self.families))]
            if self.policy is not None:  # dynamic up front: trace once more at another size
                self._up_front = True
                try:
                    self._second_size(staged, sig, args, dims)
                finally:
                    self._up_front = False
                return self._offer(family, dims, program, log) if family.kernel else False
            return False
        family.log = log  # this call's words
        family.settle()
        if family.kernel is None and not family.failed and not self._up_front:
            return self._start(staged, family, dims, program, log)
        return self._offer(family, dims, program, log)

    def _start(self, staged, family, dims, program, log) -> bool:
        """The second size of a family: this call runs in the interpreter and then starts the
        dynamic version's build in the background; the program's next call waits for it
        (runtime/serving.py's ServedAfterBuild). False: no dynamic version from this program."""
        build = family.start(dims, program.fn, log.title)
        if build is None:
            return False
        lock = staged._traces.lock

        def resolve():  # once the build is done: the dynamic version at this size, or None
            with lock:
                family.log = log
                run = family.offer(dims, program.fn, log.title)
            if run is not None:
                program.log_label = None  # no compile of its own to log
            return run

        from ..runtime.serving import ServedAfterBuild

        program.serve_by(ServedAfterBuild(program.fn, build, resolve, interpreted_runs(program.fn)))
        return True

    def _offer(self, family, dims, program, log) -> bool:
        family.log = log  # this call's words
        family.settle()
        before = family.compiles
        run = family.offer(dims, program.fn, log.title)
        self.compiles += family.compiles - before
        if run is None:
            return False
        program.compiled = run
        program.log_label = None
        return True

    def covers(self, sig) -> bool:
        """Whether a dynamic version already exists for `sig`'s sizes (its trace is still to be checked)."""
        if self.policy is False or not self.families:
            return False
        key, dims = _rank_key(sig.parts)
        family = self.families.get(key)
        if family is None:
            return False
        family.settle()
        return family.kernel is not None and family.size_of(dims) is not None

    def _second_size(self, staged, sig, args, dims):
        """Trace (and so generalize and compile) the family of `sig` at another size of its dynamic dims."""
        from ..codegen.dynamic_sizes import MIN_SIZE

        marked = _marked_dims(self.policy, sig, dims)
        sizes = {dims[i] for i in marked}
        if len(sizes) != 1 or min(sizes) < MIN_SIZE:
            return
        other = min(sizes) + 1
        leaves = list(sig.leaves)
        for leaf_index, axes in _by_leaf(marked, sig).items():
            x = leaves[leaf_index]
            shape = list(np.shape(x))
            for axis in axes:
                shape[axis] = other
            leaves[leaf_index] = np.zeros(shape, dtype=np.asarray(x).dtype)
        fake = [a if r is None else tree.unflatten(a, leaves[r[0]:r[1]]) for a, r in zip(args, sig.ranges)]
        staged._program_for(fake)


# How many runs of the second size the interpreter serves before they wait for the dynamic
# version's build: a count of runs, never a time, so which code computes each call does not
# depend on how long the build takes. A training loop meets a last, smaller batch once per
# epoch; eight epochs hide a build of a few hundred ms behind short epochs, and the reference
# interpreter runs a Function without loops at about NumPy's pace (W3's gradient at batch 40:
# 1.15x a native step at 128). A Function with loops runs one Python iteration at a time
# there, so its second size waits after one run.
INTERPRETED_RUNS = 8


def interpreted_runs(fn) -> int:
    """INTERPRETED_RUNS, or 1 for a Function with a loop (scan, while) at any depth."""
    return 1 if _has_loop(fn) else INTERPRETED_RUNS


_LOOP_OPS = frozenset({"scan", "while", "while_vjp"})


def _has_loop(fn) -> bool:
    for eqn in fn.eqns:
        if eqn.op.name in _LOOP_OPS:
            return True
        for value in eqn.params.values():
            inner = value if hasattr(value, "eqns") else None
            if inner is None and isinstance(value, (tuple, list)):
                if any(hasattr(v, "eqns") and _has_loop(v) for v in value):
                    return True
            elif inner is not None and _has_loop(inner):
                return True
    return False


class _Log:
    """What a family of one staged function's signatures says, in the compile log."""

    def __init__(self, title, described):
        self.title, self.described = title, described

    def starting(self, label, background=False):
        compile_log.dynamic_starting(self.title, self.described, background)

    def compiled(self, label, kernel, symbolic):
        compile_log.dynamic_compiled(self.title, self.described, kernel, symbolic)

    def used(self, label, n):
        compile_log.dynamic_used(self.title, self.described, n)

    def declined(self, label, why):
        compile_log.dynamic_declined(self.title, self.described, why)

    def failed(self, label, why):
        compile_log.dynamic_failed(self.title, self.described, why)


def _is_shape(part) -> bool:
    return type(part) is tuple and all(type(d) is int for d in part)


def _rank_key(parts):
    """(the signature with each shape replaced by its rank, every dimension in order)."""
    key, dims = [], []
    for p in parts:
        if _is_shape(p):
            key.append(("rank", len(p)))
            dims.extend(p)
        else:
            key.append(p)
    return tuple(key), dims


def _leaf_dims(sig):
    """Per leaf, the index in the flat dims of its axis 0 (leaves in order, as sig.leaves)."""
    starts, at = [], 0
    for p in sig.parts:
        if _is_shape(p):
            starts.append(at)
            at += len(p)
    return starts


def _marked_dims(policy, sig, dims) -> list:
    """Indexes into the flat dims of the dimensions the policy makes dynamic."""
    starts = _leaf_dims(sig)
    ranks = [len(t.shape) for t in sig.types]
    if policy is True:
        last = [i for i, r in enumerate(ranks) if r >= 1]
        if not last:
            return []
        size = dims[starts[last[-1]]]
        return [starts[i] for i, r in enumerate(ranks) if r >= 1 and dims[starts[i]] == size]
    out = []
    for argnum, axis in policy:
        if argnum >= len(sig.ranges) or sig.ranges[argnum] is None:
            continue
        lo, hi = sig.ranges[argnum]
        out.extend(starts[i] + axis for i in range(lo, hi) if axis < ranks[i])
    return out


def _by_leaf(marked, sig) -> dict:
    """{leaf index: [axes]} of the marked flat dims."""
    starts = _leaf_dims(sig)
    ranks = [len(t.shape) for t in sig.types]
    out: dict = {}
    for i, (s, r) in enumerate(zip(starts, ranks)):
        axes = [d - s for d in marked if s <= d < s + r]
        if axes:
            out[i] = axes
    return out
