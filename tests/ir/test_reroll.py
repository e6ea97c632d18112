"""ir.reroll: the copies of a loop body a Python `for` loop leaves in a Function become one
scan, whose values are the unrolled program's bit for bit, in the interpreter and in native
code, and whose derivatives match finite differences to second order."""
import logging

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.reroll import reroll
from gradtape.runtime import compile_function
from gradtape.testing import check_function_grads

RNG = np.random.default_rng(7)
H = RNG.normal(size=4) * 0.5
W = RNG.normal(size=(4, 4)) * 0.4
U = RNG.normal(size=(4, 3)) * 0.4
B = RNG.normal(size=4) * 0.1
XS = RNG.normal(size=(9, 3))


@pytest.fixture(autouse=True)
def small_loops_too(monkeypatch):
    """Loops of any size are rolled here (by default only those of 128 equations or more)."""
    monkeypatch.setattr(ir.config, "reroll_min_equations", 0)


def recurrence(x):
    for _ in range(12):
        x = x * 1.01 + 0.1 * gt.tanh(x) - 0.01 * gt.exp(x)
    return x


def rnn(h, w, u, b, xs):
    """Closed-over weights, x[i] per step, the states appended to a list and stacked."""
    states = []
    for i in range(xs.shape[0]):
        h = gt.tanh(w @ h + u @ xs[i] + b)
        states.append(h)
    return gt.stack(states), h


def lstm(h, c, w, xs):
    n = h.shape[0]
    total = 0.0
    for t in range(xs.shape[0] - 1):
        gates = gt.concatenate([xs[t], h, xs[t], h]) * w[0] + w[1]
        forget, ingate = gt.sigmoid(gates[:n]), gt.sigmoid(gates[n:2 * n])
        outgate, change = gt.sigmoid(gates[2 * n:3 * n]), gt.tanh(gates[3 * n:])
        c = c * forget + ingate * change
        h = outgate * gt.tanh(c)
        total = total + gt.sum(xs[t + 1] * (h - gt.log(gt.sum(gt.exp(h)) + 2)))
    return total


def rk4(theta, y, steps=10, dt=0.05):
    def f(y):
        return -theta * y + 0.5 * gt.sin(y)
    s = 0.0
    for _ in range(steps):
        k1 = f(y)
        k2 = f(y + 0.5 * dt * k1)
        k3 = f(y + 0.5 * dt * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        s = s + gt.sum(y * y)
    return s


def nested(x, w):
    for _ in range(5):
        for _ in range(4):
            x = gt.tanh(x * w + 0.3)
        x = x + 0.5 * gt.sigmoid(x)
    return x


def varying_linear(x):
    for i in range(8):
        x = gt.tanh(x) * (1.0 + 0.1 * i)
    return x


def varying_squares(x):
    for i in range(8):
        x = gt.tanh(x) * (1.0 + 0.01 * i * i) - 0.05 * i
    return x


def last_differs(x):
    for i in range(8):
        x = gt.tanh(x) + 0.5
        if i < 7:
            x = x * 1.1
    return x


def chain(x):
    """W7's chain (bench/workloads.py): a period of four equations, 25 times."""
    for i in range(100):
        k = i % 4
        x = gt.sin(x) if k == 0 else x * 1.01 if k == 1 else x + 0.1 if k == 2 else gt.tanh(x)
    return x


X = np.linspace(-1.2, 0.9, 5)
CASES = {
    "recurrence": (recurrence, (X,)),
    "rnn": (rnn, (H, W, U, B, XS)),
    "lstm": (lstm, (H, H[::-1].copy(), RNG.normal(size=(2, 16)) * 0.5, RNG.normal(size=(7, 4)))),
    "rk4": (rk4, (np.linspace(0.5, 1.5, 4), np.linspace(-1, 1, 4))),
    "nested": (nested, (X, 0.7)),
    "varying_linear": (varying_linear, (X,)),
    "varying_squares": (varying_squares, (X,)),
    "last_differs": (last_differs, (X,)),
    "chain": (chain, (np.linspace(-1, 1, 16),)),
}


def rolled(name):
    f, args = CASES[name]
    fn = gt.make_ir(f, *args)
    return fn, reroll(fn), [np.asarray(a, dtype=np.float64) for a in args]


def scans(fn) -> int:
    return str(fn).count("= scan[")


def assert_same_bits(xs, ys):
    assert len(xs) == len(ys)
    for x, y in zip(xs, ys):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes(), np.max(np.abs(x - y))


# Ops whose native values may depend on the loop around them: a float sum adds in the order of
# its loop's vectorization. (Math functions do not: codegen/math_libmvec.py.)
LOOP_DEPENDENT = {"reduce_sum"}


def native_exact(fn) -> bool:
    return not any(e.op.name in LOOP_DEPENDENT for e in fn.eqns) and all(
        native_exact(e.params["body"]) for e in fn.eqns if e.op.name == "scan")


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_are_the_unrolled_programs_bits_interpreted_and_native(name):
    fn, r, args = rolled(name)
    ir.verify(r)
    assert scans(r) >= 1 and len(r.eqns) < len(fn.eqns) / 4
    assert_same_bits(ir.eval_function(r, args), ir.eval_function(fn, args))
    unrolled, loop = compile_function(fn), compile_function(r)
    assert unrolled.native and loop.native
    if native_exact(fn):
        assert_same_bits(loop(*args), unrolled(*args))
    else:
        # The loop body is compiled as its own loops, so such values may round differently
        # in the last bits (docs/control_flow.md).
        for a, b in zip(loop(*args), unrolled(*args)):
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=0)


