"""Every op declares every fact and has every rule its facts call for, and the
facts are true of the op's NumPy reference.

The facts are checked on the equations the op specs (op_specs.py) trace, so
each op is exercised with the operand types and params its spec gives it.
"""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir import Eqn, Function, Var
from gradtape.ir.op import FACTS, batching_rules, impls, jvp_rules, shape_rules, vjp_rules
from gradtape.ir.optimize import IDENTITIES_EXACT_FOR_COMPLEX

from .op_specs import all_specs

OPS = sorted(ir.all_ops.values(), key=lambda op: op.name)
_FLAGS = [f for f in FACTS if not f.endswith("_identity")]


@pytest.mark.parametrize("op", OPS, ids=str)
def test_every_op_declares_every_fact(op):
    for fact in _FLAGS:
        value = getattr(op, fact, None)
        assert type(value) is bool, f"op '{op.name}' does not declare the fact {fact} (got {value!r})"
    for fact in ("left_identity", "right_identity"):
        value = getattr(op, fact, "undeclared")
        assert value is None or np.ndim(value) == 0, f"op '{op.name}': fact {fact} is {value!r}"


@pytest.mark.parametrize("op", OPS, ids=str)
def test_every_op_has_every_rule_kind(op):
    kinds = [("shape", shape_rules), ("reference", impls), ("batching", batching_rules)]
    derivative = [("VJP", vjp_rules), ("JVP", jvp_rules)]
    missing = [kind for kind, table in kinds + derivative * op.differentiable if op not in table]
    assert not missing, f"op '{op.name}' has no {', '.join(missing)} rule"
    if not op.differentiable:  # gradients do not flow: a rule would be dead code
        stray = [kind for kind, table in derivative if op in table]
        assert not stray, f"op '{op.name}' is declared differentiable=False but has {', '.join(stray)} rules"


def test_facts_are_read_only():
    with pytest.raises(AttributeError, match="op 'add': facts are declared once, in new_op"):
        ir.all_ops["add"].commutative = False


def test_declaring_an_op_requires_the_facts_without_a_safe_default():
    with pytest.raises(TypeError, match="can_fail_on_values"):
        ir.new_op("facts_test_op", elementwise=True, runs_code=False)
    with pytest.raises(TypeError, match="fact commutative must be True or False, got 1"):
        ir.new_op("facts_test_op", elementwise=True, can_fail_on_values=False, runs_code=False, commutative=1)
    assert "facts_test_op" not in ir.all_ops


# --- the facts hold for the references, on the equations the op specs trace -------------

def _traced_eqns():
    """(op, input types, params) of every equation the op specs trace, once each."""
    seen, found = set(), []
    for spec in all_specs():
        fn = gt.make_ir(spec.fn, *spec.args(np.random.default_rng(0)))
        for eqn in fn.eqns:
            key = (eqn.op, tuple(a.type for a in eqn.inputs), repr(sorted(eqn.params.items())))
            if key not in seen:
                seen.add(key)
                found.append((eqn.op, [a.type for a in eqn.inputs], dict(eqn.params)))
    return found


EQNS = _traced_eqns()


def _eqns_of(predicate, arity=None, one_per_op=False):
    chosen, ops = [], set()
    for op, types, params in EQNS:
        if predicate(op) and arity in (None, len(types)) and not (one_per_op and op in ops):
            ops.add(op)
            chosen.append(pytest.param(op, types, params, id=f"{op.name}{tuple(t.shape for t in types)}"))
    return chosen


def _random(t, rng):
    if t.dtype == np.bool_:
        return rng.random(t.shape) < 0.5
    if t.dtype.kind in "iu":
        return rng.integers(-3, 4, t.shape).astype(t.dtype)
    return rng.uniform(0.5, 2.0, t.shape).astype(t.dtype) * rng.choice([-1, 1], t.shape)


@pytest.fixture(autouse=True)
def _ieee():
    with np.errstate(all="ignore"):  # references give IEEE results (NaN for pow of a negative base)
        yield


def _same(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind in "fc")


def test_the_specs_trace_every_fact_checked_below():
    traced = {op for op, _, _ in EQNS}
    for fact in ("elementwise", "commutative", "zero_derivative", "data_movement", "applies_fn"):
        declared = {op.name for op in OPS if getattr(op, fact)}
        assert declared - {op.name for op in traced} == set(), f"ops declared {fact} but never traced"


