"""`inspect`'s source sites: each traced equation knows the user's line, each adjoint equation the line whose
derivative it is, and tracing outside `recording_sites` is left as it was."""
from __future__ import annotations

import inspect as pyinspect

import numpy as np

import gradtape as gt
from gradtape.cli.sources import recording_sites
from gradtape.cli.stages import run_stages
from gradtape.tracer.trace_context import FunctionTrace


def two_lines(x):
    y = gt.exp(x) * x
    return gt.sum(y)


def test_each_stage_names_the_users_line():
    first = pyinspect.getsourcelines(two_lines)[1]
    run = run_stages(two_lines, [gt.ShapeDtype((3,))], build=False)
    traced = {e.op.name: run.sites[e.out] for e in run.traced.eqns}
    assert traced["exp"].line == traced["mul"].line == first + 1
    assert traced["reduce_sum"].line == first + 2 and traced["reduce_sum"].code == "return gt.sum(y)"
    assert str(traced["exp"]) == f"test_sources.py:{first + 1}"
    added = run.adjoint.eqns[len(run.traced.eqns):]
    assert added and all(run.sites[e.out].derivative for e in added)
    assert {run.sites[e.out].line for e in added} <= {first + 1, first + 2}
    assert all(e.out in run.sites for e in run.optimized.eqns)


def test_recording_is_undone():
    before = FunctionTrace.bind
    with recording_sites() as sites:
        gt.make_ir(two_lines, np.ones(2))
    assert FunctionTrace.bind is before and "bind" not in vars(FunctionTrace) and len(sites) == 3


def test_vjp_origins_map_the_added_equations_to_their_primal_equation():
    fn = gt.make_ir(two_lines, np.ones(2))
    origins: dict = {}
    joint, _ = gt.ir.vjp(fn, [0], origins)
    primal = {e.out for e in fn.eqns}
    added = [e for e in joint.eqns if e.out not in primal]
    assert added and all(origins[e.out] in fn.eqns for e in added)
    assert str(gt.ir.vjp(fn, [0])[0]) == str(joint)  # the same program with or without origins
