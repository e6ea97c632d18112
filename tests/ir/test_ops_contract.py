"""The `contract` op: gradients of every front end lowering to it, the NumPy
reference against np.einsum, reference output types against the shape rule,
the IR its derivatives build, and the shape rule's errors."""
import sys

import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.ir.ops import contract
from gradtape.testing import check_grads

from .specs_contract import SPECS

contract_mod = sys.modules["gradtape.ir.ops.contract"]
contract_p = contract_mod.contract_p


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_gradients_match_finite_differences(spec):
    check_grads(spec.fn, spec.args(np.random.default_rng(0)), order=spec.order, modes=spec.modes)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_values_match_numpy_and_types_match_shape_rules(spec):
    values = spec.args(np.random.default_rng(1))
    fn = gt.make_ir(spec.fn, *values)
    assert set(spec.ops) <= {e.op.name for e in fn.eqns}
    (out,) = ir.eval_function(fn, values, check_types=True)
    expected = spec.numpy_fn(*values)
    np.testing.assert_allclose(out, expected, rtol=1e-6 if out.dtype == np.float32 else 1e-12)
    assert out.dtype == np.asarray(expected).dtype
    eager = spec.fn(*[gt.constant(v) for v in values])
    np.testing.assert_array_equal(eager.numpy(), out)


# --- the NumPy reference --------------------------------------------------------------

def _random_specs(rng, n):
    sizes = dict(a=2, b=3, c=4, d=1, e=2)
    for _ in range(n):
        la = "".join(rng.permutation(list(sizes))[: rng.integers(0, 5)])
        lb = "".join(rng.permutation(list(sizes))[: rng.integers(0, 5)])
        letters = sorted(set(la) | set(lb))
        n_out = rng.integers(0, len(letters) + 1)
        lo = "".join(rng.permutation(letters)[:n_out]) if letters else ""
        yield f"{la},{lb}->{lo}", [sizes[c] for c in la], [sizes[c] for c in lb]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
def test_reference_matches_einsum_on_random_specs(dtype):
    rng = np.random.default_rng(0)
    for spec, sa, sb in _random_specs(rng, 200):
        a = (rng.standard_normal(sa) * 4).astype(dtype)
        b = (rng.standard_normal(sb) * 4).astype(dtype)
        out = ir.impls[contract_p](a, b, spec=spec)
        want_type = ir.shape_rules[contract_p](ir.type_of(a), ir.type_of(b), spec=spec)
        assert ir.type_of(out) == want_type, spec
        np.testing.assert_allclose(out, np.einsum(spec, a, b), rtol=1e-5, atol=1e-5, err_msg=spec)


@pytest.mark.parametrize(
    "spec, sa, sb, kernel",
    [
        ("ij,jk->ik", (2, 3), (3, 4), "matmul"),
        ("ji,kj->ik", (3, 2), (4, 3), "matmul"),  # after transposes
        ("bij,bjk->bik", (2, 2, 3), (2, 3, 4), "matmul"),
        ("i,j->ij", (2,), (3,), "multiply"),
        ("bi,bj->bij", (2, 2), (2, 3), "multiply"),
    ],
)
def test_reference_plans_use_blas_kernels(spec, sa, sb, kernel):
    assert contract_mod._plan(spec, sa, sb).kernel == kernel


def test_reference_checks_shapes_itself():
    # Eager calls run the reference before any shape rule; sizes that happen to
    # reshape must not give a silently wrong answer.
    with pytest.raises(ir.ShapeError, match="disagree on 'j'"):
        ir.impls[contract_p](np.ones((2, 3, 4)), np.ones((4, 3, 5)), spec="ijl,jlk->ik")


def test_reference_handles_empty_dimensions():
    a, b = np.ones((2, 0)), np.ones((0, 3))
    np.testing.assert_array_equal(ir.impls[contract_p](a, b, spec="ij,jk->ik"), np.zeros((2, 3)))


# --- the IR derivatives build -----------------------------------------------------------

def test_matmul_traces_to_one_contract_and_its_vjp_to_two():
    x, w = np.ones((2, 3)), np.ones((3, 4))
    fn = gt.make_ir(lambda x, w: x @ w, x, w)
    assert str(fn) == "{ a:f64[2,3] b:f64[3,4] . c:f64[2,4] = contract[spec='ij,jk->ik'] a b -> c }"
    joint, _ = ir.vjp(fn, [0, 1])
    assert str(joint) == (
        "{ a:f64[2,3] b:f64[3,4] c:f64[2,4] . d:f64[2,4] = contract[spec='ij,jk->ik'] a b ; "
        "e:f64[2,3] = contract[spec='ik,jk->ij'] c b ; "
        "f:f64[3,4] = contract[spec='ik,ij->jk'] c a -> (d, e, f) }"
    )