@pytest.mark.parametrize("op, types, params", _eqns_of(lambda op: op.elementwise))
def test_elementwise_ops_compute_each_element_from_the_operands_at_its_index(op, types, params):
    rng = np.random.default_rng(1)
    ins = [_random(t, rng) for t in types]
    out = impls[op](*ins, **params)
    shape = np.broadcast_shapes(*[t.shape for t in types])
    spread = [np.broadcast_to(x, shape) for x in ins]
    for index in np.ndindex(shape):
        alone = impls[op](*[x[index] for x in spread], **params)
        assert _same(np.asarray(out)[index], alone), f"op '{op.name}' is declared elementwise, element {index}"


@pytest.mark.parametrize("op, types, params", _eqns_of(lambda op: op.elementwise, arity=2, one_per_op=True))
def test_commutative_is_declared_exactly_for_the_ops_that_commute(op, types, params):
    rng = np.random.default_rng(2)
    # One type for both, so the operands can swap; several elements, so a chance tie
    # (or NaN on both sides, as pow of a negative base gives) does not decide; positive,
    # so nothing is NaN.
    t = ir.TensorType((8,), types[0].dtype)
    x, y = (abs(_random(t, rng)) if t.dtype.kind == "f" else _random(t, rng) for _ in range(2))
    swapped = _same(impls[op](x, y, **params), impls[op](y, x, **params))
    assert swapped == op.commutative, (
        f"op '{op.name}' is declared commutative={op.commutative} but op(x, y) == op(y, x) is {swapped}"
    )


@pytest.mark.parametrize("op, types, params", _eqns_of(
    lambda op: op.left_identity is not None or op.right_identity is not None))
def test_identity_elements_leave_the_other_operand_unchanged(op, types, params):
    x = _random(types[0], np.random.default_rng(3))
    x = np.append(x.ravel(), [np.nan, np.inf, -np.inf, 0.0]).astype(x.dtype)
    if x.dtype.kind == "c" and op not in IDENTITIES_EXACT_FOR_COMPLEX:
        # the optimizer uses these identities on real operands only: (inf+0j) * 1 is inf+nanj
        assert not _same(impls[op](x, np.asarray(1, x.dtype), **params), x), op.name
        return
    if op.right_identity is not None:
        assert _same(impls[op](x, np.asarray(op.right_identity, x.dtype), **params), x), op.name
    if op.left_identity is not None:
        assert _same(impls[op](np.asarray(op.left_identity, x.dtype), x, **params), x), op.name


@pytest.mark.parametrize("op, types, params", _eqns_of(lambda op: op.zero_derivative))
def test_zero_derivative_ops_have_exactly_zero_gradients(op, types, params):
    ins = [Var(t) for t in types]
    out = Var(shape_rules[op](*types, **params))
    joint, connected = ir.vjp(Function(ins, [Eqn(op, ins, params, [out])], [out]), range(len(ins)))
    rng = np.random.default_rng(4)
    values = [_random(t, rng) for t in types] + [np.ones(out.type.shape, out.type.dtype)]
    for grad in ir.eval_function(joint, values)[1:]:
        assert not np.any(grad), f"op '{op.name}' is declared zero_derivative; gradient {grad}"


@pytest.mark.parametrize("op, types, params", _eqns_of(lambda op: op.data_movement))
def test_data_movement_ops_output_operand_elements_or_constants(op, types, params):
    def run(offset):
        ids, start = [], offset
        for t in types:
            ids.append((np.arange(t.size).reshape(t.shape) + start).astype(t.dtype))
            start += t.size
        return np.asarray(impls[op](*ids, **params)), start

    low, end = run(1)
    high, _ = run(1 + end)  # every operand element moved by `end`, constants unchanged
    moved = (high == low + end) & (low >= 1) & (low < end)
    constant = high == low
    assert np.all(moved | constant), f"op '{op.name}' is declared data_movement but computes new values"


@pytest.mark.parametrize("op, types, params", _eqns_of(lambda op: op.applies_fn))
def test_applies_fn_ops_compute_their_sub_function(op, types, params):
    rng = np.random.default_rng(5)
    ins = [_random(t, rng) for t in types]
    want = ir.eval_function(params["fn"], ins)[0]
    assert _same(impls[op](*ins, **params), want), f"op '{op.name}' is declared applies_fn"
