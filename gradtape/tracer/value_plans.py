"""Reading a recording's last value with compiled code once its program repeats.

A value a tape recorded is computed when it is read (deferred.py), op by op
with NumPy's functions. A loop that reads its loss before the gradient (or
without one: an evaluation on a tape) records the same program every step and
pays that every step:

    for step in range(steps):
        with gradtape.GradientTape() as tape:
            loss = objective(params)      # recorded, not computed
        print(loss.numpy())               # computed here
        grads = tape.gradient(loss, params)

From the `repeats`-th read of the last value of recordings of one program
(its structure: recording.py; counted by backward_cache.stand_in), that read
runs a plan instead: the tape's backward plan for that value and no sources,
which recomputes the forward from the recording's leaves and returns the
value (backward.py's "recompute"), in the same cache as tape.gradient's plans
(backward_cache.py: its hits and misses count these), compiled when it is
first run. Earlier reads, reads of a recording shorter than `min_positions` or
of one whose values were already read in part, and reads of a value that is
not its recording's last are computed op by op as before: a short chain costs
less in NumPy than a call of native code, and a program met once must not
wait for a compile. The gradient taken after such a read recomputes the
forward too (its values were not computed), by a plan compiled at once.

What it reads: the recording's last value, while the recording is alive (the
one this thread made last) or after it is freed (a loss kept after
its tape is gone: the freed recording leaves its structure and the arrays of
its leaves with the loss, `stash`). Held arrays are checked first
(ArrayModifiedError, as computing op by op would raise it). The value is
native code's, which may differ from NumPy's op-by-op result in the last bits,
as a gradient's plan does from the interpreter's; the choice depends only on
how often the program was met, never on timing, so a run gives the same bits
every time (with compiles synchronous, the default). Intermediate values read later are computed op by op. A plan that
fails to build or run warns (RuntimeWarning) and leaves its program op by op.

Set GRADTAPE_VALUE_PLANS=0, or `gradtape.tracer.value_plans.enabled = False`,
to compute every read value op by op.
"""
from __future__ import annotations

import os
import warnings
import weakref

import numpy as np

from . import backward_cache, backward_plan, deferred, recording
from .backward import BackwardParts, Question
from .backward_plan import BackwardPlan
from .deferred import PendingTensor
from .errors import ArrayModifiedError
from .recording import Recording

enabled = os.environ.get("GRADTAPE_VALUE_PLANS", "1") != "0"
# Times a program is met (its last value read) before that value is read by a plan: a training
# loop's fifth step, as backward_plan.compile_after_runs compiles a gradient's plan.
repeats = 5
# Positions (leaves and ops) below which a recording's value is always computed op by op: a call
# of native code costs about what a few dozen small NumPy calls do.
min_positions = 64

# id(loss) -> (weak reference to the loss, what its freed recording left it): the _Remains a plan
# reads, or, while the program has not repeated, its stand-in (backward_cache.stand_in), so that
# reading the loss counts a meeting of it. A few, most recent last.
_remains: dict = {}
_MAX_REMAINS = 8
_refused: set = set()  # stand-ins of programs whose plan failed (a warning said so): op by op
_HOW = ("recompute", "unit seeds")  # how the plan answers: backward.backward_for's key

fallback = deferred._force  # op by op: the C loop when it is built (dispatch.py), else Python's


def force(root: PendingTensor):
    """deferred._force: the value of unread `root`, by a plan when its recording's program
    repeats (see the module docstring), else op by op."""
    if enabled:
        found = _recording_of(root)
        if found is not None:
            value = _planned(*found, root)
            if value is not None:
                return value
    return fallback(root)


def _recording_of(root):
    """(recording or a freed one's _Remains, the arrays of its leaves) when `root` is its last
    value and its program has been read often enough to be read by a plan; else None. Counts
    the read."""
    if _remains:
        hit = _remains.pop(id(root), None)
        if hit is not None and hit[0]() is root:
            left = hit[1]
            if left.__class__ is tuple:  # a stand-in: the program has not repeated yet
                backward_cache.meet(left)
                return None
            backward_cache.meet(backward_cache.stand_in(left))
            return left, left.values
    ref = getattr(recording.made_here, "latest", None)
    rec = ref() if ref is not None else None
    if rec is not None:
        values = rec.values
        if values and values[-1] is root and _eligible(rec) and \
                backward_cache.meet(backward_cache.stand_in(rec)) >= repeats:
            arrays = _leaf_arrays(rec, values, force_pending=True)
            if arrays is not None:
                return rec, arrays
    return None


