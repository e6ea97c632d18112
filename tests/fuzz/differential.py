"""Run one generated program through every gradtape front door and compare.

The references are the reference interpreter (`ir.eval_function` on
`gt.make_ir` of the function, its gradient, its JVP and its HVP), NumPy (the
forward value, by running the same text with numpy_reference) and finite
differences of that NumPy function for every path's derivatives (only where
the function is smooth at the point: independent.py). Every compiled or
eager path must agree with the interpreter to tight float tolerances, NaN
and inf positions included; a path that raises is a crash.

`check(program)` returns a list of Findings; an empty list means agreement.
"""
from __future__ import annotations

import contextlib
import dataclasses
import traceback
import warnings

import numpy as np

import gradtape as gt
from gradtape import ir
from gradtape.ir.op import impls, rule
from gradtape.tracer import value_plans

from . import independent, numpy_reference
from .generator import WEIGHT_HELPER, Program

# rtol of compiled (or eager) against interpreted results of the same IR, by
# dtype: native math differs from NumPy's by a few ulp, and fused or
# reassociated sums by a few more; wrong rules are off by far more.
TIGHT = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 1e-3}
# Ops whose result changes discontinuously (or whose derivative does) at some
# input: their decision at each point is part of the point's fingerprint.
_KINKS = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
          "logical_not", "abs", "sign", "floor", "ceil", "round", "maximum", "minimum",
          "argmax", "argmin", "pow", "sqrt", "log", "log1p", "reduce_max", "reduce_min", "where",
          "argsort", "cond"}
# A result that differs from the interpreter's is compared again allowing, per element,
# SPREAD_FACTOR times the largest change that moving every float intermediate of the
# interpreter's evaluation by one ulp (at random, SPREAD_RUNS times) makes to it: the
# rounding uncertainty of that element at this point (rounding_spread). Two correct
# evaluations differ by a few ulp at a few places (a libm result one ulp apart, a sum
# associated otherwise); where one ulp anywhere moves an element by more than the
# tolerance (a gradient whose terms of 5e302 cancel, seed 3951; sin of a float32 carry
# of 7913, seed 1450), agreement to the tolerance says nothing. A wrong rule moves an
# element by far more than rounding does wherever the element is well conditioned,
# which is almost everywhere: the slack is zero where rounding does not matter.
SPREAD_RUNS, SPREAD_FACTOR = 4, 10.0
# Finite differences of a float32 program are of its float64 NumPy text. Where its float32
# evaluation is not determined by float32 arithmetic (moving the float32 intermediates by
# an ulp moves the derivative by more than RTOL1/RTOL2 of it: cos of 0 - x ** p = 2.4e8,
# whose ulp is 16, seed 4974; sin of a scan carry of prod(x) = 2.1e15, ulp 1.3e8, seed
# 9232), no float32 evaluation can agree with the float64 one: the comparison is not made
# ("fd_ill_conditioned" in `checked`) if the difference is within SPREAD_FACTOR times that
# spread, and a mismatch otherwise. More runs than SPREAD_RUNS: the moves of two consecutive
# ops cancel with probability 1/3, and here the spread decides whether a comparison is made
# at all (the moves of 4974's pow and sub cancelled in all four runs).
FD_SPREAD_RUNS = 16
# Where those moves change a decision (a floor, a comparison), the spread is undefined: a
# native result is then accepted only if it is one of OUTCOME_RUNS such perturbed
# evaluations' results exactly (to the tolerance), "ill_conditioned_decision" in `checked`:
# floor(sin(x ** x / 2)) at x = 15.16, where a 1-ulp pow moves sin's argument of 4e17 by
# 64 (seed 7962).
OUTCOME_RUNS = 16
# Ops whose float result is exact (an input's values moved, selected or negated; an
# integer; a cast, mostly of a bool or an integer): rounding_spread leaves their results
# as they are, so that what a program relies on holds when the others move (x == max(x)
# in max's derivative; a mask made float is 0 or 1).
_EXACT = {"abs", "argmax", "argmin", "argsort", "broadcast_to", "cast", "ceil", "concatenate", "floor",
          "gather", "maximum", "minimum", "neg", "pad", "philox", "reduce_max", "reduce_min", "reshape",
          "round", "sign", "slice", "stop_gradient", "transpose", "unslice", "where"}
