"""gt.checkpoint (gt.remat): same values and derivatives, recomputed in the backward pass."""
import numpy as np
import pytest

import gradtape as gt
from gradtape import ir
from gradtape.runtime import compile_function
from gradtape.testing import check_grads

X = np.array([0.4, -1.3, 2.2])


def block(x, w):
    return gt.tanh(gt.sin(x) * w + x)


def test_checkpointed_values_and_gradients_equal_the_plain_function_to_second_order():
    remat = gt.checkpoint(block)
    f = lambda x, w: gt.sum(remat(remat(x, w), w) ** 2)
    plain = lambda x, w: gt.sum(block(block(x, w), w) ** 2)
    np.testing.assert_allclose(gt.differentiable(f)(X, 0.7), gt.differentiable(plain)(X, 0.7), rtol=1e-14)
    for a, b in zip(gt.grad(f, argnums=(0, 1))(X, 0.7), gt.grad(plain, argnums=(0, 1))(X, 0.7)):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    np.testing.assert_allclose(gt.hessian(f)(X, 0.7), gt.hessian(plain)(X, 0.7), rtol=1e-12)
    check_grads(f, [X, 0.7], order=2)


def test_backward_pass_recomputes_instead_of_reading_forward_intermediates():
    remat = gt.remat(block)
    fn = gt.make_ir(lambda x: gt.sum(remat(x, 0.7) ** 2), X)
    joint, _ = ir.vjp(fn, [0])
    names = [e.op.name for e in joint.eqns]
    assert "sin" not in names and "tanh" not in names       # every intermediate stays inside a checkpoint
    backward = [e for e in joint.eqns if e.op.name == "checkpoint"][1]
    assert {"sin", "tanh"} <= {e.op.name for e in backward.params["fn"].eqns}   # recomputed there
    code = compile_function(joint)
    assert code.native, code.fallback_reason
    for got, want in zip(code(X, np.float64(1.0)), ir.eval_function(joint, [X, np.float64(1.0)])):
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_checkpoint_with_pytrees_static_arguments_and_vmap():
    def f(p, scale):
        return {"y": gt.sin(p["a"]) * scale, "z": p["a"] * p["b"]}

    remat = gt.checkpoint(f, static_argnums=(1,))
    p = {"a": X, "b": 2.0}
    out = gt.differentiable(lambda p: remat(p, 3))(p)
    np.testing.assert_allclose(out["y"], np.sin(X) * 3)
    np.testing.assert_allclose(out["z"], X * 2.0)
    batched = gt.vmap(lambda a: gt.sum(remat({"a": a, "b": 2.0}, 3)["y"]))(np.stack([X, -X]))
    np.testing.assert_allclose(batched, [np.sum(np.sin(X) * 3), np.sum(np.sin(-X) * 3)], rtol=1e-14)


def test_checkpoint_policy_is_refused():
    with pytest.raises(TypeError, match=r"checkpoint: policy must be None"):
        gt.checkpoint(block, policy="dots_saveable")


def pair_block(x, w):
    """Two outputs sharing their intermediate."""
    t = gt.sin(x) * w
    return gt.tanh(t + x), gt.sum(t * t)


def pair_loss(x, w):
    a, b = pair_block(x, w)
    return gt.sum(a * a) * b


def test_several_outputs_and_operands_are_one_equation_each_way():
    """A checkpoint of two outputs is one equation (its function runs once for both), and its
    VJP one checkpoint giving the cotangents of both operands: two in all."""
    remat = gt.checkpoint(pair_block)
    joint, _ = ir.vjp(gt.make_ir(lambda x, w: _loss(remat, x, w), X, 0.7), [0, 1])
    checkpoints = [e for e in joint.eqns if e.op.name == "checkpoint"]
    assert [len(e.outvars) for e in checkpoints] == [2, 2]
    for x in (X, -X):
        want = gt.grad(pair_loss, argnums=(0, 1))(x, 0.7)
        got = ir.eval_function(joint, [x, np.float64(0.7), np.float64(1.0)])[1:]
        native = compile_function(joint)(x, np.float64(0.7), np.float64(1.0))[1:]
        for g, n, w in zip(got, native, want):
            np.testing.assert_allclose(g, w, rtol=1e-13)
            np.testing.assert_allclose(n, w, rtol=1e-13)
    check_grads(lambda x, w: _loss(remat, x, w), [X, 0.7], order=2, modes=("rev", "fwd"))


def _loss(remat, x, w):
    a, b = remat(x, w)
    return gt.sum(a * a) * b