def test_a_sum_of_the_loop_result_is_the_same_but_for_the_last_bit_in_native_code():
    _, _, args = rolled("nested")
    unrolled = gt.make_ir(lambda x, w: gt.sum(nested(x, w)), *args)
    loop = reroll(unrolled)
    assert_same_bits(ir.eval_function(loop, args), ir.eval_function(unrolled, args))
    a, b = (compile_function(f)(*args)[0] for f in (unrolled, loop))
    assert abs(a - b) <= 2 * np.spacing(abs(a))


def test_a_loop_is_one_scan_with_its_weights_as_constants_and_rows_as_xs():
    fn, r, _ = rolled("rnn")
    text = r.pretty()
    top = [e for e in r.eqns]
    assert [e.op.name for e in top].count("scan") == 1, text
    (loop,) = [e for e in top if e.op.name == "scan"]
    p = loop.params
    assert (p["length"], p["n_carry"], p["n_xs"]) == (9, 1, 1)
    # xs[i] is read as the scanned input made of xs itself, and the stacked states are the
    # scan's stacked output, with no concatenate or per-step slice left around the loop.
    assert not {"concatenate", "tanh", "contract"} & {e.op.name for e in top}, text
    assert r.outvars[0] is loop.outvars[1] and r.outvars[1] is loop.outvars[0]
    body = p["body"]
    assert [e.op.name for e in body.eqns].count("tanh") == 1
    # The weights enter as constants of the loop: inputs of the Function itself.
    assert set(loop.inputs[2:]) == {r.invars[1], r.invars[2], r.invars[3]}


def test_nested_loops_are_a_scan_in_a_scan():
    _, r, _ = rolled("nested")
    (outer,) = [e for e in r.eqns if e.op.name == "scan"]
    assert outer.params["length"] == 5
    (inner,) = [e for e in outer.params["body"].eqns if e.op.name == "scan"]
    assert inner.params["length"] == 4 and scans(inner.params["body"]) == 0


def test_a_varying_python_constant_is_a_scanned_input():
    for name in ("varying_linear", "varying_squares"):
        _, r, _ = rolled(name)
        (loop,) = [e for e in r.eqns if e.op.name == "scan"]
        assert loop.params["length"] == 8
        literals = [a for a in loop.inputs if isinstance(a, ir.Literal) and a.value.shape == (8,)]
        assert literals, r.pretty()
    _, r, _ = rolled("varying_linear")
    assert native_exact(r)
    np.testing.assert_array_equal([lit.value for lit in r.eqns[0].inputs if isinstance(lit, ir.Literal)][0],
                                  [1.0 + 0.1 * i for i in range(8)])


