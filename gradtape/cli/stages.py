"""The compile pipeline of one signature, stage by stage, timed: what `inspect` shows.

    run = run_stages(loss, [ShapeDtype((3, 4)), ShapeDtype((4,))], argnums=None)
    run.traced, run.adjoint, run.optimized      # ir.Functions
    run.seconds                                 # {"trace": ..., "adjoint": ..., ...}

The stages are those of gradtape.value_and_grad: trace the function with
abstract tensors; the adjoint (ir.vjp: the function and its gradient as one
Function; a scalar output's cotangent is the literal 1, so the seed folds
in); optimize (ir.optimize); then the runtime's build: lower (the code
generator), ir_text, parse, optimize (LLVM), emit_object, load, entry. A
function whose output is not a float scalar gets the vector-Jacobian
product instead: its cotangents are inputs. With `forward`, no adjoint:
the function itself is optimized and compiled. The build never uses the
disk cache: its times are those of a compile.
"""
from __future__ import annotations

import dataclasses
import time

from .. import ir
from ..ir.inline import substitute_inputs
from ..ir.optimize import optimize
from ..runtime.build import Fallback, build_native
from ..staging import StagedFunction
from ..tracer import signature
from ..tracer.trace import trace_call
from .sources import derivative_sites, recording_sites
from .targets import UsageError


@dataclasses.dataclass
class Run:
    traced: object
    adjoint: object  # None with forward
    optimized: object
    wrt: list
    seconds: dict
    compile_seconds: dict  # the runtime's stages
    fallback: str | None  # why native code was not built, if it was not
    sites: dict = dataclasses.field(default_factory=dict)  # {Var: sources.Site} of every stage's equations


def run_stages(f, specs, argnums=None, forward: bool = False, build: bool = True) -> Run:
    fun = f._fun if isinstance(f, StagedFunction) else f
    fname = getattr(fun, "__name__", "function")
    args = [s.example() for s in specs]
    seconds: dict = {}
    t = time.perf_counter()
    sig = signature.describe(args, frozenset(), fname)
    code = getattr(fun, "__code__", None)
    with recording_sites([code.co_filename] if code else []) as sites:
        traced = trace_call(fun, args, sig, fname)
    t = _lap(seconds, "trace", t)
    if traced.captured:
        raise UsageError(f"{fname} reads values of an enclosing trace; inspect a top-level function")
    fn = traced.fn
    adjoint, wrt = None, []
    if not forward:
        floats = [i for i, ty in enumerate(fn.in_types) if ty.is_float]
        wrt = list(argnums) if argnums is not None else floats
        bad = [i for i in wrt if i not in floats]
        if bad:
            raise UsageError(f"--argnums {','.join(map(str, bad))}: no float argument there "
                             f"(the float arguments are {floats})")
        if not wrt:
            raise UsageError(f"{fname} has no float argument to differentiate; use --forward")
        origins: dict = {}
        joint, _ = ir.vjp(fn, wrt, origins)
        sites.update(derivative_sites(sites, origins))
        out = fn.out_types
        if len(out) == 1 and out[0].shape == () and out[0].is_float:
            seeded = substitute_inputs(joint, {len(fn.invars): ir.Literal(1, out[0].dtype)})
            _rename_sites(sites, joint, seeded)
            joint = seeded
        adjoint = joint
        t = _lap(seconds, "adjoint", t)
    optimized = optimize(adjoint if adjoint is not None else fn)
    _lap(seconds, "optimize", t)
    compile_seconds, fallback = {}, None
    if build:
        try:
            native = build_native(optimized)
            compile_seconds = dict(native.timings)
        except Fallback as e:
            fallback = str(e)
    return Run(fn, adjoint, optimized, wrt, seconds, compile_seconds, fallback, sites)


def _rename_sites(sites: dict, old, new):
    """substitute_inputs copies equation for equation with fresh Vars: the copies keep the sites."""
    for e_old, e_new in zip(old.eqns, new.eqns):
        for a, b in zip(e_old.outvars, e_new.outvars):
            if a in sites:
                sites[b] = sites[a]


def _lap(seconds: dict, stage: str, t0: float) -> float:
    t1 = time.perf_counter()
    seconds[stage] = t1 - t0
    return t1
