"""The C recording hot path (gradtape/tracer/_crecord.c) against Recording.record in Python.

Each program below runs on a tape twice, once with either implementation
of `record`; the two recordings must be identical position by position
(structure, memo entries, values, leaves, positions of tensors), raise the
same errors, and give the same gradients. The programs cover every branch
of the C function: results of recorded ops, Variable reads (trainable, not,
assigned mid-tape), array, tensor and scalar constants, abstract operands,
Tensor subclasses (handed to Python), unhashable and object params, and
ops given their result (nested tapes, compiled calls).
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import gradtape as gt
from gradtape.ir.ops import elementwise, layout
from gradtape.tracer.trace import make_ir
from gradtape.ir.ops.indexing import gather_p
from gradtape.tracer import _crecord, deferred, dispatch, gradient_tape, recording
from gradtape.tracer import held_arrays as held_arrays_module
from gradtape.tracer.deferred import PendingTensor, is_pending
from gradtape.tracer.recording import Recording, in_creation_order

IMPLEMENTATIONS = {"python": Recording.record, "c": _crecord.record}

rng = np.random.default_rng(7)
X = rng.normal(size=(12, 5))
Y = (rng.random(12) < 0.5).astype(float)
W0 = rng.normal(size=5)
M = rng.normal(size=(3, 4))
M1 = M[:1]
MASK = rng.random((3, 4)) < 0.5


class Marked(gt.Tensor):
    """A Tensor subclass the C path does not know: it hands such ops to Python."""

    __slots__ = ()


def logreg(w, v):
    z = X @ w
    return [gt.mean(gt.softplus(z) - Y * z)]


def scalars(w, v):
    z = gt.sin(w)
    return [z * 2.0, 3 - z, z / np.float64(4.0), z**2, np.array(0.5) * z, gt.maximum(z, 0)]


def tensor_constants(w, v):
    c = gt.constant(W0)
    return [gt.sum(c * w + c), w * gt.constant(np.float32(2.0))]


def mixed_constants(w, v):  # an array and a scalar untracked in one op: Python makes both, in order
    m = gt.reshape(w[:4], (1, 4)) * M1
    return [gt.where(MASK, m, 0.0), gt.where(MASK, 1.5, m)]


HELD = rng.normal(size=5)  # writeable: held for checks (held_arrays.py)
HELD_0D = np.array(1.5)
HELD_POSITIVE, HELD_REVERSED = HELD > 0, HELD[::-1]  # a view: held too


def held_arrays(w, v):
    t = gt.asarray(HELD)  # a Tensor over a writeable array
    return [w * HELD + t,  # the array alone untracked (C's plain path), then the Tensor's
            w * HELD_0D - HELD,  # a 0-d array: Python's path
            gt.where(HELD_POSITIVE, w, HELD_REVERSED),
            t * v, v * t]


def variables(w, v):
    frozen = gt.Variable(W0, trainable=False)
    a = w * frozen + v
    v.assign(v * 2.0)  # a new read of v after the assign gets a new position
    return [a, w * v, frozen * 3.0]


def explicit_watch(w, v):
    frozen = gt.Variable(W0 * 0.5, trainable=False)
    counts = gt.Variable(np.arange(5))
    gt.GradientTape.current().watch(frozen)
    a = frozen * w
    frozen.assign(frozen * 2.0)
    b = frozen * 3.0  # still watched after the assign: it was watched explicitly
    return [a, b, w + counts, w * w]  # an integer variable read is watched, its reads not tracked


def params(w, v):
    m = gt.reshape(gt.concatenate([w, w, w[:2]]), (3, 4))
    return [gt.sum(m, axis=0), gt.transpose(m), gt.sum(m * M, axis=(0, 1), keepdims=True)]


def subclass_operand(w, v):
    return [Marked(np.ones(5)) * w, w + Marked(np.arange(5.0))]


TANH_DOT = gt.differentiable(lambda a, b: gt.sum(gt.tanh(a) * b))


def compiled_call(w, v):  # a call is computed at once: recorded with its result given
    return [TANH_DOT(w, v), w * 2.0]


def custom(w, v):
    @gt.custom_gradient
    def square(x):
        def grad(dy):
            return 2.0 * x * dy

        return x * x, grad

    return [square(w) + v]


def same_op_other_params(w, v):  # one op on one type with params that differ, alternating
    m = gt.reshape(gt.concatenate([w, w, w[:2]]), (3, 4))
    out = []
    for axis in (0, 1, 0, (0, 1), 1, (0, 1), None):
        out.append(gt.sum(m, axis=axis))
    for shape in ((4, 3), (12,), (4, 3), (2, 6)):
        out.append(gt.reshape(m, shape) * 2.0)
    return out


def long_chain(w, v):  # more results than C remembers: early ones found in var_of again
    first = w * v
    x = first
    for _ in range(1500):
        x = gt.sin(x)
    return [x + first, x * w]


PROGRAMS = [logreg, scalars, tensor_constants, mixed_constants, held_arrays, variables, explicit_watch, params,
            subclass_operand, compiled_call, custom, same_op_other_params, long_chain]


@pytest.fixture
def use(monkeypatch):
    def use(impl):
        monkeypatch.setattr(dispatch, "_record", IMPLEMENTATIONS[impl])
        monkeypatch.setattr(gradient_tape, "_record", IMPLEMENTATIONS[impl])

    return use


def run(program, use, impl, persistent=False, watch_accessed_variables=True):
    use(impl)
    w, v = gt.Variable(W0.copy(), name="w"), gt.Variable(W0[::-1].copy(), name="v")
    with gt.GradientTape(persistent=persistent, watch_accessed_variables=watch_accessed_variables) as tape:
        outputs = program(w, v)
    return tape, outputs, w, v


def summary(rec: Recording, outputs):
    """Everything a recording holds, with values as what they are (arrays by identity)."""
    # what pending ops will read (a Held in a held array's place), before reading values computes them
    operands = [tuple(type(a).__name__ for a in t._args) for t in rec.values if is_pending(t)]
    values = []
    for t in rec.values:
        if isinstance(t, np.ndarray):
            values.append(("array", id(t)))
        else:
            values.append((type(t).__name__, t.shape, str(t.dtype), t.numpy().tobytes()))
    positions = [rec.var_of.get(id(t)) for t in outputs]
    snapshots = {p: a.tobytes() for p, a in rec.snapshots.items()}
    # a custom_gradient's params hold this step's callback: compare its class
    info = [e if len(e) == 2 else e[:4] + ({k: _plain(p) for k, p in e[4].items()},) for e in rec.info]
    watched = [(str(v.dtype), v.shape, v.trainable) for v in in_creation_order(rec.variables, rec.watched_integers)]
    # the arrays held for checks (held_arrays.py): which, and for which op
    # with their fingerprints and the user's line that recorded them (C holds the common case itself)
    held = sorted((h.array.shape, str(h.array.dtype), h.op and h.op.name, repr(h._fingerprint),
                   h.site and held_arrays_module._line(h.site)) for h in rec.held.values())
    return (rec.structure, info, values, rec.leaves, positions, snapshots, rec.deferred, rec.uncacheable,
            sorted(rec.literals), watched, held, operands)


def _watching_w(program):
    """program with only its first variable watched (for a tape not watching what it reads)."""
    def watched(w, v):
        gt.GradientTape.current().watch(w)
        return program(w, v)

    return watched


def _plain(param):
    return param if isinstance(param, (int, float, str, tuple, gt.ir.Function)) else type(param).__name__


@pytest.mark.parametrize("watch_accessed", [True, False], ids=["watching reads", "not watching reads"])
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_c_and_python_record_the_same(program, watch_accessed, use):
    if not watch_accessed:
        program = _watching_w(program)
    got = {}
    for impl in ("python", "c"):
        tape, outputs, w, v = run(program, use, impl, persistent=True, watch_accessed_variables=watch_accessed)
        got[impl] = summary(tape._tape, outputs)
        grads = tape.gradient(outputs, [w, v])
        got[impl + " gradients"] = [None if g is None else g.numpy() for g in grads]
    assert got["c"] == got["python"]
    assert len(got["c"][0]) > 2  # the program was recorded at all
    if program is explicit_watch and watch_accessed:
        assert ("int64", (5,), True) in got["c"][-3]  # the integer variable read was watched
    for a, b in zip(got["c gradients"], got["python gradients"]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)


def test_after_t_i_assigned_both_record_the_same_positions(use):
    """t[i] = x moves t to the update's position (rebind.py): what C remembers of where t was
    recorded must not outlive it."""
    got = {}
    for impl in ("python", "c"):
        use(impl)
        w = gt.constant(W0)
        with gt.GradientTape() as tape:
            tape.watch(w)
            t = gt.sin(w) * w
            before = t * 2.0
            t[0] = 5.0
            outputs = [before, t * 3.0, t + before]
            loss = gt.sum(outputs[1] + outputs[2])
        rec = tape._tape
        got[impl] = (rec.structure, [rec.var_of.get(id(o)) for o in outputs], rec.var_of.get(id(t)))
        got[impl + " values"] = [o.numpy() for o in outputs]
        got[impl + " gradient"] = tape.gradient(loss, w).numpy()
    assert got["c"] == got["python"]
    t = np.sin(W0) * W0
    before = t * 2.0
    t[0] = 5.0
    for impl in ("python", "c"):
        np.testing.assert_allclose(got[impl + " values"][1], t * 3.0)
        np.testing.assert_allclose(got[impl + " values"][2], t + before)
    d = np.cos(W0) * W0 + np.sin(W0)  # d(sin(w) w)/dw; t's first element no longer depends on w
    want = 3.0 * d + d + 2.0 * d
    want[0] = 2.0 * d[0]
    np.testing.assert_allclose(got["c gradient"], want)
    np.testing.assert_array_equal(got["c gradient"], got["python gradient"])


def test_literals_new_to_the_memo(use):
    """C leaves a scalar the Literal memo does not hold to Python, which fills the memo."""
    saved = dict(recording._literals)
    got = []
    try:
        for impl in ("c", "python", "c"):
            recording._literals.clear()
            tape, outputs, w, v = run(scalars, use, impl, persistent=True)
            got.append(summary(tape._tape, outputs))
            got[-1] += (tape.gradient(outputs, w).numpy().tobytes(),)
    finally:
        recording._literals.clear()
        recording._literals.update(saved)
    assert got[0] == got[1] == got[2]


def test_recorded_values_and_gradients_match_numpy(use):
    use("c")
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as tape:
        loss = logreg(w, None)[0]
    assert type(loss) is PendingTensor
    z = X @ W0
    np.testing.assert_allclose(loss.numpy(), np.mean(np.logaddexp(0, z) - Y * z), rtol=1e-12)
    g = tape.gradient(loss, w)
    np.testing.assert_allclose(g.numpy(), X.T @ (1 / (1 + np.exp(-z)) - Y) / len(Y), rtol=1e-12)


@pytest.mark.parametrize("impl", ["python", "c"])
def test_nothing_tracked_is_not_recorded(use, impl):
    use(impl)
    with gt.GradientTape() as tape:
        out = gt.constant(W0) * 2.0 + X[0]
    np.testing.assert_array_equal(out.numpy(), W0 * 2.0 + X[0])
    assert tape._tape.structure == []


@pytest.mark.parametrize("impl", ["python", "c"])
def test_shape_errors_are_raised_at_the_op(use, impl):
    use(impl)
    w = gt.Variable(np.zeros(4))
    with gt.GradientTape() as tape:
        with pytest.raises(ValueError) as err:
            w + np.ones(3)
        y = gt.sum(w * w)
    assert "add" in str(err.value)
    assert [len(e) for e in tape._tape.structure][:2] == [2, 2]  # leaves (w, the array): no op entry
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), np.zeros(4))


def test_both_raise_the_same_errors(use):
    messages = set()
    for impl in ("python", "c"):
        use(impl)
        w = gt.Variable(np.zeros(4))
        with gt.GradientTape(), pytest.raises(ValueError) as err:
            gt.reshape(w, (3, 2))
        messages.add(str(err.value))
    assert len(messages) == 1


@pytest.mark.parametrize("impl", ["python", "c"])
def test_unhashable_params_make_the_recording_uncacheable(use, impl):
    use(impl)
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as tape:
        out = dispatch.bind(layout.reshape_p, w * 2.0, shape=[5])
    assert tape._tape.uncacheable == "an unhashable parameter of reshape"
    np.testing.assert_array_equal(out.numpy(), W0 * 2.0)
    np.testing.assert_array_equal(tape.gradient(out, w).numpy(), np.full(5, 2.0))


def test_abstract_operands_are_traced_not_recorded(use):
    use("c")
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as tape:
        y = w * 3.0
        # tracing inside the tape: an op on an abstract operand and a recorded one is traced
        fn = make_ir(lambda a: gt.sum(a * y), np.ones(5))
    assert len(tape._tape.structure) == 2  # w's read and y: nothing from the trace
    assert [e.op.name for e in fn.eqns] == ["mul", "reduce_sum"]


def test_nested_tapes_record_one_pending_result_in_c(use):
    use("c")
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as outer:
        with gt.GradientTape() as inner:
            y = gt.sum(gt.sin(w) * X[0])
        # two tapes: deferred by the first, and the same PendingTensor recorded on both
        assert type(y) is PendingTensor and y._forced is None
        assert outer._tape.values[-1] is y and inner._tape.values[-1] is y
        assert outer._tape.deferred and inner._tape.deferred
        g = inner.gradient(y, w)
    np.testing.assert_allclose(g.numpy(), np.cos(W0) * X[0])
    h = outer.gradient(g, w)
    np.testing.assert_allclose(h.numpy(), -np.sin(W0) * X[0])


def test_record_checks_its_arguments():
    with pytest.raises(TypeError, match="expected a Recording"):
        _crecord.record(object(), elementwise.mul_p, (), {}, None, True)
    with pytest.raises(TypeError, match="record\\(recording"):
        _crecord.record(Recording())
    with pytest.raises(TypeError, match="must be a sequence"):
        _crecord.record(Recording(), elementwise.mul_p, 3, {}, None, True)
    broken = Recording()
    broken.info = None  # a Recording whose state was tampered with gets an error, not a crash
    with pytest.raises(TypeError, match="Recording.info is not a list"):
        _crecord.record(broken, elementwise.mul_p, (X[0], 2.0), {}, None, True)


def test_a_tampered_recording_fails_when_watching_a_variable():
    broken = Recording()
    broken.sources = None
    with pytest.raises(TypeError, match="unexpected recording or variable state"):
        _crecord.record(broken, elementwise.mul_p, (gt.Variable(W0.copy()), 2.0), {}, None, True)


def test_a_failed_bind_setup_keeps_the_previous_one():
    with pytest.raises(TypeError, match="takes a dict"):
        _crecord.setup_bind(None)
    with pytest.raises(KeyError, match="missing stack"):
        _crecord.setup_bind({})
    names = dict(stack=None, deferred=deferred, eager_only=deferred.eager_only, computed=None, dispatch=dispatch,
                 record=_crecord.record, impls={}, asarray=np.asarray)
    with pytest.raises(TypeError, match="eager_only must be callable and impls a dict"):
        _crecord.setup_bind(dict(names, eager_only={"gather"}))
    w = gt.Variable(W0.copy())
    np.testing.assert_array_equal(dispatch.bind(elementwise.mul_p, w, 2.0).numpy(), W0 * 2.0)
    with gt.GradientTape() as tape:
        y = dispatch.bind(elementwise.mul_p, w, 2.0)
    assert type(y) is PendingTensor and tape._tape.var_of[id(y)] == 1


def test_record_takes_any_sequence_of_operands():
    got = []
    for args in ([2.0], (2.0,)):
        rec = Recording()
        w = gt.Variable(W0.copy())
        rec.watch(w)
        y = _crecord.record(rec, elementwise.mul_p, [w, *args], {}, None, True)
        got.append((rec.structure, y.numpy().tobytes()))
    assert got[0] == got[1] and got[0][1] == (W0 * 2.0).tobytes()


def test_a_failed_setup_keeps_the_previous_one():
    with pytest.raises(TypeError, match="takes a dict"):
        _crecord.setup(None)
    with pytest.raises(KeyError, match="missing Recording"):
        _crecord.setup({})
    names = recording._crecord_names()
    with pytest.raises(TypeError, match="signatures must be a dict"):
        _crecord.setup(dict(names, signatures=[]))
    with pytest.raises(TypeError, match="declared on Recording, which is not the class given for it"):
        _crecord.setup(dict(names, Recording=object))
    with pytest.raises(TypeError, match="float64 must be a subclass of float"):
        _crecord.setup(dict(names, float64=np.float32))
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as tape:
        y = w * 2.0
    assert tape._tape.var_of[id(y)] == 1


def test_the_c_path_is_the_default_and_can_be_turned_off():
    pure = os.environ.get("GRADTAPE_PURE_PYTHON", "0") not in ("", "0")
    assert dispatch._record is recording.record is (Recording.record if pure else _crecord.record)
    code = "from gradtape.tracer import recording as r; print(r.record is r.Recording.record)"
    for flag, python in (("1", "True"), ("0", "False")):
        env = dict(os.environ, GRADTAPE_PURE_PYTHON=flag)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == python


# --- bind: the C function against dispatch.python_bind --------------------------------------
BINDS = {"python": dispatch.python_bind, "c": dispatch.bind}


def bind_on_one_tape(bind):
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as tape:
        y = bind(elementwise.mul_p, w, 2.0)
        z = bind(layout.reshape_p, y, shape=(1, 5))  # params by keyword
        g = bind(gather_p, w, np.array([0, 2]), axis=0)  # eager_only: computed at once, and recorded
    structure = tape._tape.structure
    grads = tape.gradient([z, g], w)
    return [type(y).__name__, type(z).__name__, type(g).__name__, structure, z.numpy(), g.numpy(), grads.numpy()]


def bind_on_two_tapes(bind):
    w = gt.Variable(W0.copy())
    with gt.GradientTape() as outer, gt.GradientTape() as inner:
        y = bind(elementwise.sin_p, w)
    return [type(y).__name__, y.numpy(), inner._tape.structure, outer._tape.structure]


def bind_not_deferred(bind):
    saved, deferred.enabled = deferred.enabled, False
    try:
        w = gt.Variable(W0.copy())
        with gt.GradientTape() as tape:
            y = bind(elementwise.exp_p, w)
    finally:
        deferred.enabled = saved
    return [type(y).__name__, y.numpy(), tape._tape.structure]


def bind_without_tape(bind):
    y = bind(elementwise.add_p, X[0], 1.0)
    return [type(y).__name__, y.numpy()]


def bind_on_pending_values(bind):  # after the tape: an unrecorded op reads (computes) pending operands
    w = gt.Variable(W0.copy())
    with gt.GradientTape():
        y = bind(elementwise.sin_p, w)
    z = bind(elementwise.mul_p, y, Marked(np.full(5, 2.0)))
    return [type(z).__name__, z.numpy()]


def bind_traced(bind):
    fn = make_ir(lambda a: bind(elementwise.mul_p, a, a), np.ones(3))
    return [str(fn)]


@pytest.mark.parametrize("case", [bind_on_one_tape, bind_on_two_tapes, bind_not_deferred, bind_without_tape,
                                  bind_on_pending_values, bind_traced], ids=lambda c: c.__name__)
def test_c_bind_does_what_python_bind_does(case):
    got = {name: case(b) for name, b in BINDS.items()}
    for a, b in zip(got["c"], got["python"]):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b
    assert got["c"][0] in ("PendingTensor", "Tensor", "Function") or got["c"][0].startswith("{")


def test_bind_errors_match():
    class NotAnOp:
        pass

    for bind in BINDS.values():
        with pytest.raises(TypeError):
            bind()
        w = gt.Variable(W0.copy())
        with gt.GradientTape(), pytest.raises(AttributeError, match="can_fail_on_values"):
            bind(NotAnOp(), w)  # its facts are read first
        with pytest.raises(TypeError, match="reshape"):
            bind(layout.reshape_p, w, shape=(7,), bogus=1)
    messages = set()
    for bind in BINDS.values():  # NumPy's error, replaced by the shape rule's, which names the op
        with pytest.raises(ValueError) as err:
            bind(elementwise.add_p, np.ones(3), gt.constant(np.ones(4)))
        messages.add(str(err.value))
    assert len(messages) == 1 and "add" in messages.pop()


# --- setup naming a builtin class, on every CPython ---------------------------------------------
# Up to 3.11 `object.__dict__` is also object's tp_dict; from 3.12 a static builtin type's
# tp_dict is NULL, and setup, which read cls->tp_dict, crashed on Python 3.13 in
# test_a_failed_setup_keeps_the_previous_one (setup given Recording=object). The scenario runs
# in a child process (a crash fails this test instead of ending the run) under -X dev (the
# debug allocator fills freed memory, so a reference kept after a refused setup shows too),
# many times, then records a gradient through the setup left in force.
_REFUSED_SETUPS = """
import numpy as np
import gradtape as gt
from gradtape.tracer import _crecord, recording
names = recording._crecord_names()
for _ in range(30):
    for cls in (object, int, float, tuple, type):
        slots = dict(names["slots"], **{"Recording.var_of": (cls, "var_of")})
        try:
            _crecord.setup(dict(names, Recording=cls, slots=slots))
        except TypeError as e:
            assert f"{cls.__name__}.var_of is not a __slots__ member" in str(e), e
        else:
            raise AssertionError(f"setup took a slot declared on {cls.__name__}")
    try:
        _crecord.setup(dict(names, Recording=object))
    except TypeError as e:
        assert "declared on Recording, which is not the class given for it" in str(e), e
    else:
        raise AssertionError("setup took object as Recording")
