"""ADBench-like: GMM, bundle adjustment, hand tracking and LSTM (Srajer, Kukelova and
Fitzgibbon 2018), objective and derivative, as ratios to hand NumPy and JAX in one run.

    python bench/adbench_like.py [--quick] [--only gmm,ba,hand,lstm] [--rounds N] [--clock wall|cpu]
    python bench/adbench_like.py --only hand --hand-form chained --sizes 100,800,3200,12800
    PYTHONPATH=. /path/to/venv-with-jax/bin/python bench/adbench_like.py --quick

The objectives are ours, written from the benchmark's definitions with NumPy
calls (`gmm_objective.py`, `ba_objective.py`, `hand_objective.py`,
`lstm_objective.py`; the same code runs on NumPy, gradtape and jax.numpy),
on synthetic data of the benchmark's sizes. The derivatives are ADBench's:

  gmm   the gradient of the negative log-likelihood w.r.t. alphas, means, icf;
  ba    the Jacobian's (p, 3, 15) row blocks (each observation's 2 reprojection
        residuals and 1 weight residual w.r.t. its camera's 11 parameters, its
        point's 3 and its weight): gradtape.vmap(gradtape.jacobian(...)) over the
        observations (its "auto" mode: reverse, 3 rows against 15 columns),
        `batch_jacobian` on a tape, jax.vmap(jax.jacrev(...)) (jacfwd measured
        1.5-2x slower for both: 15 tangents against 3 cotangents);
  hand  the (n, 3, 26) Jacobian of the correspondence residuals w.r.t. the pose,
        `gradtape.jacobian` (forward mode by shape) against jax.jacfwd; --hand-form
        picks how the objective is written: einsum3 (the skinning as one
        three-operand einsum over the vertices, then the n rows gathered), chained
        (each point's weights and base position gathered, then two chained
        einsums over the n points) or gathered (two chained einsums over the
        vertices, then a flat gather of 3n elements);
  lstm  the gradient w.r.t. the main and extra parameters.

Contenders, timed in turn (best of rounds, wall clock): `numpy` the objective
on NumPy arrays (no hand-written derivatives exist for these: the derivative
columns are ratios to the NumPy objective too); `staged` gradtape's staged
functions (`differentiable`, `grad`, `jacobian`, `vmap(jacobian)`); `tape` the
objective recorded on a GradientTape and its value, gradient or Jacobian
read; `jax` `jax.jit` of the same, when JAX imports. PyTorch is not written
here (it was not installed where this was made; its import is only reported).

Before any timing every derivative is checked, and a mismatch stops the run:
each contender's objective against NumPy's, gradtape's derivative against a
central finite difference of the NumPy objective along a random direction,
the tape's and JAX's derivatives against gradtape's staged one.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import gradtape as gt  # noqa: E402
import ba_objective as ba  # noqa: E402
import gmm_objective as gmm  # noqa: E402
import hand_objective as hand  # noqa: E402
import lstm_objective as lstm  # noqa: E402
from _timing import fmt  # noqa: E402

try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = jnp = None
try:
    import torch  # noqa: F401
except ImportError:
    torch = None

SIZES = {  # ADBench's sizes (GMM: N=1000 and 10k points; BA: ba1 is n=49, m=7776, p=31843;
    # hand: 100 to 12,800 correspondences; LSTM: 2 or 4 layers, 1,024 or 4,096 characters, 14 wide)
    "quick": {"gmm": [(1000, 10, 8)], "ba": [(16, 1000, 4000)], "hand": [(100,), (1600,)],
              "lstm": [(2, 128)]},
    "full": {"gmm": [(1000, 10, 10), (1000, 25, 32), (10000, 25, 32)], "ba": [(49, 7776, 31843), (257, 65132, 225911)],
             "hand": [(100,), (400,), (1600,), (6400,), (12800,)], "lstm": [(2, 1024), (4, 1024), (2, 4096)]},
    "tiny": {"gmm": [(20, 3, 3)], "ba": [(3, 10, 20)], "hand": [(10,)], "lstm": [(2, 6)]},
}


class _JaxNumpy:
    """jax.numpy, with the sigmoid lstm_objective looks for (else it calls NumPy's exp)."""

    def __getattr__(self, name):
        return getattr(jnp, name)

    @staticmethod
    def sigmoid(x):
        return jax.nn.sigmoid(x)


def _ready(x):
    return jax.block_until_ready(x)


def _on_tape(objective, params, derivative):
    """Record objective(gt, *watched) on a tape; read its value (derivative=None) or its
    gradient / Jacobian (derivative(tape, out, watched))."""
    def run():
        watched = [gt.constant(p) for p in params]
        with gt.GradientTape() as tape:
            for w in watched:
                tape.watch(w)
            out = objective(gt, *watched)
        if derivative is None:
            return out.numpy()
        got = derivative(tape, out, watched)
        return [g.numpy() for g in got] if isinstance(got, list) else got.numpy()
    return run


class Case:
    """One problem at one size: its parameters (the differentiated arrays), objective(np_,
    *params) with the data closed over, and each contender's objective and derivative."""

    def __init__(self, name, label, params, objective, staged_obj, staged_der, tape_der, jax_obj, jax_der, jvp):
        self.name, self.label, self.params, self.objective, self.jvp = name, label, params, objective, jvp
        self.obj = {"numpy": lambda: objective(np, *params), "staged": staged_obj,
                    "tape": _on_tape(objective, params, None)}
        self.der = {"staged": staged_der, "tape": _on_tape(objective, params, tape_der)}
        if jax is not None:
            self.obj["jax"], self.der["jax"] = jax_obj, jax_der


def _jax_fns(objective_jnp, params, derivative, data=()):
    """(objective, derivative) under jax.jit, on device arrays made once."""
    if jax is None:
        return None, None
    jp = [jnp.asarray(p) for p in params]
    jd = [jnp.asarray(d) for d in data]
    obj, der = jax.jit(objective_jnp), jax.jit(derivative)
    return (lambda: np.asarray(_ready(obj(*jp, *jd))),
            lambda: _as_numpy(_ready(der(*jp, *jd))))


def _as_numpy(x):
    return [np.asarray(v) for v in x] if isinstance(x, (tuple, list)) else np.asarray(x)


def gradient_jvp(grads, v):
    return sum(np.sum(g * d) for g, d in zip(grads, v))


def gmm_case(n, k, d):
    alphas, means, icf, x = gmm.inputs(n, k, d)
    params = (alphas, means, icf)

    def objective(np_, a, m, q, x=x):
        return gmm.gmm_objective(np_, a, m, q, x)
    staged_obj = gt.differentiable(lambda a, m, q, x: gmm.gmm_objective(gt, a, m, q, x))
    staged_der = gt.grad(lambda a, m, q, x: gmm.gmm_objective(gt, a, m, q, x), argnums=(0, 1, 2))
    jobj = jder = None
    if jax is not None:
        jn = _JaxNumpy()
        f = lambda a, m, q, x: gmm.gmm_objective(jn, a, m, q, x)  # noqa: E731
        jobj, jder = _jax_fns(f, params, jax.grad(f, argnums=(0, 1, 2)), (x,))
    return Case("gmm", f"N={n} K={k} D={d}", params, objective,
                lambda: np.asarray(staged_obj(*params, x)), lambda: _as_numpy(staged_der(*params, x)),
                lambda tape, out, w: tape.gradient(out, w), jobj, jder, gradient_jvp)


def ba_case(n, m, p):
    cams, x, w, obs, feats = ba.inputs(n, m, p)
    rows = ba.observation_rows(cams, x, w, obs)

    def objective(np_, z):
        return ba.observation_residuals(np_, z, feats)
    staged_obj = gt.differentiable(lambda c, x, w, o, f: ba.ba_objective(gt, c, x, w, o, f))
    staged_der = gt.vmap(gt.jacobian(lambda z, f: ba.observation_residuals(gt, z, f)))
    jobj = jder = None
    if jax is not None:
        jn = _JaxNumpy()
        one = lambda z, f: ba.observation_residuals(jn, z, f)  # noqa: E731
        jobj, _ = _jax_fns(lambda c, x, w, o, f: ba.ba_objective(jn, c, x, w, o, f), (cams, x, w, obs, feats), one)
        _, jder = _jax_fns(one, (rows,), jax.vmap(jax.jacrev(one)), (feats,))
    case = Case("ba", f"n={n} m={m} p={p}", (rows,), objective,
                lambda: np.asarray(staged_obj(cams, x, w, obs, feats)), lambda: np.asarray(staged_der(rows, feats)),
                lambda tape, out, z: tape.batch_jacobian(out, z[0]), jobj, jder,
                lambda blocks, v: np.einsum("pij,pj->pi", blocks, v[0]))
    # the objective ADBench times: gathered from the cameras and points (the derivative's rows are gathered once)
    case.obj["numpy"] = lambda: ba.ba_objective(np, cams, x, w, obs, feats)
    case.obj["tape"] = _on_tape(lambda np_, c: ba.ba_objective(np_, c, x, w, obs, feats), (cams,), None)
    return case


HAND_FORM = ["einsum3"]  # --hand-form: which of hand_objective.FORMS the hand rows time


def hand_case(n):
    theta, model, corr, points = hand.inputs(n)
    form = hand.FORMS[HAND_FORM[0]]

    def objective(np_, th):
        return form(np_, th, model, corr, points)
    f = lambda th, c, p: form(gt, th, model, c, p)  # noqa: E731
    staged_obj, staged_der = gt.differentiable(f), gt.jacobian(f)
    jobj = jder = None
    if jax is not None:
        jn = _JaxNumpy()
        fj = lambda th, c, p: form(jn, th, model, c, p)  # noqa: E731
        jobj, jder = _jax_fns(fj, (theta,), jax.jacfwd(fj), (corr, points))
    return Case("hand", f"n={n}", (theta,), objective,
                lambda: np.asarray(staged_obj(theta, corr, points)), lambda: np.asarray(staged_der(theta, corr, points)),
                lambda tape, out, th: tape.jacobian(out, th[0]), jobj, jder, lambda J, v: J @ v[0])


def _lstm_jax_scan(main, extra, state, sequence):
    """lstm_objective for JAX with lax.scan over the characters, as a JAX user writes it (the
    Python loop unrolled under jax.jit compiles for minutes at 128 characters)."""
    jn = _JaxNumpy()

    def step(carry, xs):
        s, total = carry
        x, following = xs
        ypred, s = lstm.lstm_predict(jn, main, extra, list(s), x)
        return (tuple(s), total + jnp.sum(following * (ypred - jnp.log(jnp.sum(jnp.exp(ypred)) + 2)))), None
    (_, total), _ = jax.lax.scan(step, (tuple(state), 0.0), (sequence[:-1], sequence[1:]))
    return -total / ((sequence.shape[0] - 1) * sequence.shape[1])


def lstm_case(layers, characters):
    main, extra, state, sequence = lstm.inputs(characters, hidden=14, layers=layers)
    params = (main, extra)

    def objective(np_, mn, ex):
        return lstm.lstm_objective(np_, mn, ex, state, sequence)
    f = lambda mn, ex, s, q: lstm.lstm_objective(gt, mn, ex, s, q)  # noqa: E731
    staged_obj, staged_der = gt.differentiable(f), gt.grad(f, argnums=(0, 1))
    jobj = jder = None
    if jax is not None:
        fj = _lstm_jax_scan
        jobj, jder = _jax_fns(fj, params, jax.grad(fj, argnums=(0, 1)), (state, sequence))
    return Case("lstm", f"l={layers} c={characters}", params, objective,
                lambda: np.asarray(staged_obj(main, extra, state, sequence)),
                lambda: _as_numpy(staged_der(main, extra, state, sequence)),
                lambda tape, out, w: tape.gradient(out, w), jobj, jder, gradient_jvp)


CASES = {"gmm": gmm_case, "ba": ba_case, "hand": hand_case, "lstm": lstm_case}


def _max_deviation(got, want):
    got, want = (got, want) if isinstance(want, list) else ([got], [want])
    assert len(got) == len(want), (len(got), len(want))
    scale = max(np.max(np.abs(w)) for w in want) or 1.0
    return max(np.max(np.abs(np.asarray(g) - w)) for g, w in zip(got, want)) / scale


def check(case: Case, h: float = 1e-6, verbose: bool = True) -> None:
    """Assert every contender's objective and derivative before any timing."""
    want = case.obj["numpy"]()
    for name, fn in case.obj.items():
        dev = _max_deviation(fn(), want)
        assert dev < 1e-10, f"{case.name} {case.label}: {name} objective deviates {dev:.1e} from NumPy's"
    staged = case.der["staged"]()
    rng = np.random.default_rng(1)
    v = [rng.standard_normal(p.shape) for p in case.params]
    plus = case.objective(np, *[p + h * d for p, d in zip(case.params, v)])
    minus = case.objective(np, *[p - h * d for p, d in zip(case.params, v)])
    fd = (plus - minus) / (2 * h)
    dev = np.max(np.abs(case.jvp(staged, v) - fd)) / max(np.max(np.abs(fd)), 1e-300)
    assert dev < 1e-6, f"{case.name} {case.label}: staged derivative against finite differences: {dev:.1e}"
    report = [f"finite differences {dev:.0e}"]
    for name, fn in case.der.items():
        if name != "staged":
            d = _max_deviation(_as_numpy(fn()), staged)
            assert d < 1e-9, f"{case.name} {case.label}: {name} derivative deviates {d:.1e} from staged"
            report.append(f"{name} {d:.0e}")
    if verbose:
        print(f"  checked {case.name} {case.label}: staged derivative against " + ", ".join(report))


CLOCK = [time.perf_counter]  # --clock cpu: time.process_time


def interleaved(fns: dict, rounds: int, budget: float = 0.05) -> dict:
    """Best seconds per call of each function over `rounds` rounds run in turn; each function
    repeats within a round until `budget` seconds (at least once)."""
    clock = CLOCK[0]
    calls = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        fn()
        calls[name] = max(1, int(budget / max(time.perf_counter() - t0, 1e-7)))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = clock()
            for _ in range(calls[name]):
                fn()
            best[name] = min(best[name], (clock() - t0) / calls[name])
    return best


def check_all(sizes: str = "tiny", only=None, verbose: bool = False) -> None:
    """The correctness checks alone (the smoke test runs them at the tiny sizes)."""
    for name in only or CASES:
        for size in SIZES[sizes][name]:
            check(CASES[name](*size), verbose=verbose)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated: gmm,ba,hand,lstm")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--hand-form", default="einsum3", choices=sorted(hand.FORMS),
                        help="the hand objective's form: einsum3 (skinning as one three-operand einsum), "
                             "chained (per-point gathers, two chained einsums), gathered (two chained "
                             "einsums, a flat gather of 3n elements)")
    parser.add_argument("--sizes", default=None, help="comma-separated sizes for the hand rows (n)")
    parser.add_argument("--clock", default="wall", choices=("wall", "cpu"),
                        help="wall: elapsed time; cpu: the process's CPU time over all its threads "
                             "(leaves out the time other processes held the cores of a shared machine)")
    args = parser.parse_args(argv)
    HAND_FORM[0] = args.hand_form
    CLOCK[0] = time.process_time if args.clock == "cpu" else time.perf_counter
    sizes = dict(SIZES["quick" if args.quick else "full"])
    if args.sizes:
        sizes["hand"] = [(int(n),) for n in args.sizes.split(",")]
    peers = ["numpy", "staged", "tape"] + (["jax"] if jax is not None else [])
    print(f"gradtape {gt.__version__}; jax {jax.__version__ if jax else 'not installed'}; "
          f"torch {'installed (not written)' if torch else 'not installed'}; "
          f"GRADTAPE_THREADS={os.environ.get('GRADTAPE_THREADS', '-')} "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '-')}; load {os.getloadavg()[0]:.1f}")
    print(f"times ({args.clock} clock): best of rounds in turn; columns after `numpy` are x the NumPy objective's time"
          + ("; /jax: gradtape over JAX" if jax is not None else ""))
    head = f"{'problem':6s} {'size':22s} {'':10s} {'numpy':>9s}" + "".join(f" {p:>8s}" for p in peers[1:])
    if jax is not None:
        head += f" {'staged/jax':>10s} {'tape/jax':>8s}"
    print(head, flush=True)
    for name in args.only.split(","):
        for size in sizes[name]:
            t0 = time.perf_counter()
            case = CASES[name](*size)
            check(case)
            setup = time.perf_counter() - t0
            t_obj = interleaved(case.obj, args.rounds)
            t_der = interleaved(case.der, args.rounds)
            base = t_obj["numpy"]
            for kind, t in (("objective", t_obj), ("derivative", t_der)):
                line = f"{name:6s} {case.label:22s} {kind:10s} {fmt(base):>9s}"
                line += "".join(f" {t[p] / base:7.2f}x" if p in t else f" {'-':>8s}" for p in peers[1:])
                if jax is not None:
                    line += f" {t['staged'] / t['jax']:9.2f}x {t['tape'] / t['jax']:7.2f}x"
                print(line, flush=True)
            print(f"{'':29s}(built, compiled and checked in {setup:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