def test_the_last_iteration_that_differs_stays_unrolled():
    fn, r, _ = rolled("last_differs")
    (loop,) = [e for e in r.eqns if e.op.name == "scan"]
    assert loop.params["length"] == 7
    after = [e.op.name for e in r.eqns[r.eqns.index(loop) + 1:]]
    assert after == ["tanh", "add"]


def test_the_chain_of_w7_is_four_ops_25_times():
    _, r, _ = rolled("chain")
    (loop,) = [e for e in r.eqns if e.op.name == "scan"]
    assert loop.params["length"] == 25
    assert [e.op.name for e in loop.params["body"].eqns] == ["sin", "mul", "add", "tanh"]
    assert sum(native_exact(f) for f in (rolled(name)[0] for name in CASES)) >= 5


def pow_of_a_varying_exponent(x):
    for i in range(8):
        x = gt.sin(x) ** (1 + i % 2)
    return gt.sum(x)


def two_back(x):
    a, b = x, x * 0.5
    for _ in range(8):
        a, b = b, gt.tanh(a + b)
    return b


def diagonal(x):
    for i in range(6):
        x = x + gt.tanh(x[i:i + 1, i:i + 1])
    return x


def three_steps(x):
    for _ in range(3):
        x = gt.sin(x) * 2.0
    return x


@pytest.mark.parametrize("f, args", [(pow_of_a_varying_exponent, (X,)), (two_back, (X,)),
                                     (diagonal, (np.eye(6),)), (three_steps, (X,))])
def test_what_is_not_rolled_stays_as_it_was(f, args):
    fn = gt.make_ir(f, *args)
    assert reroll(fn) is fn


def window(h, xs):
    for i in range(xs.shape[0] - 2):
        h = gt.tanh(h * 0.5 + gt.sum(xs[i:i + 3], axis=0))
    return h


def carried_index(h):
    for i in range(5):
        h = h + gt.tanh(h[i])
    return h


def squared_index(h, xs):
    for i in range(4):
        h = gt.tanh(h * 0.5 + xs[:, i * i])
    return h


@pytest.mark.parametrize("f, args, where", [
    (window, (X, np.arange(60.0).reshape(12, 5) / 35), "gather[axis=0] b const<i64[10,3]>"),
    (carried_index, (X,), "gather[axis=0] a b"),
    (squared_index, (X, np.arange(85.0).reshape(5, 17) / 40), "gather[axis=1] b const<i64[4,1]>")])
def test_slices_whose_start_is_not_a_row_moving_by_a_step_are_gathers(f, args, where):
    fn = gt.make_ir(f, *args)
    r = reroll(fn)
    assert scans(r) == 1 and where in str(r), r.pretty()
    args = [np.asarray(a, np.float64) for a in args]
    assert_same_bits(ir.eval_function(r, args), ir.eval_function(fn, args))
    assert_same_bits(compile_function(r)(*args), compile_function(fn)(*args))
    check_function_grads(r, args, order=2)


@pytest.mark.parametrize("name", ["recurrence", "rnn", "rk4", "nested", "varying_squares", "last_differs"])
def test_derivatives_to_second_order_match_finite_differences(name):
    _, r, args = rolled(name)
    check_function_grads(r, args, order=2)


def test_the_reverse_mode_of_the_loop_gives_the_unrolled_gradient():
    fn, r, args = rolled("lstm")
    wrt = list(range(len(args)))
    seed = [np.array(1.0)]
    (ga, gb) = (ir.eval_function(ir.vjp(f, wrt)[0], args + seed)[1:] for f in (fn, r))
    for a, b in zip(ga, gb):
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=1e-15)


def test_off_min_trips_and_min_equations(monkeypatch):
    fn, _, _ = rolled("recurrence")
    monkeypatch.setattr(ir.config, "reroll", False)
    assert reroll(fn) is fn
    monkeypatch.setattr(ir.config, "reroll", True)
    monkeypatch.setattr(ir.config, "reroll_min_trips", 13)
    assert reroll(fn) is fn
    monkeypatch.setattr(ir.config, "reroll_min_trips", 12)
    assert scans(reroll(fn)) == 1
    per_step = len(fn.eqns) // 12
    monkeypatch.setattr(ir.config, "reroll_min_equations", 12 * per_step + 1)
    assert reroll(fn) is fn
    monkeypatch.setattr(ir.config, "reroll_min_equations", 12 * per_step)
    assert scans(reroll(fn)) == 1