# op: (which input, the value where the op's derivative is singular).
_SINGULAR_AT = {"sqrt": (0, 0.0), "log": (0, 0.0), "log1p": (0, -1.0), "pow": (0, 0.0), "div": (1, 0.0)}


@dataclasses.dataclass
class Finding:
    """One disagreement or crash: `category` groups findings for the summary."""

    category: str
    detail: str


def configure():
    """Settings under which every path runs native code or raises (no silent fallback).

    Returns the previous values, for `restore`.
    """
    from gradtape.runtime import config
    from gradtape.tracer import backward_plan

    saved = {
        (config, "async_compile"): config.async_compile,
        (config, "compile_errors"): config.compile_errors,
        (backward_plan, "compile_after_runs"): getattr(backward_plan, "compile_after_runs", None),
    }
    config.async_compile = False      # a staged call runs its native code, not the interpreter
    config.compile_errors = "raise"   # an LLVM or codegen failure is a finding, not a warning
    if hasattr(backward_plan, "compile_after_runs"):
        backward_plan.compile_after_runs = 1  # the tape's backward compiles on its first run
    return saved


def restore(saved):
    for (module, name), value in saved.items():
        if value is not None:
            setattr(module, name, value)


def load(program: Program, namespace):
    """The function `f` of the program's text, with `gt` bound to `namespace`."""
    env = {"gt": namespace, "np": np}
    exec(WEIGHT_HELPER, env)
    exec(compile(program.source, f"<fuzz seed {program.seed}>", "exec"), env)
    return env["f"]


def check(program: Program, checked: set | None = None) -> list:
    """Every disagreement between gradtape's paths and the references on `program`.

    `checked`, when given, receives the independent checks that applied at the
    point ("first_order", "second_order": finite differences of the NumPy reference) and
    the differences accepted ("ill_conditioned": within the interpreter's rounding
    uncertainty; "fd_ill_conditioned": a float32 derivative not compared with finite
    differences, float32 rounding moving it by more than the tolerance; "masked_zero").
    """
    run = _Run(program)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        run.all()
    if checked is not None:
        checked.update(run.checked)
    return run.findings


