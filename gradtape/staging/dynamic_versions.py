"""Compile once per rank: the dynamic versions of one staged function.

Signatures that differ only in the sizes of their arrays (same structure,
ranks, dtypes and static values) form a family. The policy (the `dynamic`
argument of `differentiable`, `grad`, ...):

  - None (automatic, the default): the first signature of a family compiles
    as always; when a second one differs in the sizes of some dimensions, all
    by the same N1 -> N2, those dimensions become one run-time size N, and
    one dynamic version (dynamic_shapes.generalize, runtime/dynamic_kernel.py)
    serves that signature and every later one of the family that matches;
  - a set of (argnum, axis) pairs, or True (axis 0 of the last array
    argument and of every array whose axis 0 has its size, e.g. a batch):
    those dimensions are dynamic from the first call, which traces once more
    at another size to generalize;
  - False: every signature compiles its own specialized version.

Each new size is still traced and transformed (no compile) and used only
when it is exactly the dynamic Function at that size; sizes 0 and 1 (and
anything else that does not match) get specialized versions. A Function
that code generation cannot make dynamic (control flow, ...) falls back to
specialized versions for the whole family, said once in the compile log.
"""
from __future__ import annotations

import numpy as np

from ..codegen.dynamic_sizes import MIN_SIZE
from ..runtime.dynamic_kernel import DynamicKernel
from ..tracer import tree
from . import compile_log, program as program_module
from .dynamic_shapes import generalize

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
        self.compiles = 0  # dynamic versions compiled (StagedFunction.cache_info adds them)

    def attach(self, staged, sig, args, program, title: str, described) -> bool:
        """After `program` was built for the new signature `sig`: make it run a dynamic
        version when the policy and the family allow. Returns whether it now does."""
        if self.policy is False or sig.abstract or sig.tensors or program.captured:
            return False
        if program_module.compiler is not None:  # a stand-in compiler (tests of staging logic)
            return False
        key, dims = _rank_key(sig.parts)
        family = self.families.get(key)
        if family is None:
            family = self.families[key] = _Family(self, dims, program.fn)
            while len(self.families) > MAX_FAMILIES:
                del self.families[next(iter(self.families))]
            if self.policy is not None:  # dynamic up front: trace once more at another size
                self._second_size(staged, sig, args, dims)
                return family.offer(dims, program, title, described) if family.kernel else False
            return False
        return family.offer(dims, program, title, described)

    def covers(self, sig) -> bool:
        """Whether a dynamic version already exists for `sig`'s sizes (its trace is still to be checked)."""
        if self.policy is False or not self.families:
            return False
        key, dims = _rank_key(sig.parts)
        family = self.families.get(key)
        return family is not None and family.kernel is not None and family._size_of(dims) is not None

    def _second_size(self, staged, sig, args, dims):
        """Trace (and so generalize and compile) the family of `sig` at another size of its dynamic dims."""
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


class _Family:
    """Signatures of one structure: the first one's Function, then the dynamic version."""

    def __init__(self, owner, dims, fn):
        self.owner, self.dims, self.fn = owner, dims, fn
        self.kernel = self.symbolic = self.mask = None
        self.failed = False

    def offer(self, dims, program, title, described) -> bool:
        if self.failed:
            return False
        if self.kernel is None and not self._make(dims, program, title, described):
            return False
        n = self._size_of(dims)
        if n is None:
            sizes = sorted({dims[i] for i in self.mask})
            why = f"N={sizes[0]} (the dynamic version is for N >= {MIN_SIZE})" if len(sizes) == 1 and \
                sizes[0] < MIN_SIZE else "other dimensions changed than the dynamic version's"
            compile_log.dynamic_declined(title, described, why)
            return False
        if not self.symbolic.matches(program.fn, n):
            compile_log.dynamic_declined(title, described, f"its trace at N={n} is another program")
            return False
        sym = self.symbolic
        in_types = sym.types_at(sym.fn.in_types[:sym.n_inputs], n)
        program.compiled = self.kernel.bind(n, in_types, sym.types_at(sym.fn.out_types, n), sym.scalars(n))
        program.log_label = None
        compile_log.dynamic_used(title, described, n)
        return True

    def _make(self, dims, program, title, described) -> bool:
        changed = [i for i, (a, b) in enumerate(zip(self.dims, dims)) if a != b]
        before, after = {self.dims[i] for i in changed}, {dims[i] for i in changed}
        if not changed or len(before) != 1 or len(after) != 1:
            self.failed = bool(changed)  # two sizes changing at once: specialized versions
            return False
        n1, n2 = before.pop(), after.pop()
        if min(n1, n2) < MIN_SIZE:
            if n1 < MIN_SIZE:  # a size 0 or 1 says nothing of the others: start from this one
                self.dims, self.fn = dims, program.fn
            return False
        sym = generalize(self.fn, n1, program.fn, n2)
        if sym is None:
            self.failed = True
            compile_log.dynamic_failed(title, described, "the traces at two sizes differ in more than sizes")
            return False
        try:
            kernel = DynamicKernel(sym.fn, f"{title} dynamic")
        except Exception as e:  # Unsupported, DynamicUnsupported, CompileError: specialized versions
            self.failed = True
            compile_log.dynamic_failed(title, described, f"{type(e).__name__}: {e}")
            return False
        self.kernel, self.symbolic, self.mask = kernel, sym, changed
        self.owner.compiles += 1
        compile_log.dynamic_compiled(title, described, kernel, sym)
        return True

    def _size_of(self, dims):
        """N for a signature of this family, or None when it is not one the dynamic version covers."""
        mask = set(self.mask)
        sizes = {dims[i] for i in mask}
        if len(sizes) != 1:
            return None
        if any(a != b for i, (a, b) in enumerate(zip(self.dims, dims)) if i not in mask):
            return None
        n = sizes.pop()
        return n if n >= MIN_SIZE else None


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
