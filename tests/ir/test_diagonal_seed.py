"""fold_diagonal_seeds: a contraction with diag(v) (the identity seed times an elementwise
derivative) becomes a product with v, with the values of the matrix product."""
import numpy as np

import gradtape as gt
from gradtape import ir
from gradtape.ir.diagonal_seed import fold_diagonal_seeds
from gradtape.ir.jacobians import jacfwd_function
from gradtape.ir.ops.contract import contract_p
from gradtape.ir.optimize import optimize


def _square_contractions(fn):
    return [e for e in fn.eqns if e.op is contract_p and any(
        len(a.type.shape) == 2 and a.type.shape[0] == a.type.shape[1] for a in e.inputs)]


def test_forward_jacobian_of_a_matrix_product_scales_the_matrix():
    rng = np.random.default_rng(0)
    a, x = rng.standard_normal((60, 8)), rng.standard_normal(8)
    fn = gt.make_ir(lambda x: gt.tanh(a @ gt.sin(x)), x)
    jac = optimize(jacfwd_function(fn, [0]))
    assert _square_contractions(jac)  # (8, 8) diag(cos x) times a: the n^2 m product
    folded = fold_diagonal_seeds(jac)
    assert not _square_contractions(folded)
    got = ir.eval_function(folded, [x])[0]
    np.testing.assert_array_equal(got, ir.eval_function(jac, [x])[0])
    y = np.tanh(a @ np.sin(x))
    np.testing.assert_allclose(got, (1 - y * y)[:, None] * a * np.cos(x), rtol=1e-13, atol=1e-15)


def test_the_staged_jacobian_uses_it():
    rng = np.random.default_rng(1)
    a, x = rng.standard_normal((5, 30)), rng.standard_normal(30)
    f = gt.jacfwd(lambda x: gt.exp(gt.sin(x) @ a.T))
    got = np.asarray(f(x))
    (_, program), = f.programs()
    assert not _square_contractions(program.fn)
    y = np.exp(a @ np.sin(x))
    np.testing.assert_allclose(got, y[:, None] * a * np.cos(x), rtol=1e-13)


def test_a_jacobian_through_a_sum_keeps_its_values():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(6)
    fn = optimize(jacfwd_function(gt.make_ir(lambda x: gt.sum(gt.sin(x)) * x, x), [0]))
    np.testing.assert_array_equal(ir.eval_function(fold_diagonal_seeds(fn), [x])[0],
                                  ir.eval_function(fn, [x])[0])