class _Run:
    def __init__(self, program: Program):
        self.p = program
        self.args = list(program.inputs)
        self.n = len(self.args)
        self.argnums = tuple(range(self.n))
        self.findings = []
        self.f = load(program, gt)
        self.rtol = TIGHT[program.dtype]
        self.derivatives = {}  # path -> its result, for the independent check
        self.checked = set()
        self.spreads = {}  # (Function, args) -> rounding_spread, computed at a first mismatch

    def add(self, category, detail):
        self.findings.append(Finding(category, detail))

    @contextlib.contextmanager
    def path(self, name):
        """Run one path; an exception is a `crash:<path>` finding (the rest still run)."""
        try:
            yield
        except Exception as e:  # noqa: BLE001 - every exception is a finding
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            self.add(f"crash:{name}:{type(e).__name__}", f"{type(e).__name__}: {str(e)[:400]}\n{''.join(tb[-3:])}")

    def compare(self, path, got, want, check_dtype=True, reference=None, masked_zeros=False):
        """A mismatch finding if got is not want. `reference`: (Function, args, output index)
        whose interpreted value want is; a difference within want's rounding uncertainty
        (rounding_spread) is recorded as "ill_conditioned" in `checked`, not reported.
        `masked_zeros` (gradients): an element that is 0 on one side and NaN on the other is
        accepted where the forward is not finite everywhere (masked_zero_or_nan), and
        recorded as "masked_zero" in `checked`."""
        message = disagreement(got, want, self.rtol, check_dtype)
        if message and masked_zeros:
            accepted = masked_zero_or_nan(got, want)
            if accepted is not None and accepted.any() and not self.forward_finite():
                got = np.where(accepted, np.asarray(want), np.asarray(got)).astype(np.asarray(got).dtype)
                message = disagreement(got, want, self.rtol, check_dtype)
                self.checked.add("masked_zero")
        if message and reference is not None:
            fn, args, index = reference
            key = (id(fn), tuple(id(a) for a in args))
            spread = self.spread(fn, args)
            if spread is not None and not disagreement(got, want, self.rtol, check_dtype,
                                                       SPREAD_FACTOR * spread[index]):
                self.checked.add("ill_conditioned")
                return
            if spread is None and any(not disagreement(got, outcome[index], self.rtol, check_dtype)
                                      for outcome in self.outcomes(fn, args)):
                self.checked.add("ill_conditioned_decision")
                return
        if message:
            self.add(f"mismatch:{path}", message)

    def spread(self, fn, args, runs=SPREAD_RUNS):
        """rounding_spread(fn, args, runs), computed once per (fn, args, runs)."""
        key = (id(fn), tuple(id(a) for a in args), runs)
        if key not in self.spreads:  # (fn, args kept alive: no id is reused while cached)
            self.spreads[key] = (fn, args, rounding_spread(fn, args, runs))
        return self.spreads[key][2]

    def outcomes(self, fn, args):
        """rounding_outcomes(fn, args), computed once per (fn, args)."""
        key = (id(fn), tuple(id(a) for a in args), "outcomes")
        if key not in self.spreads:
            self.spreads[key] = (fn, args, rounding_outcomes(fn, args))
        return self.spreads[key][2]

    def forward_finite(self) -> bool:
        """Every input and every float intermediate of the forward is finite (cached)."""
        if getattr(self, "_forward_finite", None) is None:
            self._forward_finite = all(np.all(np.isfinite(a)) for a in self.args if np.asarray(a).dtype.kind == "f") \
                and _intermediates_finite(self.fwd_ir, self.args)
        return self._forward_finite

    def all(self):
        numpy_value = None
        with self.path("numpy"):
            numpy_value = np.asarray(load(self.p, numpy_reference.namespace)(*self.args))
        self.fwd_ir = self.grad_ir = None
        with self.path("make_ir"):
            self.fwd_ir = gt.make_ir(self.f, *self.args)
            self.grad_ir = gt.make_ir(gt.grad(self.f, argnums=self.argnums), *self.args)
        if self.fwd_ir is None or self.grad_ir is None:
            return
        # Cross-mode and finite-difference checks are as precise as the least
        # precise float anywhere in the program (a cast to float32 rounds tangents).
        floats = [v.type.dtype for e in self.fwd_ir.eqns for v in e.outvars if v.type.is_float]
        self.least = min((d for d in floats + [self.p.dtype] if d in TIGHT), key=lambda d: d.itemsize)
        self.loose = TIGHT[self.least]
        self.value = ir.eval_function(self.fwd_ir, self.args)[0]
        self.value_ref = (self.fwd_ir, self.args, 0)
        self.grads = ir.eval_function(self.grad_ir, self.args)
        self.evaluated = {"grad": (self.grad_ir, self.args, None)}  # family -> (Function, args, output)
        self.derivatives["grad"] = self.grads
        if numpy_value is not None:
            self.compare("interpreter_vs_numpy", self.value, numpy_value, reference=self.value_ref)
        self.staged()
        self.eager()
        self.value_plan()
        self.tape_staged()
        self.jvp()
        self.vmap_grad()
        self.hvp()
        with self.path("finite_differences"):
            self.finite_differences()

    def staged(self):
        with self.path("staged"):
            value, grads = gt.value_and_grad(self.f, argnums=self.argnums)(*self.args)
            self.derivatives["staged_grad"] = grads
            self.compare("staged_value", value, self.value, reference=self.value_ref)
            for i, (g, r) in enumerate(zip(grads, self.grads)):
                self.compare(f"staged_grad[{i}]", g, r, reference=(self.grad_ir, self.args, i), masked_zeros=True)

    def eager(self):
        with self.path("eager"):
            xs = [gt.constant(a) for a in self.args]
            with gt.GradientTape() as tape:
                for x in xs:
                    tape.watch(x)
                y = self.f(*xs)
            grads = tape.gradient(y, xs)
            self.derivatives["tape_grad"] = [_zeros_if_none(g, r) for g, r in zip(grads, self.grads)]
            self.compare("eager_value", np.asarray(y), self.value, reference=self.value_ref)
            for i, (g, r) in enumerate(zip(grads, self.grads)):
                self.compare(f"eager_grad[{i}]", _zeros_if_none(g, r), r, reference=(self.grad_ir, self.args, i),
                             masked_zeros=True)

    def value_plan(self):
        """The value read from a tape by a compiled plan (tracer/value_plans.py), which a loop
        meets from its fifth read of a recording of 64 positions or more: here from the first
        read, however short the recording. A plan that fails warns and computes op by op:
        the warning is a finding."""
        with self.path("value_plan"):
            saved = value_plans.min_positions, value_plans.repeats
            value_plans.min_positions, value_plans.repeats = 1, 1
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", RuntimeWarning)
                    xs = [gt.constant(a) for a in self.args]
                    with gt.GradientTape() as tape:
                        for x in xs:
                            tape.watch(x)
                        y = self.f(*xs)
                    value = np.asarray(y)
            finally:
                value_plans.min_positions, value_plans.repeats = saved
            for w in caught:
                if "compiled plan failed" in str(w.message):
                    self.add("crash:value_plan", str(w.message)[:400])
            self.compare("value_plan", value, self.value, reference=self.value_ref)

    def tape_staged(self):
        staged = gt.differentiable(self.f)
        with self.path("differentiable"):
            self.compare("differentiable_value", staged(*self.args), self.value, reference=self.value_ref)
        with self.path("tape_staged"):
            xs = [gt.constant(a) for a in self.args]
            with gt.GradientTape() as tape:
                for x in xs:
                    tape.watch(x)
                y = staged(*xs)
            grads = tape.gradient(y, xs)
            self.derivatives["tape_staged_grad"] = [_zeros_if_none(g, r) for g, r in zip(grads, self.grads)]
            self.compare("tape_staged_value", np.asarray(y), self.value, reference=self.value_ref)
            for i, (g, r) in enumerate(zip(grads, self.grads)):
                self.compare(f"tape_staged_grad[{i}]", _zeros_if_none(g, r), r, reference=(self.grad_ir, self.args, i),
                             masked_zeros=True)

    def jvp(self):
        ts = list(self.p.tangents)
        n, f = self.n, self.f
        with self.path("jvp"):
            ref_ir = gt.make_ir(lambda *a: gt.jvp(f, tuple(a[:n]), tuple(a[n:])), *self.args, *ts)
            point = self.args + ts
            ref_value, ref_tangent = ir.eval_function(ref_ir, point)
            self.evaluated["jvp"] = (ref_ir, point, 1)
            value, tangent = gt.jvp(f, tuple(self.args), tuple(ts))
            self.derivatives["jvp"], self.derivatives["jvp_native"] = ref_tangent, tangent
            self.compare("jvp_value", value, ref_value, reference=(ref_ir, point, 0))
            self.compare("jvp_tangent", tangent, ref_tangent, reference=(ref_ir, point, 1))
            self.compare("jvp_interpreter_value", ref_value, self.value, reference=self.value_ref)
            # Forward and reverse mode agree: t . grad (where both are finite).
            products = [np.asarray(g, np.float64) * t for g, t in zip(self.grads, ts)]
            if all(np.all(np.isfinite(p)) for p in products) and np.isfinite(ref_tangent):
                want = sum(float(np.sum(p)) for p in products)
                scale = 1.0 + sum(float(np.sum(np.abs(p))) for p in products)
                if abs(float(ref_tangent) - want) > 10 * self.loose * scale:
                    self.add("mismatch:jvp_vs_grad", f"jvp tangent {float(ref_tangent)!r}, t.grad {want!r}")

    def vmap_grad(self):
        with self.path("vmap_grad"):
            batched = [np.stack([a, b]) for a, b in zip(self.args, self.p.batch)]
            out = gt.vmap(gt.grad(self.f, argnums=self.argnums))(*batched)
            for row, point in enumerate([self.args, list(self.p.batch)]):
                want = ir.eval_function(self.grad_ir, point)
                for i, (g, r) in enumerate(zip(out, want)):
                    self.compare(f"vmap_grad[{i}] row {row}", np.asarray(g)[row], r, reference=(self.grad_ir, point, i))

    def hvp(self):
        v, rest = self.p.tangents[0], self.args[1:]
        with self.path("hvp"):
            point = [self.args[0], v, *rest]
            ref_ir = gt.make_ir(gt.hvp(self.f), *point)
            ref = ir.eval_function(ref_ir, point)[0]
            self.hvp_ref = ref
            self.evaluated["hvp"] = (ref_ir, point, 0)
            native = gt.hvp(self.f)(self.args[0], v, *rest)
            self.derivatives["hvp"], self.derivatives["hvp_native"] = ref, native
            self.compare("hvp", native, ref, reference=(ref_ir, point, 0))

    def finite_differences(self):
        """Every path's first and second derivatives against central differences of the
        NumPy reference (independent.py), where the function is smooth at the point."""
        if not all(np.all(np.abs(a) < 1e4) for a in self.args):
            return  # not finite, or so large that x + h * t rounds back to x
        args = [np.asarray(a, np.float64) for a in self.args]
        ts = [np.asarray(t, np.float64) for t in self.p.tangents]
        plain = self.p.dtype == np.float64 and "gt.cast(" not in self.p.source
        f = independent.NumpyFunction(self.p, load)
        fp_ir = self.fwd_ir if plain else independent.float64_ir(self.p, load, args, f)
        if self.p.dtype != np.float64 and not independent.same(fingerprint(self.fwd_ir, self.args)[:-1],
                                                                 fingerprint(fp_ir, args)[:-1]):
            return  # float32 rounding takes another decision than float64 at the point
        first = independent.Line(f, fp_ir, fingerprint, args, ts).first()
        if first is not None:
            self.checked.add("first_order")
            self.first_order(first, ts)
        if self.p.dtype == np.float64 and not self.p.uses_stop_gradient and first is not None:
            self.hvp_vs_differences_of_grad(ts)
        second = independent.Line(f, fp_ir, fingerprint, args, ts[:1] + [0 * t for t in ts[1:]]).second()
        if second is not None and "hvp" in self.derivatives:
            self.checked.add("second_order")
            rtol = independent.RTOL2[self.least]
            for name in ("hvp", "hvp_native"):
                if name in self.derivatives:
                    self.against(name, independent.directional([self.derivatives[name]], ts[:1]), second, rtol,
                                 ts[:1])

    def first_order(self, first, ts):
        # A NaN or inf anywhere in the forward (even one no output depends on, as
        # sqrt(-1) dropped by take) makes 0 * NaN in the chain rule, as in JAX: a
        # non-finite derivative is a finding only when every intermediate is finite.
        intermediates_finite = None
        reverse = independent.directional(self.grads, ts)
        rtol = independent.RTOL1[self.least]
        for name, got in self.derivatives.items():
            if name.startswith("hvp"):
                continue
            if name.startswith("jvp"):
                value = float(np.asarray(got, np.float64))
                got = None if not np.isfinite(value) else (value, 0.0 if reverse is None else reverse[1])
            else:
                got = independent.directional(got, ts)
            if got is None:
                if intermediates_finite is None:
                    intermediates_finite = _intermediates_finite(self.fwd_ir, self.args)
                if intermediates_finite:
                    self.add(f"nonfinite_derivative_at_smooth_point:{name}",
                             f"{self.derivatives[name]}, finite differences {first[0]!r}")
                continue
            self.against(name, got, first, rtol, ts)

    def against(self, name, got, reference, rtol, ts):
        """A mismatch finding if the derivative `got` of path `name` along `ts` is not the
        finite-difference `reference`; in a float32 program, not one where float32 rounding
        alone moves it by more than the tolerance (fd_rounding_spread): "fd_ill_conditioned"."""
        if got is None:
            return
        message = independent.off_by(got[0], got[1], reference[0], reference[1], rtol)
        if message and self.least != np.float64:
            spread = self.fd_rounding_spread(name, ts)
            scale = 1.0 + abs(reference[0]) + got[1]
            if (spread is not None and spread > rtol * scale
                    and abs(got[0] - reference[0]) <= rtol * scale + 10 * reference[1] + SPREAD_FACTOR * spread):
                self.checked.add("fd_ill_conditioned")
                return
        if message:
            self.add(f"mismatch:{name}_vs_finite_differences", message)

    def fd_rounding_spread(self, name, ts) -> float | None:
        """How far moving the float32 intermediates of the interpreter's evaluation of path
        `name`'s derivative by an ulp moves it along ts (rounding_spread, FD_SPREAD_RUNS
        times): the gradient's t . grad, the JVP's tangent, the HVP's t0 . H t0. None where
        unknown (a move changes a decision or finiteness)."""
        family = "hvp" if name.startswith("hvp") else "jvp" if name.startswith("jvp") else "grad"
        if family not in self.evaluated:
            return None
        fn, args, index = self.evaluated[family]
        spread = self.spread(fn, args, FD_SPREAD_RUNS)
        if spread is None:
            return None
        if index is not None:
            spread = [spread[index]]
        return sum(float(np.sum(np.abs(np.asarray(t, np.float64)) * s)) for t, s in zip(ts, spread))

    def hvp_vs_differences_of_grad(self, ts):
        """The whole HVP vector against differences of the interpreter's gradient."""
        hvp_ref = getattr(self, "hvp_ref", None)
        if hvp_ref is None or not np.all(np.isfinite(hvp_ref)):
            return
        grad0 = _Grad0(self.grad_ir)
        fd_h = smooth_directional_derivative(grad0, self.args, ts[:1] + [np.zeros_like(t) for t in ts[1:]],
                                             fingerprint_fn=self.fwd_ir)
        if fd_h is None:
            return
        estimate, spread = fd_h
        scale = 1.0 + np.max(np.abs(estimate))
        if np.max(np.abs(hvp_ref - estimate)) > 1e-5 * scale + 10 * np.max(spread):
            self.add("mismatch:hvp_vs_differences_of_grad", f"hvp {hvp_ref}, finite differences of grad {estimate}")


