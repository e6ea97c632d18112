"""`binary`: an op declared by its two partial derivatives gets a VJP and a JVP
that agree with finite differences, broadcasting included.

The op declared here (hypot) is removed from the op table afterwards, so the
tests that walk every op do not see it.
"""
import numpy as np
import pytest

from gradtape import ir
from gradtape.ir import Eqn, Function, TensorType, Var
from gradtape.ir.op import all_ops, batching_rules, impls, jvp_rules, shape_rules, vjp_rules
from gradtape.ir.ops.elementwise import binary


@pytest.fixture(scope="module")
def hypot_p():
    op = binary("test_hypot", np.hypot, lambda x, y, out: (x / out, y / out),
                float_only=True, commutative=True)
    yield op
    del all_ops[op.name]
    for table in (shape_rules, impls, vjp_rules, jvp_rules, batching_rules):
        del table[op]


def _function(op, x_shape, y_shape):
    x, y = Var(TensorType(x_shape, np.float64)), Var(TensorType(y_shape, np.float64))
    out = Var(shape_rules[op](x.type, y.type))
    return Function([x, y], [Eqn(op, [x, y], {}, [out])], [out])


def _numeric_vjp(f, x, y, ct, eps=1e-6):
    """Gradient of sum(ct * f(x, y)) by central differences, per operand."""
    grads = []
    for k, v in enumerate((x, y)):
        g = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            up, down = [x.copy(), y.copy()], [x.copy(), y.copy()]
            up[k][i] += eps
            down[k][i] -= eps
            g[i] = np.sum(ct * (f(*up) - f(*down))) / (2 * eps)
        grads.append(g)
    return grads


SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3))]


@pytest.mark.parametrize("x_shape, y_shape", SHAPES)
def test_vjp_from_partials_sums_broadcast_operands_back(hypot_p, x_shape, y_shape):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.5, 2, x_shape), rng.uniform(-2, -0.5, y_shape)
    fn = _function(hypot_p, x_shape, y_shape)
    ct = rng.standard_normal(fn.outvars[0].type.shape)
    joint, connected = ir.vjp(fn, [0, 1])
    _, gx, gy = ir.eval_function(joint, [x, y, ct])
    want_x, want_y = _numeric_vjp(np.hypot, x, y, ct)
    assert connected == (True, True) and gx.shape == x_shape and gy.shape == y_shape
    np.testing.assert_allclose(gx, want_x, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gy, want_y, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("x_shape, y_shape", SHAPES)
@pytest.mark.parametrize("wrt", [(0,), (1,), (0, 1)])
def test_jvp_from_partials_adds_the_terms_of_the_given_tangents(hypot_p, x_shape, y_shape, wrt):
    rng = np.random.default_rng(1)
    x, y = rng.uniform(0.5, 2, x_shape), rng.uniform(-2, -0.5, y_shape)
    tangents = [rng.standard_normal(s) for s in (x_shape, y_shape)]
    fn = _function(hypot_p, x_shape, y_shape)
    joint, _ = ir.jvp(fn, list(wrt))
    _, t_out = ir.eval_function(joint, [x, y] + [tangents[i] for i in wrt])
    eps = 1e-6
    step = [tangents[i] * eps if i in wrt else 0.0 for i in (0, 1)]
    want = (np.hypot(x + step[0], y + step[1]) - np.hypot(x - step[0], y - step[1])) / (2 * eps)
    np.testing.assert_allclose(t_out, want, rtol=1e-7, atol=1e-9)


def test_unit_partials_emit_no_multiplication():
    """add's partials are (1, 1) and sub's (1, -1): the VJP is ct and neg(ct), nothing else."""
    for name, ops_in_grad in [("add", []), ("sub", ["neg"])]:
        fn = _function(all_ops[name], (3,), (3,))
        joint, _ = ir.vjp(fn, [0, 1])
        assert [e.op.name for e in joint.eqns] == [name] + ops_in_grad


def test_partials_given_as_functions_are_applied_not_formed():
    """div's partial 1 / y is applied as ct / y: for a subnormal y, 1 / y overflows to inf
    while ct / y is finite for a small ct."""
    fn = _function(all_ops["div"], (2,), (2,))
    joint, _ = ir.vjp(fn, [0, 1])
    x, y, ct = np.array([1e-320, 2.0]), np.array([1e-310, 4.0]), np.array([1e-10, 1.0])
    _, gx, gy = ir.eval_function(joint, [x, y, ct])
    np.testing.assert_allclose(gx, ct / y, rtol=1e-15)
    np.testing.assert_allclose(gy, -(ct * (x / y)) / y, rtol=1e-15)
    assert np.isfinite(gx).all() and np.isfinite(gy).all()
