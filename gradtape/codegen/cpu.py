"""The CPU that generated code targets (GRADTAPE_CPU), and what code generation may assume of it.

GRADTAPE_CPU chooses the target of the code generator:

- ``host`` (the default): this machine's CPU, with every feature it has.
- ``x86-64``, ``x86-64-v2``, ``x86-64-v3``, ``x86-64-v4``: the x86-64
  microarchitecture levels (SSE2; + SSE4.2; + AVX2 and FMA; + AVX-512). Code
  built for a level runs on every CPU of that level, so a disk cache or an
  AOT object can be shared between machines. A level that this machine does
  not reach is refused, since its code would stop with an illegal
  instruction.
- any other LLVM CPU name (``skylake``, ``znver4``, ...): passed to LLVM as
  is. gradtape cannot list such a CPU's features, so it only assumes SSE2 of
  it when it chooses between implementations (libmvec's AVX2 variants, say),
  and it cannot check that this machine has them.

The choice is part of every cache key (runtime.target.identity()), so code
built for one target is never loaded for another.

    >>> from gradtape.codegen import cpu
    >>> cpu.resolve("x86-64-v2").has("sse4.2"), cpu.resolve("x86-64-v2").has("avx2")
    (True, False)
"""
from __future__ import annotations

import collections
import contextlib
import functools
import os
import tempfile
import threading

import llvmlite.binding as llvm

# What each x86-64 level adds, in LLVM's feature names (the psABI's table).
_LEVEL_ADDS = {
    "x86-64": ("cmov", "cx8", "fxsr", "mmx", "sse", "sse2"),
    "x86-64-v2": ("cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"),
    "x86-64-v3": ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"),
    "x86-64-v4": ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
}
LEVELS = tuple(_LEVEL_ADDS)


def level_features(level: str) -> frozenset:
    """Every feature an x86-64 level guarantees (its own and those of the levels below)."""
    names = LEVELS[: LEVELS.index(level) + 1]
    return frozenset(f for lv in names for f in _LEVEL_ADDS[lv])


class TargetError(ValueError):
    """GRADTAPE_CPU names a target that gradtape cannot or will not generate code for."""


# A named tuple rather than a dataclass: LLVM's worker process imports this module, and
# dataclasses (with inspect) would be a tenth of its start-up (runtime/llvm_worker.py).
class Cpu(collections.namedtuple("Cpu", ["triple", "name", "features", "known"])):
    """A code generation target.

    Attributes:
      triple: LLVM target triple.
      name: LLVM CPU name.
      features: LLVM feature string ("" lets LLVM derive them from `name`).
      known: feature names known to be present, for choices the code
        generator makes itself (never more than the target really has).
    """

    __slots__ = ()

    def has(self, *features: str) -> bool:
        """True when the target is known to have every one of `features`."""
        return all(f in self.known for f in features)

    @property
    def is_x86(self) -> bool:
        return self.triple.split("-", 1)[0] in ("x86_64", "i386", "i686")


def _host() -> Cpu:
    features = llvm.get_host_cpu_features()
    return Cpu(llvm.get_process_triple(), llvm.get_host_cpu_name(), features.flatten(),
               frozenset(name for name, on in features.items() if on))


def _recognized(name: str, triple: str) -> bool:
    """Whether LLVM knows CPU `name` for `triple`: it only says so on stderr, so listen there."""
    target = llvm.Target.from_triple(triple)
    with tempfile.TemporaryFile() as err:
        saved = os.dup(2)
        try:
            os.dup2(err.fileno(), 2)
            target.create_target_machine(cpu=name, features="", opt=0)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        return b"not a recognized processor" not in err.read()


def resolve(choice: str) -> Cpu:
    """The Cpu that a GRADTAPE_CPU value names.

    Raises:
      TargetError: an unknown CPU name, or a level this machine does not reach.
    """
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    choice = choice.strip() or "host"
    if choice == "host":
        return _host()
    host = _host()
    if choice in _LEVEL_ADDS:
        missing = sorted(level_features(choice) - host.known - {"mmx"})  # LLVM no longer reports mmx
        if missing:
            raise TargetError(
                f"GRADTAPE_CPU={choice}: this CPU ({host.name}) lacks {', '.join(missing)}, so code built for "
                f"{choice} would stop with an illegal instruction here. Use a lower level or 'host'.")
        return Cpu(host.triple, choice, "", level_features(choice))
    if not _recognized(choice, host.triple):
        raise TargetError(
            f"GRADTAPE_CPU={choice!r} is not a CPU LLVM knows for {host.triple}; use 'host', one of "
            f"{', '.join(LEVELS)}, or an LLVM CPU name such as 'skylake' or 'znver4'.")
    return Cpu(host.triple, choice, "", level_features("x86-64"))


def foreign(triple: str, name: str = "generic") -> Cpu:
    """A target of another architecture, for emitting object code that runs elsewhere.

    Nothing is assumed of its features, so the code generator takes its
    portable paths (no x86-64 vector library, for one).
    """
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return Cpu(triple, name, "", frozenset())


@functools.lru_cache(maxsize=None)
def _chosen() -> Cpu:
    return resolve(os.environ.get("GRADTAPE_CPU", "host"))


class _Override(threading.local):
    cpu: Cpu | None = None


_override = _Override()


def current() -> Cpu:
    """The target that code generated now is for: `targeting`'s, else GRADTAPE_CPU's (read once)."""
    return _override.cpu or _chosen()


@contextlib.contextmanager
def targeting(target: Cpu):
    """Generate code for `target` in this thread inside the block (cross-compiling, tests).

    Code lowered for another triple can be emitted as an object, not run here.
    """
    saved, _override.cpu = _override.cpu, target
    try:
        yield target
    finally:
        _override.cpu = saved