class _Grad0:
    """The interpreter's gradient w.r.t. argument 0, as a function of all arguments."""

    def __init__(self, grad_ir):
        self.grad_ir = grad_ir

    def __call__(self, args):
        return np.asarray(ir.eval_function(self.grad_ir, args)[0], np.float64)


def _evaluate(fn, args):
    if isinstance(fn, _Grad0):
        return fn(args)
    return np.asarray(ir.eval_function(fn, args)[0], np.float64)


def fingerprint(fn: ir.Function, args) -> list:
    """Every discrete decision the forward makes at `args` (comparisons, signs at kinks,
    which element a max picks, which values are finite): equal
    fingerprints at nearby points mean no kink or domain edge lies between them.

    The last entry is True when finite differences do not apply: some op sits
    exactly on a singularity of its derivative (sqrt, log or a power at 0, a
    division by 0), where the chain rule gives inf or NaN even where the
    function is locally constant (norm(0 * x)), as in JAX; or a value is
    rounded to a narrower float.
    """
    return _decisions(fn, args)[1]


def _decisions(fn: ir.Function, args, perturb=None):
    """(fn's outputs at args, fingerprint). `perturb` (a numpy Generator): every float result
    of an op that rounds (not _EXACT; of fn's equations, not of the bodies of loops inside them) is multiplied by
    1 - eps, 1 or 1 + eps at random (eps of its dtype: a move of about one ulp) before the
    ops after it read it; the fingerprint is still of the decisions each op takes."""
    prints = []
    singular = False

    def record(op, *vals, **params):
        nonlocal singular
        out = np.asarray(rule(impls, op, "reference")(*vals, **params))
        result = out
        if perturb is not None and out.dtype.kind == "f" and op.name not in _EXACT:
            ulps = perturb.integers(-1, 2, size=out.shape)
            result = (out * (1 + ulps * np.finfo(out.dtype).eps).astype(out.dtype)).astype(out.dtype)
        if out.dtype.kind == "f":
            prints.append(np.isfinite(out))
        name = op.name
        if name in _SINGULAR_AT and np.any(np.asarray(vals[_SINGULAR_AT[name][0]]) == _SINGULAR_AT[name][1]):
            singular = True
        if name == "call":  # an equation of several results, one result at a time (interpret._several)
            inner = params["fn"].eqns[0]
            if inner.op.name == "cond" and inner.inputs[0] in params["fn"].invars:
                prints.append(np.asarray(vals[params["fn"].invars.index(inner.inputs[0])]))
        if name == "cast" and out.dtype.kind == "f" and out.dtype.itemsize < np.asarray(vals[0]).dtype.itemsize:
            # Rounding to float32 is a step function (derivative 0 almost everywhere),
            # differentiated as the identity: finite differences cannot check it.
            singular = True
        if name in _KINKS:
            if name in ("maximum", "minimum"):
                prints.append(np.sign(np.asarray(vals[0]) - np.asarray(vals[1])))
            elif name in ("abs", "sign", "pow", "sqrt", "log", "log1p"):
                prints.append(np.sign(np.asarray(vals[0]) + (1 if name == "log1p" else 0)))
            elif name in ("reduce_max", "reduce_min"):
                axes = params.get("axes", ())
                kept = np.expand_dims(out, tuple(axes)) if out.ndim < np.ndim(vals[0]) else out
                prints.append(np.asarray(vals[0]) == kept)
            elif name in ("where", "cond"):
                prints.append(np.asarray(vals[0]))  # the mask, or the branch taken
            else:
                prints.append(out)
        return result

    with np.errstate(all="ignore"):
        outs = ir.eval_function(fn, args, bind=record)
    return outs, prints + [singular]


