"""A tape's Jacobian as one cached, compiled plan, built as staged Jacobians are.

`tape.jacobian(target, sources)` asks for every row of the Jacobian at once.
When no tape is recording, `jacobian_for` answers with a `BackwardPlan`
whose Function computes, from the recording's leaves, the forward and every
block `target.shape + source.shape` by the cheaper mode, as
`gradtape.jacobian` does (ir/jacobians.py): forward mode (JVPs over the
standard basis, batched) or reverse mode, whichever `choose_jacobian`
estimates cheaper (by the number of directions when the shapes are far
from square). The basis is made by equations, so the optimizer
folds the products with the identity away: a Jacobian of `tanh(W @ x)`
costs about what its formula costs, not a matrix product with the identity.

The plan is cached by the recording's structure and the question, like a
gradient's (backward_cache.py), and compiled from its
`compile_after_runs`-th run on. It also returns the target's value, which a
pending target takes (deferred.py).
"""
from __future__ import annotations

from .. import ir
from ..ir.inline import inline
from ..ir.jacobians import choose_jacobian, jacfwd_function, jacrev_function, optimize_jacobian
from . import backward_cache, tape_stack
from .backward import Question, RecordedProgram
from .backward_plan import BackwardPlan
from .recording import Recording


class JacobianParts:
    """What BackwardPlan is built from (see backward.BackwardParts), for a Jacobian.

    `fn` takes the leaves and returns one block per connected source Var, then
    the target's value; there are no seeds (`unit_seeds`: the basis is inside).
    """

    unit_seeds = True
    known = ()
    live = ()
    target_types = ()

    def __init__(self, rec: Recording, question: Question):
        program = RecordedProgram(rec, question)
        position = question.targets[0]
        target = rec.vars[position]
        self.leaves, self.taps = program.leaves, program.taps
        fn = ir.Function(program.leaves, program.eqns, [target])
        wrt = [program.leaves.index(v) for v in program.wrt]
        _, connected = ir.vjp(fn, wrt)
        self.plan = program.plan(connected)
        self.connected = [bool(p) for p in self.plan]
        live = [i for i, c in zip(wrt, connected) if c]
        b = ir.Builder()
        invars = [ir.Var(v.type) for v in fn.invars]
        outs = []
        if live:
            choice = choose_jacobian(fn, live)
            jac = choice.program
            if jac is None:
                jac = (jacfwd_function if choice.mode == "fwd" else jacrev_function)(fn, live)
            outs = inline(jac, b, invars)
        # Outputs are numbered among the live Vars: plan indexes wrt, so renumber.
        number = {k: n for n, k in enumerate(k for k, c in enumerate(connected) if c)}
        self.plan = [[number[k] for k in ks] for ks in self.plan]
        outs += inline(fn, b, invars)
        self.value_positions = (position,)
        self.fn = optimize_jacobian(ir.Function(invars, b.eqns, outs))


def jacobian_for(rec: Recording, target, sources):
    """The bound plan of tape.jacobian(target, sources) on `rec`, or None when it cannot
    be cached (a tape is recording, the recording cannot key a cache, the target was not
    recorded): the caller then runs its vectorized backward instead.

    Complex targets or sources get None too (see below). Its `run(None)` gives one block (a Tensor of shape `target.shape +
    source.shape`) per source, or None for an unconnected source.
    """
    if tape_stack.local.tapes:
        return None
    if any(t.dtype.kind == "c" for t in (target, *sources)):
        # its forward mode's basis is of real tangents; the vectorized backward (reverse mode,
        # one row per target element) is TensorFlow's Jacobian of complex values
        return None
    question = Question(rec, [target], sources)
    if question.targets[0] is None:
        return None
    plan = backward_cache.lookup(rec, (*question.key, ("jacobian",)),
                                 lambda: BackwardPlan(JacobianParts(rec, question)))
    return None if plan is None else plan.bind(rec)
