"""Staged functions, AOT functions, train steps and optimizers pickled and run in another process.

The receiver is a fresh `spawn` process: it imports gradtape anew and shares nothing with the test
process but the pickle. A compiled signature must run there bit for bit as here, without tracing or
compiling; one whose machine code was built for another CPU must compile again from its IR.
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle

import numpy as np
import pytest

import gradtape as gt
from gradtape.aot import AotError

from . import functions as fx

SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture(scope="module")
def worker():
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
        yield pool


def _equal(a, b):
    la, lb = gt.tracer.tree.flatten(a), gt.tracer.tree.flatten(b)
    return len(la) == len(lb) and all(np.array_equal(x, y) and np.asarray(x).dtype == np.asarray(y).dtype
                                      for x, y in zip(la, lb))


def _staged_cases():
    w, X, y = fx.data()
    x = np.linspace(-1.0, 2.0, 5)
    return [
        ("grad", gt.grad(fx.logistic_loss), (w, X, y)),
        ("value_and_grad", gt.value_and_grad(fx.logistic_loss), (w, X, y)),
        ("differentiable", gt.differentiable(fx.wavy), (x,)),
        ("decorated with a static argument", fx.decorated, (x, 3)),
        ("grad of a decorated function", gt.grad(fx.decorated, static_argnums=(1,)), (x, 2)),
        ("hvp", gt.hvp(fx.wavy), (x, np.ones(5))),
        ("jacobian", gt.jacobian(gt.grad(fx.wavy)), (x,)),
        ("hessian", gt.hessian(fx.logistic_loss), (w, X, y)),
        ("vmap", gt.vmap(fx.wavy), (X,)),
    ]


@pytest.mark.parametrize("case", range(len(_staged_cases())), ids=[c[0] for c in _staged_cases()])
def test_compiled_staged_function_runs_in_a_spawned_process_without_tracing_or_compiling(worker, case):
    name, f, args = _staged_cases()[case]
    here = fx.warm(f, *args)
    there, again, info, runtime_misses = worker.submit(fx.run_unpickled, pickle.dumps(f), args).result()
    assert _equal(there, here) and _equal(again, here), name
    assert info.traces == 0 and info.compiles == 0 and info.misses == 0, (name, info)
    assert runtime_misses == 0, name


def test_the_unpickled_gradient_is_the_gradient(worker):
    w, X, y = fx.data(1)
    g = gt.grad(fx.logistic_loss)
    fx.warm(g, w, X, y)
    there = worker.submit(fx.run_unpickled, pickle.dumps(g), (w, X, y)).result()[0]
    np.testing.assert_allclose(there, fx.logistic_grad_np(w, X, y), rtol=1e-12, atol=1e-15)


def test_a_receiver_on_another_cpu_compiles_the_ir_again_instead_of_loading_the_code(worker):
    w, X, y = fx.data(2)
    g = gt.value_and_grad(fx.logistic_loss)
    here = fx.warm(g, w, X, y)
    there, again, info, runtime_misses = worker.submit(
        fx.run_unpickled, pickle.dumps(g), (w, X, y), True).result()
    assert info.traces == 0 and info.compiles == 1, info
    assert runtime_misses == 1
    np.testing.assert_allclose(again[1], here[1], rtol=1e-13)
    np.testing.assert_allclose(again[0], here[0], rtol=1e-13)


def test_an_unpickled_signature_never_called_here_still_is_not_traced(worker):
    # A signature traced (e.g. by gradtape.compile's tracing) but run only in the interpreter travels as IR.
    x = np.linspace(0.0, 1.0, 4)
    f = gt.grad(fx.wavy)
    gt.make_ir(fx.wavy, x)  # no effect on f: its cache is empty, so nothing travels but the function
    there, _, info, _ = worker.submit(fx.run_unpickled, pickle.dumps(f), (x,)).result()
    np.testing.assert_allclose(there, fx.wavy_grad_np(x), rtol=1e-13)
    assert info.traces == 1  # nothing was cached here: the receiver traces, as a fresh function would


def test_aot_function_pickles_with_its_machine_code(worker):
    w, X, y = fx.data(3)
    compiled = gt.compile(gt.value_and_grad(fx.logistic_loss), w, X, y)
    here = compiled(w, X, y)
    there, _, _, runtime_misses = worker.submit(fx.run_unpickled, pickle.dumps(compiled), (w, X, y)).result()
    assert _equal(there, here)
    assert runtime_misses == 0
    np.testing.assert_allclose(there[1], fx.logistic_grad_np(w, X, y), rtol=1e-12)


def test_aot_function_on_another_cpu_compiles_again(worker):
    w, X, y = fx.data(4)
    compiled = gt.compile(gt.grad(fx.logistic_loss), w, X, y)
    there, _, _, runtime_misses = worker.submit(
        fx.run_unpickled, pickle.dumps(compiled), (w, X, y), True).result()
    assert runtime_misses == 1
    np.testing.assert_allclose(there, compiled(w, X, y), rtol=1e-13)


def test_a_loaded_aot_function_for_another_cpu_cannot_be_unpickled(worker, tmp_path):
    w, X, y = fx.data(5)
    gt.compile(gt.grad(fx.logistic_loss), w, X, y).save(tmp_path / "g.gtc")
    loaded = gt.load(tmp_path / "g.gtc")
    with pytest.raises(AotError, match="built for another machine or version .*cpu: .* carries no IR"):
        worker.submit(fx.run_unpickled, pickle.dumps(loaded), (w, X, y), True).result()


def test_train_step_and_its_optimizer_state_travel(worker):
    w, X, y = fx.data(6)
    step = gt.train_step(fx.logistic_loss, gt.optimizers.Adam(0.05))
    w_here = w.copy()
    step(w_here, X, y)
    gt.runtime.wait_for_compiles()
    step(w_here, X, y)
    step(w_here, X, y)
    data = pickle.dumps((w_here, step))
    w_there, loss_there, info, iterations = worker.submit(fx.run_train_step, data, X, y).result()
    loss_here = step(w_here, X, y)
    assert loss_there == loss_here and np.array_equal(w_there, w_here)
    assert iterations == 4 and info.traces == 0 and info.compiles == 0


def test_optimizer_pickled_with_its_parameters_keeps_their_slots():
    p = gt.Variable(np.array([1.0, -2.0]))
    opt = gt.optimizers.Adam(0.1)
    g = np.array([0.5, 0.25])
    opt.apply_gradients([(g, p)])
    p2, opt2 = pickle.loads(pickle.dumps((p, opt)))
    assert opt2.iterations == 1
    np.testing.assert_array_equal(opt2.get_slot(p2, "momentum"), opt.get_slot(p, "momentum"))
    np.testing.assert_allclose(opt.get_slot(p, "momentum"), 0.1 * g, rtol=1e-15)  # Adam's m after one step
    opt.apply_gradients([(g, p)])
    opt2.apply_gradients([(g, p2)])
    np.testing.assert_array_equal(p2.numpy(), p.numpy())


def test_pool_map_over_a_compiled_gradient():
    g = gt.grad(fx.wavy)
    xs = [np.linspace(-1.0, 1.0, 6) * k for k in range(1, 5)]
    fx.warm(g, xs[0])
    with SPAWN.Pool(2) as pool:
        results = pool.map(g, xs)
    for x, r in zip(xs, results):
        np.testing.assert_allclose(r, fx.wavy_grad_np(x), rtol=1e-13)
        assert np.array_equal(r, g(x))


def test_process_pool_executor_over_a_compiled_gradient(worker):
    g = gt.grad(fx.wavy)
    xs = [np.linspace(0.0, 3.0, 6) + k for k in range(4)]
    fx.warm(g, xs[0])
    for x, r in zip(xs, worker.map(g, xs)):
        assert np.array_equal(r, g(x))
        np.testing.assert_allclose(r, fx.wavy_grad_np(x), rtol=1e-13)


def test_a_lambda_says_why_it_cannot_be_pickled():
    with pytest.raises(pickle.PicklingError, match="cannot pickle a staged function of .*<lambda>: .* Define it at "
                                                   "the top level of a module"):
        pickle.dumps(gt.grad(lambda x: gt.sum(x * x)))


@pytest.mark.parametrize("kind", ["vjp", "linearize"])
def test_a_pullback_and_a_linear_map_travel_with_their_machine_code(worker, kind):
    x = np.linspace(-1.0, 2.0, 5)
    if kind == "vjp":
        _, later = gt.vjp(fx.wavy, x)
        arg = (np.array(1.5),)
    else:
        _, later = gt.linearize(fx.wavy, x)
        arg = (np.linspace(0.5, 1.0, 5),)
    here = fx.warm(later, *arg)
    there, again, _, runtime_misses = worker.submit(fx.run_unpickled, pickle.dumps(later), arg).result()
    assert _equal(there, here) and _equal(again, here), kind
    assert runtime_misses == 0  # loaded, not compiled
    # and the numbers are the derivative's: wavy's gradient (NumPy) times the cotangent, or dotted with the tangent
    want = 1.5 * fx.wavy_grad_np(x) if kind == "vjp" else fx.wavy_grad_np(x) @ arg[0]
    np.testing.assert_allclose(np.asarray(gt.tracer.tree.flatten(here)[0]), want, rtol=1e-13)


def test_a_pullback_made_inside_a_trace_says_why_it_cannot_be_pickled():
    def f(x):
        _, pullback = gt.vjp(fx.wavy, x)
        with pytest.raises(pickle.PicklingError, match="made inside a trace: its residuals are abstract"):
            pickle.dumps(pullback)
        return pullback(1.0)[0]

    gt.differentiable(f)(np.linspace(0.0, 1.0, 3))