@pytest.mark.parametrize("enabled", [True, False])
def test_the_pass_runs_with_the_collector_off_and_leaves_it_as_it_was(enabled, monkeypatch):
    # what the pass makes lives until it ends: collections would walk it in vain (gc_pause.py)
    import gc

    from gradtape.ir import reroll as reroll_module

    fn, r, args = rolled("recurrence")
    seen = []
    real = reroll_module._rolled

    def spy(*a, **k):
        seen.append(gc.isenabled())
        return real(*a, **k)

    monkeypatch.setattr(reroll_module, "_rolled", spy)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        again = reroll(fn)
        assert seen and not any(seen) and gc.isenabled() is enabled  # (the body of a loop too)
    finally:
        (gc.enable if was else gc.disable)()
    assert str(again) == str(r)


def test_by_default_a_loop_of_fewer_than_128_equations_stays_unrolled(monkeypatch):
    monkeypatch.undo()
    assert ir.config.reroll_min_equations == 128
    x = np.linspace(-1, 1, 16)
    short = gt.make_ir(chain, x)   # 100 equations
    assert reroll(short) is short
    longer = gt.make_ir(lambda x: chain(chain(x)), x)
    assert scans(reroll(longer)) == 1
    # 8 x (5 x 3 + 1) = 128 equations: the outer loop is rolled; its inner one, 8 x 5 x 3 = 120
    # equations in all its copies, stays unrolled in the body.
    def nest(x):
        for _ in range(8):
            for _ in range(5):
                x = gt.tanh(x * 0.9 + 0.3)
            x = x * 1.1
        return x
    assert scans(reroll(gt.make_ir(nest, x))) == 1


def test_the_log_says_what_was_rolled(caplog):
    fn, _, _ = rolled("nested")
    with caplog.at_level(logging.INFO, logger="gradtape"):
        reroll(fn, "nested(x)")
    text = caplog.text
    assert "reroll nested(x): 5 iterations of" in text and "inner loop: 4 iterations of 3 equations" in text


def test_two_loops_over_one_list_make_two_scans_reading_one_stacked_output():
    def f(h, xs):
        outs = []
        for i in range(xs.shape[0]):
            h = gt.tanh(h + xs[i])
            outs.append(gt.sum(h * h))
        return sum(outs)   # Python's sum: a chain of adds over the list, itself a loop

    args = [X, RNG.normal(size=(7, 5))]
    fn = gt.make_ir(f, *args)
    r = reroll(fn)
    first, second = [e for e in r.eqns if e.op.name == "scan"]
    assert second.inputs[1] is first.outvars[1]   # the second loop scans the first one's stacked sums
    assert_same_bits(ir.eval_function(r, args), ir.eval_function(fn, args))


def test_rows_taken_before_the_loop_and_a_column_slice_are_read_in_place():
    def rows_first(h, xs):
        rows = [xs[i] for i in range(xs.shape[0])]
        for row in rows:
            h = gt.tanh(h + row)
        return h

    def columns(h, xs):
        for i in range(xs.shape[1]):
            h = gt.tanh(h * 0.5 + xs[:, i])
        return h

    def backwards(h, xs):
        for i in reversed(range(0, xs.shape[0], 2)):
            h = gt.tanh(h * 0.5 + xs[i])
        return h

    for f, xs in ((rows_first, RNG.normal(size=(7, 5))), (columns, RNG.normal(size=(5, 7))),
                  (backwards, RNG.normal(size=(12, 5)))):
        fn = gt.make_ir(f, X, xs)
        r = reroll(fn)
        assert scans(r) == 1 and "concatenate" not in str(r), r.pretty()
        assert_same_bits(ir.eval_function(r, [X, xs]), ir.eval_function(fn, [X, xs]))
