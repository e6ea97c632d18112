"""A family of Functions that differ only in sizes, and the one dynamic version that serves them.

Shared by staged functions (staging/dynamic_versions.py, one family per
signature structure) and the tape's backward plans (dynamic_serving.py, one
per recorded structure). `dims` is the flat list of a member's input
dimensions, in order:

    family = Family(dims, fn, log)                 # the first member
    run = family.offer(dims2, fn2, label)          # a SizedCall, or None: compile fn2 itself

The second member whose dims differ from the first's by one size N1 -> N2
(all changed dimensions alike, both >= 2) makes the dynamic version:
codegen.dynamic_generalize.generalize, then DynamicKernel. Every member
offered afterwards runs it when its own Function is exactly the dynamic one
at its N (`SymbolicFunction.matches`), and otherwise is compiled by its
caller as always. `log` hears each decision (`starting`, `compiled`,
`used`, `declined`, `failed`, each with the caller's label first).

Or in the background (staged functions, staging/dynamic_versions.py):

    build = family.start(dims2, fn2, label)        # checks sizes; None: no dynamic version from fn2
    build.submit()                                 # compiles on the compile thread (cache.BackgroundBuild)
    run = family.offer(dims2, fn2, label)          # later: waits for that build, then as above

Every `offer` (and `covers`) first waits for a build in flight, so what it
gives never depends on how long the build took.
"""
from __future__ import annotations

from ..codegen.dynamic_generalize import generalize
from ..codegen.dynamic_sizes import MIN_SIZE
from . import cache
from .dynamic_kernel import DynamicKernel


class Family:
    """One structure's first Function, then its dynamic version (use under the owner's lock)."""

    def __init__(self, dims, fn, log):
        self.dims, self.fn, self.log = list(dims), fn, log
        self.kernel = self.symbolic = self.mask = None
        self.failed = False
        self.compiles = 0
        self.pending = None  # the background build of the dynamic version (start), until it is done

    def offer(self, dims, fn, label):
        """The dynamic version bound to `fn`'s size when it serves `fn` exactly, else None."""
        self.settle()
        if self.failed:
            return None
        if self.kernel is None and not self._make(dims, fn, label):
            return None
        n = self.size_of(dims)
        if n is None:
            sizes = sorted({dims[i] for i in self.mask})
            why = f"N={sizes[0]} (the dynamic version is for N >= {MIN_SIZE})" if len(sizes) == 1 and \
                sizes[0] < MIN_SIZE else "other dimensions changed than the dynamic version's"
            self.log.declined(label, why)
            return None
        if not self.symbolic.matches(fn, n):
            self.log.declined(label, f"its trace at N={n} is another program")
            return None
        sym = self.symbolic
        in_types = sym.types_at(sym.fn.in_types[:sym.n_inputs], n)
        run = self.kernel.bind(n, in_types, sym.types_at(sym.fn.out_types, n), sym.scalars(n))
        self.log.used(label, n)
        return run

    def start(self, dims, fn, label):
        """The build of the dynamic version from this member, not yet run (a cache.BackgroundBuild,
        also kept as `pending`), or None: no dynamic version from it (its sizes; `failed` then says
        whether the family has given up). Only the sizes are checked here: generalizing the two
        programs, lowering and LLVM are the build's. `offer` afterwards waits for it."""
        self.settle()
        if self.failed or self.kernel is not None:
            return None
        sizes = self._sizes(dims, fn, label)
        if sizes is None:
            return None
        self.log.starting(label, background=True)
        log = self.log  # this member's words, whenever the build runs

        def build():
            sym = self._symbolic(fn, *sizes, label, log)
            return sym is not None and self._compile(sym, sizes[0], label, log)

        self.pending = cache.BackgroundBuild(build)
        return self.pending

    def settle(self):
        """Wait for the build in flight, if any (or run it here when nothing has begun it)."""
        pending = self.pending
        if pending is not None:
            pending.result()
            self.pending = None

    def _make(self, dims, fn, label) -> bool:
        sizes = self._sizes(dims, fn, label)
        if sizes is None:
            return False
        sym = self._symbolic(fn, *sizes, label, self.log)
        if sym is None:
            return False
        self.log.starting(label, background=False)
        return self._compile(sym, sizes[0], label, self.log)

    def _sizes(self, dims, fn, label):
        """(the indexes of the dims that changed, their size in the first member, in this one), or
        None: no dynamic version from this member."""
        changed = [i for i, (a, b) in enumerate(zip(self.dims, dims)) if a != b]
        before, after = {self.dims[i] for i in changed}, {dims[i] for i in changed}
        if not changed or len(before) != 1 or len(after) != 1:
            if changed:  # two sizes changing at once: specialized versions
                self.failed = True
                self.log.failed(label, "more than one size changed")
            return None
        n1, n2 = before.pop(), after.pop()
        if min(n1, n2) < MIN_SIZE:
            if n1 < MIN_SIZE:  # a size 0 or 1 says nothing of the others: start from this one
                self.dims, self.fn = list(dims), fn
            return None
        return changed, n1, n2

    def _symbolic(self, fn, changed, n1, n2, label, log):
        """The symbolic Function of this family from its first member and `fn`, or None (failed)."""
        sym = generalize(self.fn, n1, fn, n2)
        if sym is None:
            self.failed = True
            log.failed(label, "the programs at two sizes differ in more than sizes")
        return sym

    def _compile(self, sym, changed, label, log) -> bool:
        try:
            kernel = DynamicKernel(sym.fn, f"{label} dynamic")
        except Exception as e:  # Unsupported, DynamicUnsupported, CompileError: specialized versions
            self.failed = True
            log.failed(label, f"{type(e).__name__}: {e}")
            return False
        self.kernel, self.symbolic, self.mask = kernel, sym, changed
        self.fn = None  # no longer needed: the symbolic Function stands for every size
        self.compiles += 1
        log.compiled(label, kernel, sym)
        return True

    def size_of(self, dims):
        """N for a member with `dims`, or None when the dynamic version does not cover it."""
        mask = set(self.mask)
        sizes = {dims[i] for i in mask}
        if len(sizes) != 1:
            return None
        if any(a != b for i, (a, b) in enumerate(zip(self.dims, dims)) if i not in mask):
            return None
        n = sizes.pop()
        return n if n >= MIN_SIZE else None