assert recording.record is _crecord.record
w = gt.Variable(np.array([1.0, -2.0, 0.5]))
with gt.GradientTape() as tape:
    y = gt.sum(w * w * 3.0)
print(repr(tape.gradient(y, w).numpy().tolist()))
"""


def test_a_setup_naming_a_builtin_class_is_refused_and_crashes_nothing():
    env = dict(os.environ, GRADTAPE_PURE_PYTHON="0", PYTHONMALLOC="debug")
    out = subprocess.run([sys.executable, "-X", "dev", "-c", _REFUSED_SETUPS], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert eval(out.stdout.strip().splitlines()[-1]) == [6.0, -12.0, 3.0]  # d(3 w^2)/dw = 6 w


def _chain_kept(keep_middle):
    """A chain of four pending values on a tape; returns the last (and the second) and the recording."""
    x = gt.constant(X[0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        a = x * 2.0
        b = gt.sin(a)
        c = b * b
        d = c + 1.0
    return (d, b) if keep_middle else (d,), tape._tape


@pytest.mark.parametrize("keep_middle", [False, True])
def test_a_freed_recording_leaves_to_orphans_only_the_unread_values_held_elsewhere(keep_middle):
    kept, rec = _chain_kept(keep_middle)
    roots = _crecord.unread_roots(rec.values)
    assert sorted(map(id, roots)) == sorted(map(id, kept))
    pending = [v for v in rec.values if type(v) is PendingTensor]
    assert len(pending) == 4
    # the others are reached through their operands (what t[i] = v searches)
    assert sorted(map(id, recording.unread_orphans(roots))) == sorted(map(id, pending))
    kept[0].numpy()  # read, with every value it reads: none is unread now
    assert _crecord.unread_roots(rec.values) == []
    np.testing.assert_allclose(kept[0].numpy(), np.sin(2.0 * X[0]) ** 2 + 1.0)


def _random_dag(seed, n_ops):
    """A tape recording n_ops ops, each on one or two random earlier values (a DAG, as a
    training step's); returns the values and the recording."""
    r = np.random.default_rng(seed)
    x = gt.constant(X[0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        made = [x]
        for _ in range(n_ops):
            a = made[r.integers(len(made))]
            b = made[r.integers(len(made))]
            made.append(gt.sin(a) if r.random() < 0.3 else a * b if r.random() < 0.5 else a + 1.0)
    return made[1:], tape._tape


@pytest.mark.parametrize("seed", range(6))
def test_the_roots_a_freed_recording_leaves_are_exactly_the_unread_values_held_elsewhere(seed):
    made, rec = _random_dag(seed, 300)
    r = np.random.default_rng(100 + seed)
    kept = [v for v in made if r.random() < 0.05]
    if seed % 2:  # t[i] = v: the snapshot rebind.py makes shares the operands' container of t
        kept[-1][0] = 5.0
    del made  # only `kept` (and the recording) hold values now
    roots = _crecord.unread_roots(rec.values)
    assert sorted(map(id, roots)) == sorted(id(v) for v in kept if is_pending(v))
    assert all(v._sym is None for v in rec.values if is_pending(v))  # the counts kept in the slot are gone
    reached = {id(v) for v in recording.unread_orphans(roots)}
    assert all(id(v) in reached for v in kept if is_pending(v))
    again = _crecord.unread_roots(rec.values)  # the slots restored: the same answer again
    assert sorted(map(id, again)) == sorted(map(id, roots))


def test_ops_bound_without_keywords_share_one_params_dict_that_nothing_may_write():
    x = gt.constant(X[0])
    with gt.GradientTape() as tape:
        tape.watch(x)
        a = _crecord.bind(elementwise.sin_p, x)
        b = _crecord.bind(elementwise.cos_p, x)
        assert a._params is b._params and a._params == {}
        a._params["axis"] = 0  # what no code may do: the next bind says so, not a wrong op
        try:
            with pytest.raises(RuntimeError, match="must never be written"):
                _crecord.bind(elementwise.sin_p, x)
        finally:
            a._params.clear()
        c = _crecord.bind(elementwise.exp_p, b)
    np.testing.assert_allclose(c.numpy(), np.exp(np.cos(X[0])))