def _eligible(rec) -> bool:
    """Whether reading `rec`'s last value may run a plan, once its program repeats: it is long
    enough, cacheable, ends in an op, and what it recorded has not been read already (a plan
    computes all of it again)."""
    structure = rec.structure
    n = len(structure)
    if n < min_positions or rec.uncacheable is not None or backward_plan.serve is None or len(rec.info[-1]) == 2:
        return False
    if _refused and backward_cache.stand_in(rec) in _refused:
        return False
    # Values read before (a loop that reads a value every step): computing what is left op by
    # op costs less. Three positions sample it.
    values = rec.values
    for q in (n >> 2, n >> 1, n - 1 - (n >> 2)):
        v = values[q]
        if v.__class__ is PendingTensor and v._forced is not None:
            return False
    return True


def _leaf_arrays(rec, values, force_pending: bool):
    """A list with the array each leaf of `rec` stands for at its position (None elsewhere):
    what a plan reads. A pending leaf is computed, with `force_pending`, else None is returned."""
    arrays = [None] * len(values)
    snapshots = rec.snapshots
    for q in rec.leaves:
        v = snapshots.get(q)  # a variable read: the array it saw
        if v is None:
            v = values[q]
            if v.__class__ is PendingTensor:
                if v._forced is None and not force_pending:
                    return None
                v = v._value
            elif v.__class__ is not np.ndarray:
                v = v._value  # (not np.asarray: a tape recording now may refuse a tracked tensor)
        arrays[q] = v
    return arrays


class _Arguments:
    """What BackwardPlan.arguments reads of a recording: `values` and `snapshots`."""

    __slots__ = ("values", "snapshots")

    def __init__(self, values):
        self.values, self.snapshots = values, {}


def _planned(rec, arrays, root):
    """`root`'s value from the plan of `rec`'s program (its last value), whose leaves are
    `arrays`; None to compute it op by op."""
    try:
        rec.check_held("numpy")  # (then raised op by op, where an op reads the modified array)
    except ArrayModifiedError:
        return None
    p = len(rec.structure) - 1
    question = Question.__new__(Question)
    question.targets, question.sources, question.key = [p], [], ((p,), ())
    try:
        plan = backward_cache.lookup(rec, ((p,), (), _HOW), lambda: BackwardPlan(
            BackwardParts(rec, question, None, recompute=True, unit_seeds=True), compile_after=1))
        if plan is None:  # the cache is off
            return None
        value = np.asarray(plan.execute(plan.arguments(_Arguments(arrays)))[-1])
    except Exception as e:  # noqa: BLE001  (a fault of the plan's: the value is still computed, op by op)
        _refused.add(backward_cache.stand_in(rec))
        warnings.warn(f"gradtape: computing a recorded value by a compiled plan failed ({type(e).__name__}: {e}); "
                      "it is computed op by op instead, and so is this program's from now on. Please report this "
                      "(GRADTAPE_VALUE_PLANS=0 turns these plans off).", RuntimeWarning, stacklevel=3)
        return None
    # As BackwardPlan.keep_values marks a value a plan gave: operands freed, the values it
    # depends on not computed (`()`, not None: backward._recomputes).
    root._forced = value
    root._args = ()
    root._keep = None  # what a freed recording left to it may go
    return value


class _Remains(Recording):
    """What a freed Recording leaves with its unread last value for a plan to compute it: its
    structure and IR, and its leaves' arrays at their positions in `values` (None elsewhere).
    The arrays, not the Tensors: `t[i] = v` on a leaf Tensor after the tape is gone must not
    change what the loss computes (rebind.py)."""

    __slots__ = ()

    def __del__(self):  # (not a live recording: nothing to hand on)
        pass


def stash(rec: Recording, roots) -> None:
    """From a Recording being freed (its __del__), whose unread values something else holds
    are `roots`: when its last value is one, leave it what reading it needs: the program's
    stand-in to count the read, or, once the program has been read `repeats - 1` times, what a
    plan computes it from (_Remains). Called before the recording lets go of its structure."""
    values = rec.values
    if not enabled or not roots or not values:
        return
    root = values[-1]
    if root.__class__ is not PendingTensor or not (roots[0] is root or roots[-1] is root) \
            or root._forced is not None or not _eligible(rec):
        return
    key = backward_cache.stand_in(rec)
    left = key
    if backward_cache.met(key) >= repeats - 1:  # this read is the repeats-th
        arrays = _leaf_arrays(rec, values, force_pending=False)
        if arrays is not None:
            left = _Remains.__new__(_Remains)
            for name in ("structure", "info", "literals", "leaves", "held", "uncacheable", "deferred",
                         "_vars", "_eqns", "_structure_key"):
                setattr(left, name, getattr(rec, name))
            left.values, left.snapshots = arrays, {}
    if len(_remains) >= _MAX_REMAINS:  # losses freed unread, or read elsewhere
        for k in [k for k, (ref, _) in _remains.items() if ref() is None] or list(_remains)[:1]:
            del _remains[k]
    _remains[id(root)] = (weakref.ref(root), left)


# Installed when imported (by gradtape.tracer, after dispatch.py chose deferred._force).
deferred._force = force
recording.stash_remains = stash
