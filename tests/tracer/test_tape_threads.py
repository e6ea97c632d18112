"""The stack of active tapes is per thread, as in TensorFlow."""
import threading

import numpy as np

import gradtape as gt


def run_in_thread(fn):
    """Run fn in a new thread; re-raise its exception here."""
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 (handed back to the test)
            box["error"] = e

    t = threading.Thread(target=target)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "thread did not finish"
    if "error" in box:
        raise box["error"]
    return box.get("result")


def test_a_tape_does_not_record_ops_from_another_thread():
    x = gt.constant(3.0)
    with gt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y_other = run_in_thread(lambda: x * x)
        assert run_in_thread(gt.GradientTape.current) is None
        y_here = x * x
    assert tape.gradient(y_other, x) is None
    np.testing.assert_allclose(tape.gradient(y_here, x).numpy(), 6.0)


def test_variables_read_in_another_thread_are_not_watched():
    v = gt.Variable(2.0)
    with gt.GradientTape() as tape:
        y = run_in_thread(lambda: v * v)
    assert tape.watched_variables() == ()
    assert tape.gradient(y, v) is None


def test_a_tape_entered_in_a_thread_is_not_current_here():
    entered, release = threading.Event(), threading.Event()

    def hold_tape():
        with gt.GradientTape():
            entered.set()
            release.wait(30)

    t = threading.Thread(target=hold_tape)
    t.start()
    try:
        assert entered.wait(30)
        assert gt.GradientTape.current() is None
        x = gt.constant(1.0)
        _ = x * x  # must not reach the other thread's tape
    finally:
        release.set()
        t.join(30)


def test_two_threads_with_their_own_tapes_concurrently():
    # Both threads hold their tapes open at the same time (a barrier forces
    # the interleaving) and run many ops, with a shared Variable read by both.
    shared = gt.Variable(1.5)
    barrier = threading.Barrier(2, timeout=30)
    steps = 200

    def worker(kind):
        x0 = np.linspace(-1.0, 1.0, 5) + (0.1 if kind == "sin" else 0.2)
        x = gt.constant(x0)
        with gt.GradientTape() as tape:
            tape.watch(x)
            barrier.wait()  # both tapes are recording now
            y = x
            for _ in range(steps):
                # Identity-preserving chains keep the numbers easy to check
                # while interleaving many recorded ops across threads.
                y = y * 1.0
            if kind == "sin":
                out = gt.sin(y) * shared  # d/dx = cos(x) * s ; d/ds = sum(sin x)
            else:
                out = gt.exp(y) * shared * shared  # d/dx = exp(x) s^2 ; d/ds = 2 s sum(exp x)
            barrier.wait()  # neither leaves before the other recorded everything
            assert gt.GradientTape.current() is tape
        gx, gs = tape.gradient(out, [x, shared])
        return x0, gx.numpy(), gs.numpy(), tape.watched_variables()

    results = {}

    def run(kind):
        results[kind] = worker(kind)

    threads = [threading.Thread(target=run, args=(k,)) for k in ("sin", "exp")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert set(results) == {"sin", "exp"}, "a worker failed"

    s = 1.5
    x0, gx, gs, watched = results["sin"]
    np.testing.assert_allclose(gx, np.cos(x0) * s)
    np.testing.assert_allclose(gs, np.sum(np.sin(x0)))
    assert watched == (shared,)
    x0, gx, gs, watched = results["exp"]
    np.testing.assert_allclose(gx, np.exp(x0) * s * s)
    np.testing.assert_allclose(gs, 2 * s * np.sum(np.exp(x0)))
    assert watched == (shared,)


def test_many_threads_each_with_nested_tapes():
    def second_derivative(k):
        x = gt.constant(float(k))
        with gt.GradientTape() as outer:
            outer.watch(x)
            with gt.GradientTape() as inner:
                inner.watch(x)
                y = x ** 3
            g = inner.gradient(y, x)
        return k, g.item(), outer.gradient(g, x).item()

    results = []
    lock = threading.Lock()

    def run(k):
        r = second_derivative(k)
        with lock:
            results.append(r)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [(k, 3.0 * k * k, 6.0 * k) for k in range(1, 9)]


def test_threads_started_one_after_another_each_record_on_their_own_tape():
    """A thread's state may take the address of one that ended: the recorder must find each
    thread's own tape stack all the same (the C bind keeps the last thread's)."""
    def gradient_in_a_thread(scale):
        def step():
            x = gt.constant([1.0, 2.0])
            with gt.GradientTape() as tape:
                tape.watch(x)
                y = gt.sum(gt.sin(x) * scale)
            return tape.gradient(y, x).numpy()
        return run_in_thread(step)

    for scale in (1.0, 2.0, 3.0, 4.0):
        np.testing.assert_allclose(gradient_in_a_thread(scale), scale * np.cos([1.0, 2.0]))
        x = gt.constant([0.5])
        with gt.GradientTape() as tape:  # and this thread's own, in between
            tape.watch(x)
            y = gt.exp(x) * scale
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), scale * np.exp([0.5]))