def rounding_spread(fn: ir.Function, args, runs=SPREAD_RUNS) -> list | None:
    """Per output of fn at args, per element: the largest change in `runs` evaluations
    with every float intermediate moved by about one ulp at random (_decisions); 0 where
    the element is not finite. None where a move changes a decision (a tie, a comparison
    at the rounding's edge) or an element's finiteness: rounding is then not the question."""
    base, decisions = _decisions(fn, args)
    base = [np.asarray(b, np.float64) for b in base]
    spread = [np.zeros(b.shape) for b in base]
    rng = np.random.default_rng(0)  # the same moves on every run: reproducible
    for _ in range(runs):
        outs, moved_decisions = _decisions(fn, args, perturb=rng)
        if len(moved_decisions) != len(decisions) or not all(
                np.shape(a) == np.shape(b) and np.array_equal(a, b, equal_nan=True)
                for a, b in zip(moved_decisions, decisions)):
            return None
        for s, b, o in zip(spread, base, outs):
            o = np.asarray(o, np.float64)
            finite = np.isfinite(b)
            if not np.array_equal(finite, np.isfinite(o)):
                return None
            with np.errstate(invalid="ignore"):
                np.maximum(s, np.where(finite, np.abs(o - b), 0.0), out=s)
    return spread


def rounding_outcomes(fn: ir.Function, args, runs=OUTCOME_RUNS) -> list:
    """The outputs of `runs` evaluations of fn at args with every float intermediate moved by
    about one ulp at random (rounding_spread's moves), decisions free to change.

    Where such moves change a decision (rounding_spread is None), the program's result is
    decided by rounding: a native result equal to one of these outcomes is explained by a
    last-bit difference upstream (a 1-ulp pow feeding sin of 4e17, then floor: seed 7962),
    and is recorded as "ill_conditioned_decision", not reported. Any other result still is."""
    rng = np.random.default_rng(1)
    return [_decisions(fn, args, perturb=rng)[0] for _ in range(runs)]


