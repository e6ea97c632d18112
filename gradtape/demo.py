"""Demo: optimization loops with gradtape, timed against the same loop in plain NumPy.

    python -m gradtape.demo [--steps 500] [--seed 0] [--plot loss.png]

1. A 2-32-32-2 tanh MLP learns to separate two interleaved spirals
   (generated here), trained by Adam with `gradtape.train_step`: loss,
   gradient and Adam update run as one native call per step. The loop is
   then timed beside the same loop written in NumPy with hand-derived
   gradients (and beside the eager GradientTape loop), in this run.
2. The 100-dimensional Rosenbrock function is minimized by SciPy's L-BFGS-B
   through `gradtape.scipy.minimize` (when SciPy is installed): one
   compiled value-and-gradient call per function evaluation.

`--plot FILE` writes the loss curves (needs matplotlib).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import gradtape as gt
from gradtape import optimizers

SIZES = (2, 32, 32, 2)


# --- the model -------------------------------------------------------------------------

def spirals(n_per_class: int, rng) -> tuple:
    """Two interleaved spirals in the plane: points (2n, 2) and labels (2n,)."""
    t = np.sqrt(rng.uniform(0.05, 1.0, n_per_class)) * 3 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (3 * np.pi)
    x = np.concatenate([arm, -arm]) + rng.normal(0, 0.02, (2 * n_per_class, 2))
    y = np.concatenate([np.zeros(n_per_class, int), np.ones(n_per_class, int)])
    return x, y


def init_params(rng, sizes=SIZES) -> list:
    """[w0, b0, w1, b1, ...] as float64 NumPy arrays (scaled normal weights, zero biases)."""
    params = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        params += [rng.normal(0, 1 / np.sqrt(m), (m, n)), np.zeros(n)]
    return params


def loss_fn(params, x, onehot):
    """Mean softmax cross-entropy of the tanh MLP, in gradtape functions."""
    h = x
    for w, b in zip(params[0:-2:2], params[1:-2:2]):
        h = gt.tanh(h @ w + b)
    logits = h @ params[-2] + params[-1]
    return -gt.mean(gt.sum(onehot * gt.log_softmax(logits, axis=-1), axis=-1))


def accuracy(params, x, y) -> float:
    h = x
    for w, b in zip(params[0:-2:2], params[1:-2:2]):
        h = np.tanh(h @ np.asarray(w) + np.asarray(b))
    logits = h @ np.asarray(params[-2]) + np.asarray(params[-1])
    return float(np.mean(np.argmax(logits, axis=1) == y))


# --- the same loop in plain NumPy, gradients by hand ----------------------------------

def numpy_adam_step(params, x, onehot, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    """A one-step function doing what train_step(loss_fn, Adam(lr)) does, in NumPy.

    Forward, hand-derived backward and Adam (Keras's formulas, as
    gradtape.optimizers.Adam) update `params` in place; returns the loss.
    """
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    t = [0]
    n = len(x)

    def step():
        hs = [x]
        for w, b in zip(params[0:-2:2], params[1:-2:2]):
            hs.append(np.tanh(hs[-1] @ w + b))
        logits = hs[-1] @ params[-2] + params[-1]
        z = logits - logits.max(axis=1, keepdims=True)
        log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        loss = -np.mean(np.sum(onehot * log_p, axis=1))
        delta = (np.exp(log_p) - onehot) / n
        grads = [None] * len(params)
        for k in range(len(params) // 2 - 1, -1, -1):
            grads[2 * k] = hs[k].T @ delta
            grads[2 * k + 1] = delta.sum(axis=0)
            if k:
                delta = (delta @ params[2 * k].T) * (1.0 - hs[k] * hs[k])
        t[0] += 1
        alpha = lr * np.sqrt(1.0 - beta_2 ** t[0]) / (1.0 - beta_1 ** t[0])
        for p, g, m_p, v_p in zip(params, grads, m, v):
            m_p += (g - m_p) * (1.0 - beta_1)
            v_p += (g * g - v_p) * (1.0 - beta_2)
            p -= m_p * alpha / (np.sqrt(v_p) + epsilon)
        return loss

    return step


def tape_adam_step(params, x, onehot, lr):
    """The eager loop: a GradientTape records the loss, Adam's apply_gradients updates Variables."""
    variables = [gt.Variable(p) for p in params]
    opt = optimizers.Adam(lr)

    def step():
        with gt.GradientTape() as tape:
            loss = loss_fn(variables, x, onehot)
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    return step