def test_jvp_is_a_sum_of_two_contractions():
    fn = gt.make_ir(lambda x, w: x @ w, np.ones((2, 3)), np.ones((3, 4)))
    joint, _ = ir.jvp(fn, [0, 1])
    assert [e.op.name for e in joint.eqns] == ["contract", "contract", "contract", "add"]


def test_a_letter_summed_out_alone_is_broadcast_back():
    b = ir.Builder()
    x = b.input(ir.TensorType((2, 3), np.float64))
    y = b.input(ir.TensorType((4,), np.float64))
    fn = b.build([x, y], [contract(x, y, "ij,k->i")])
    joint, _ = ir.vjp(fn, [0, 1])
    assert str(joint) == (
        "{ a:f64[2,3] b:f64[4] c:f64[2] . d:f64[2] = contract[spec='ij,k->i'] a b ; "
        "e:f64[2] = contract[spec='i,k->i'] c b ; f:f64[2,1] = reshape[shape=(2, 1)] e ; "
        "g:f64[2,3] = broadcast_to[shape=(2, 3)] f ; h:f64[] = contract[spec='i,ij->'] c a ; "
        "i:f64[4] = broadcast_to[shape=(4,)] h -> (d, g, i) }"
    )
    check_grads(lambda x, y: gt.tanh(gt.einsum("ij,k->i", x, y)),
                [np.ones((2, 3)) * 0.3, np.ones(4) * 0.2], order=2)


def test_third_order_of_a_matmul_chain():
    check_grads(lambda a, b: gt.sin(a @ b) @ a, [np.eye(2) * 0.5 + 0.1, np.ones((2, 2)) * 0.3],
                order=3)


def test_integer_contraction_has_no_gradient():
    fn = gt.make_ir(lambda a, b: a @ b, np.ones((2, 2), np.int64), np.ones((2, 2), np.int64))
    _, connected = ir.vjp(fn, [0, 1])
    assert connected == (False, False)


# --- shape-rule errors -------------------------------------------------------------------

f64 = np.float64


def _rule(sa, sb, spec, da=f64, db=f64):
    return ir.shape_rules[contract_p](ir.TensorType(sa, da), ir.TensorType(sb, db), spec=spec)


def test_shape_rule_gives_output_shape_in_output_order():
    assert _rule((2, 3), (3, 4), "ij,jk->ki") == ir.TensorType((4, 2), f64)
    assert _rule((), (3,), ",i->i") == ir.TensorType((3,), f64)


def test_shape_rule_rejects_mismatched_letter_sizes():
    with pytest.raises(ir.ShapeError) as err:
        _rule((3, 4), (5, 2), "ij,jk->ik")
    assert str(err.value) == (
        "contract[spec='ij,jk->ik']: shapes (3, 4) and (5, 2) disagree on 'j': "
        "4 (dim 1 of the first) != 5 (dim 0 of the second); broadcast the operands first"
    )


def test_shape_rule_rejects_wrong_rank():
    with pytest.raises(ir.ShapeError, match=r"the second operand has shape \(3,\) \(rank 1\) "
                       r"but the spec gives it 2 letters 'jk'"):
        _rule((2, 3), (3,), "ij,jk->ik")


def test_shape_rule_rejects_mixed_dtypes():
    with pytest.raises(ir.DTypeError,
                       match=r"contract: operands must have one dtype, got f64\[2,3\], f32\[3\]"):
        _rule((2, 3), (3,), "ij,j->i", db=np.float32)


def test_shape_rule_rejects_bool():
    with pytest.raises(ir.DTypeError, match=r"contract: operands must be floating point or "
                       r"integer, got bool\[2\] and bool\[2\]"):
        _rule((2,), (2,), "i,i->", da=np.bool_, db=np.bool_)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("ij,jk", "is not of the form 'ab,bc->ac'"),
        ("ij,jk,kl->il", "is not of the form 'ab,bc->ac'"),
        ("iJ,Jk->ik", "uses 'J' in the first operand; only lowercase letters a-z are allowed"),
        ("ii,ik->ik", r"repeats a letter in the first operand \('ii'\)"),
        ("ij,jk->ii", r"repeats a letter in the output \('ii'\)"),
        ("ij,jk->iz", "has output letters 'z' that appear in no operand"),
    ],
)
def test_shape_rule_rejects_malformed_specs(spec, message):
    with pytest.raises(ir.ShapeError, match=message):
        _rule((2, 2), (2, 2), spec)


def test_verifier_reports_an_ill_typed_contract():
    a = ir.Var(ir.TensorType((2, 3), f64))
    b = ir.Var(ir.TensorType((4, 2), f64))
    out = ir.Var(ir.TensorType((2, 2), f64))
    fn = ir.Function([a, b], [ir.Eqn(contract_p, [a, b], {"spec": "ij,jk->ik"}, [out])], [out])
    with pytest.raises(ir.VerifyError, match="'contract' is ill-typed: .*disagree on 'j'"):
        ir.verify(fn)