def smooth_directional_derivative(fn, args, direction, h=1e-5, fingerprint_fn=None):
    """(estimate, spread) of the derivative of fn at args along direction, or None.

    None when the function is not smooth enough there for finite differences to
    be trusted: a value is not finite, a decision (fingerprint) differs between
    the points evaluated, or the estimates at steps h and h/2 disagree (a kink,
    a domain edge or a steep region closer than the step).
    """
    fp_fn = fingerprint_fn if fingerprint_fn is not None else fn
    base = fingerprint(fp_fn, args)
    if base[-1]:
        return None
    estimates = []
    for step in (h, h / 2):
        values = []
        for sign in (1, -1):
            point = [np.asarray(a + sign * step * d, np.float64) for a, d in zip(args, direction)]
            if not independent.same(fingerprint(fp_fn, point), base):
                return None
            values.append(_evaluate(fn, point))
        if not all(np.all(np.isfinite(v)) for v in values):
            return None
        estimates.append((values[0] - values[1]) / (2 * step))
    coarse, fine = estimates
    spread = np.abs(coarse - fine)
    if np.any(spread > 1e-4 * (1 + np.abs(fine))):
        return None
    return (4 * fine - coarse) / 3, spread  # Richardson: the h^2 error terms cancel


def masked_zero_or_nan(got, want):
    """Where one of two gradients is NaN and the other is 0 (of either sign): a bool array
    shaped like want, or None if the shapes differ.

    The adjoint pass carries the mask of a `where` (clip, relu, maximum: any select)
    backwards through elementwise ops and zeroes the cotangent outside it after each rule
    (ir/adjoint.py, docs/tape.md): the cotangent is known to be exactly 0 there, a symbolic
    zero per element, and multiplying it by an infinite partial derivative gives 0, not the
    NaN of 0 * inf. JAX's symbolic zeros (whole arrays) skip the same products. Like
    JAX's, the knowledge stops where an equation is not elementwise: at a loop, whose VJP
    runs on dense zeros. The tape unrolls gt.while_loop (and scan, fori_loop) into
    elementwise steps, so the mask reaches further on the tape than in the staged IR
    (seed 8562: x * stop_gradient(x) at x = inf, a while_loop, then clip: 0 on the tape,
    0 * inf = NaN in the interpreter). The two differ only where a partial derivative is
    not finite, so only where the forward is not finite everywhere is this accepted."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype.kind != "f" or want.dtype.kind != "f":
        return None
    return (np.isnan(got) & (want == 0)) | (np.isnan(want) & (got == 0))


def _intermediates_finite(fn, args) -> bool:
    finite = True

    def record(op, *vals, **params):
        nonlocal finite
        out = np.asarray(rule(impls, op, "reference")(*vals, **params))
        finite = finite and (out.dtype.kind != "f" or bool(np.all(np.isfinite(out))))
        return out

    with np.errstate(all="ignore"):
        ir.eval_function(fn, args, bind=record)
    return finite


def _zeros_if_none(g, like):
    # The tape's gradient of an unconnected source is None (TensorFlow's default).
    return np.zeros_like(like) if g is None else np.asarray(g)


def disagreement(got, want, rtol, check_dtype=True, slack=None) -> str | None:
    """Why `got` differs from `want` beyond rtol (None if it does not).

    NaN must be NaN, inf must be the same inf; finite values agree to
    rtol * |want| + rtol * (1 + max |want|) (the second term: absolute
    error of sums whose terms cancel is relative to the terms, not the sum),
    plus `slack` (an array shaped like want: per element) when given.
    """
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    if check_dtype and got.dtype != want.dtype:
        return f"dtype {got.dtype}, want {want.dtype}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if not np.array_equal(nan_g, nan_w):
        return f"NaN at different positions:\n got {got!r}\nwant {want!r}"
    inf = np.isinf(g) | np.isinf(w)
    if not np.array_equal(g[inf], w[inf]):
        return f"inf at different positions:\n got {got!r}\nwant {want!r}"
    fin = ~(nan_g | inf)
    if fin.any():
        scale = 1.0 + np.max(np.abs(w[fin]))
        err = np.abs(g[fin] - w[fin])
        allowed = rtol * np.abs(w[fin]) + rtol * scale
        if slack is not None:
            allowed = allowed + np.broadcast_to(slack, w.shape)[fin]
        if np.any(err > allowed):
            return f"values differ (max abs error {np.max(err):.3g}):\n got {got!r}\nwant {want!r}"
    return None