def seconds_per_step(step, n: int, repeats: int = 3) -> float:
    """The best of `repeats` timings of n calls of step(), per call."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


# --- the demo ---------------------------------------------------------------------------

def train_mlp(steps: int, lr: float, seed: int, points: int, log=print) -> dict:
    """Part 1: the compiled training loop, its progress, and its timing beside NumPy."""
    rng = np.random.default_rng(seed)
    x, y = spirals(points // 2, rng)
    onehot = np.eye(2)[y]
    init = init_params(rng)
    params = [p.copy() for p in init]
    step = gt.train_step(loss_fn, optimizers.Adam(lr))
    log(f"1. A {'-'.join(map(str, SIZES))} tanh MLP on {len(x)} points of two spirals: Adam (lr={lr}), "
        "gradtape.train_step")
    log(f"{'step':>8s} {'loss':>9s} {'accuracy':>9s}")
    losses = []
    every = max(1, steps // 10)
    t0 = time.perf_counter()
    for k in range(1, steps + 1):
        losses.append(step(params, x, onehot))
        if k == 1 or k % every == 0 or k == steps:
            log(f"{k:8d} {losses[-1]:9.4f} {accuracy(params, x, y):9.1%}", flush=True)
    elapsed = time.perf_counter() - t0
    log(f"{steps} steps in {elapsed:.2f} s, including tracing and compiling the step")

    gt.runtime.wait_for_compiles()  # time native code, not the interpreter that served the first calls
    n = max(20, min(steps, 200))
    reference = [p.copy() for p in init]
    numpy_step = numpy_adam_step(reference, x, onehot, lr)
    for _ in range(steps):
        numpy_step()
    agreement = max(float(np.max(np.abs(a - b))) for a, b in zip(params, reference))
    timed = [p.copy() for p in init]
    compiled_step = gt.train_step(loss_fn, optimizers.Adam(lr))
    compiled_step(timed, x, onehot)
    gt.runtime.wait_for_compiles()
    t_compiled = seconds_per_step(lambda: compiled_step(timed, x, onehot), n)
    t_numpy = seconds_per_step(numpy_adam_step([p.copy() for p in init], x, onehot, lr), n)
    tape_step = tape_adam_step(init, x, onehot, lr)
    for _ in range(8):  # the tape's backward plan compiles at its 5th run
        tape_step()
    gt.runtime.wait_for_compiles()
    t_tape = seconds_per_step(tape_step, max(10, n // 4), repeats=2)
    log(f"Time per step, measured now ({n} steps, best of 3):")
    log(f"  compiled train_step (one native call)       {t_compiled * 1e6:9.1f} us")
    log(f"  plain NumPy, hand-written gradients         {t_numpy * 1e6:9.1f} us   "
        f"(compiled is {t_numpy / t_compiled:.1f}x faster)")
    log(f"  eager GradientTape + apply_gradients        {t_tape * 1e6:9.1f} us")
    log(f"  the NumPy loop's parameters after {steps} steps differ from train_step's by {agreement:.1e}")
    return {"losses": losses, "accuracy": accuracy(params, x, y), "agreement": agreement,
            "seconds_per_step": {"compiled": t_compiled, "numpy": t_numpy, "tape": t_tape}}


def rosenbrock(x):
    return gt.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def minimize_rosenbrock(dimension: int, log=print):
    """Part 2: L-BFGS-B through gradtape.scipy.minimize; None without SciPy."""
    try:
        import scipy.optimize  # noqa: F401  (imported here, outside the timing)
    except ImportError:
        log("2. Rosenbrock with L-BFGS-B: skipped, SciPy is not installed (python -m pip install -e \".[demo]\")")
        return None
    log(f"2. The {dimension}-dimensional Rosenbrock function from x = 0: SciPy's L-BFGS-B, "
        "gradtape.scipy.minimize")
    history = []

    def progress(intermediate_result):  # SciPy >= 1.11 passes the OptimizeResult under this name
        if not hasattr(intermediate_result, "fun"):
            return
        history.append(float(intermediate_result.fun))
        if len(history) % 100 == 0:
            log(f"{len(history):8d} iterations, f = {history[-1]:.3e}", flush=True)

    t0 = time.perf_counter()
    res = gt.scipy.minimize(rosenbrock, np.zeros(dimension), method="L-BFGS-B", callback=progress,
                            options={"maxiter": 5000})
    elapsed = time.perf_counter() - t0
    log(f"{res.nit:8d} iterations, f = {res.fun:.3e}, max |x - 1| = {np.max(np.abs(res.x - 1.0)):.1e} "
        f"in {elapsed:.2f} s including compiling ({res.message})")
    log(f"  {res.nfev} function evaluations = {res.gradtape_calls['value_and_grad']} compiled "
        "value-and-gradient calls (SciPy's fun and jac share each)")
    return {"result": res, "history": history}


def plot(path: str, losses, rosen_history, log=print) -> bool:
    """Write the loss curves to `path`; False (with a message) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log(f"--plot {path}: matplotlib is not installed (python -m pip install -e \".[demo]\")")
        return False
    panels = 2 if rosen_history else 1
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 3.6), squeeze=False)
    ax = axes[0][0]
    ax.plot(np.arange(1, len(losses) + 1), losses)
    ax.set(xlabel="step", ylabel="cross-entropy", yscale="log", title="MLP on two spirals (Adam)")
    if rosen_history:
        ax = axes[0][1]
        ax.plot(np.arange(1, len(rosen_history) + 1), rosen_history)
        ax.set(xlabel="iteration", ylabel="f(x)", yscale="log", title="Rosenbrock, L-BFGS-B")
    fig.subplots_adjust(left=0.1 / panels + 0.02, right=0.98, bottom=0.15, top=0.9, wspace=0.3)  # tight_layout costs ~1 s
    fig.savefig(path, dpi=120)
    plt.close(fig)
    log(f"wrote the loss curves to {path}")
    return True


def main(argv=None, *, points: int = 200, dimension: int = 100, log=print) -> dict:
    """Run the demo; returns what it printed as numbers (the tests read them).

    Args:
      argv: command-line arguments (--steps, --lr, --seed, --plot).
      points: number of spiral points; dimension: Rosenbrock's dimension.
      log: where lines go (print).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="training steps of the MLP (default 500)")
    parser.add_argument("--lr", type=float, default=0.02, help="Adam's learning rate (default 0.02)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", metavar="FILE", help="write the loss curves to FILE (e.g. loss.png)")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    summary = {"mlp": train_mlp(args.steps, args.lr, args.seed, points, log)}
    log("")
    summary["rosenbrock"] = minimize_rosenbrock(dimension, log)
    if args.plot:
        history = summary["rosenbrock"]["history"] if summary["rosenbrock"] else None
        summary["plot"] = plot(args.plot, summary["mlp"]["losses"], history, log)
    return summary


if __name__ == "__main__":
    main()
