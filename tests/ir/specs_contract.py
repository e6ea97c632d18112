"""Op specs of `contract`, through every front end that lowers to it:
matmul, dot, vdot, inner, outer, tensordot, einsum, trace, diag and norm (the
last four partly gather instead)."""
import numpy as np

import gradtape as gt

from .op_specs import OpSpec, args, normal, positive


def _spec(name, fn, makers, numpy_fn, ops=("contract",), **kw):
    return OpSpec(name, fn, args(*makers), ops=ops, numpy_fn=numpy_fn, **kw)


def _einsum(subscripts, *shapes, ops=("contract",)):
    return _spec(
        "einsum_" + subscripts.replace("->", "_to_").replace(",", "_").replace("...", "E"),
        lambda *xs: gt.einsum(subscripts, *xs),
        [normal(*s) for s in shapes],
        lambda *xs: np.einsum(subscripts, *xs),
        ops=ops,
    )


SPECS = [
    # matmul: 2-D, vectors, batches with broadcasting, float32
    _spec("matmul_2d", lambda a, b: a @ b, [normal(2, 3), normal(3, 4)], np.matmul),
    _spec("matmul_vec_mat", gt.matmul, [normal(3), normal(3, 2)], np.matmul),
    _spec("matmul_mat_vec", gt.matmul, [normal(2, 3), normal(3)], np.matmul),
    _spec("matmul_vec_vec", gt.matmul, [normal(3), normal(3)], np.matmul),
    _spec("matmul_batched", gt.matmul, [normal(2, 2, 3), normal(2, 3, 2)], np.matmul),
    _spec("matmul_batch_broadcast", gt.matmul, [normal(2, 1, 2, 3), normal(3, 3, 2)], np.matmul,
          ops=("contract", "reshape")),
    _spec("matmul_mat_batch", gt.matmul, [normal(2, 3), normal(2, 3, 2)], np.matmul),
    _spec("matmul_f32", gt.matmul, [normal(2, 3, dtype=np.float32), normal(3, 2, dtype=np.float32)],
          np.matmul),
    _spec("matmul_square_chain", lambda a: gt.tanh(a @ a) @ a, [normal(3, 3)],
          lambda a: np.tanh(a @ a) @ a),
    # dot, vdot, inner, outer, tensordot
    _spec("dot_vec", gt.dot, [normal(3), normal(3)], np.dot),
    _spec("dot_nd", gt.dot, [normal(2, 3), normal(2, 3, 2)], np.dot),
    _spec("dot_mat_vec", gt.dot, [normal(2, 3), normal(3)], np.dot),
    _spec("vdot", gt.vdot, [normal(2, 3), normal(3, 2)], np.vdot, ops=("contract", "reshape")),
    _spec("inner", gt.inner, [normal(2, 3), normal(4, 3)], np.inner),
    _spec("outer", gt.outer, [normal(3), normal(2, 2)], np.outer, ops=("contract", "reshape")),
    _spec("tensordot_2", gt.tensordot, [normal(2, 3, 2), normal(3, 2, 2)], np.tensordot),
    _spec("tensordot_pairs", lambda a, b: gt.tensordot(a, b, axes=([0, 2], [2, 0])),
          [normal(2, 3, 4), normal(4, 2, 2)],
          lambda a, b: np.tensordot(a, b, axes=([0, 2], [2, 0]))),
    _spec("tensordot_0", lambda a, b: gt.tensordot(a, b, 0), [normal(2), normal(3)],
          lambda a, b: np.tensordot(a, b, 0)),
    # einsum: explicit, implicit, ellipsis, several operands, letters summed alone
    _einsum("ij,jk->ik", (2, 3), (3, 2)),
    _einsum("bij,bkj->bik", (2, 2, 3), (2, 2, 3)),
    _einsum("ij,jk", (2, 3), (3, 2)),
    _einsum("...ij,...jk->...ik", (2, 2, 3), (3, 2)),
    _einsum("ij,k->i", (2, 3), (4,)),  # j and k each summed out of one operand alone
    _einsum("ij,ik->j", (2, 3), (2, 4)),
    _einsum("i,j,k->ijk", (2,), (3,), (2,)),
    _einsum("ij,jk,kl->il", (2, 3), (3, 2), (2, 2)),
    _einsum("ij,ij->", (2, 3), (2, 3)),
    _einsum("ij,ij->ij", (1, 3), (2, 3), ops=("contract", "reshape")),
    _einsum("ij->j", (2, 3), ops=("reduce_sum",)),
    _einsum("ijk->kij", (2, 3, 2), ops=("transpose",)),
    # diagonals gather (diag of a vector scatters): no product with an identity mask
    _einsum("ii->i", (3, 3), ops=("gather",)),
    _einsum("ii", (3, 3), ops=("gather", "reduce_sum")),
    # trace, diag, norm (norms away from 0, where they are smooth)
    _spec("trace", gt.trace, [normal(3, 3)], np.trace, ops=("gather", "reduce_sum")),
    _spec("trace_offset", lambda a: gt.trace(a, 1), [normal(3, 4)], lambda a: np.trace(a, 1),
          ops=("gather", "reduce_sum")),
    _spec("diag_of_vector", lambda v: gt.diag(v, 1), [normal(3)], lambda v: np.diag(v, 1),
          ops=("scatter_add", "reshape")),
    _spec("diag_of_matrix", lambda a: gt.diag(a, -1), [normal(3, 4)], lambda a: np.diag(a, -1),
          ops=("gather",)),
    _spec("norm_vector", gt.norm, [positive(4)], np.linalg.norm, ops=("mul", "reduce_sum", "sqrt")),
    _spec("norm_1", lambda x: gt.norm(x, 1), [positive(4)], lambda x: np.linalg.norm(x, 1),
          ops=("abs", "reduce_sum")),
    _spec("norm_3", lambda x: gt.norm(x, 3), [positive(4)], lambda x: np.linalg.norm(x, 3),
          ops=("abs", "pow", "reduce_sum")),
    _spec("norm_inf", lambda x: gt.norm(x, np.inf), [normal(4)],
          lambda x: np.linalg.norm(x, np.inf),
          ops=("abs", "reduce_max")),
    _spec("norm_matrix_1", lambda x: gt.norm(x, 1), [normal(3, 4)], lambda x: np.linalg.norm(x, 1),
          ops=("abs", "reduce_sum", "reduce_max")),
    _spec("norm_fro", lambda x: gt.norm(x, "fro"), [normal(2, 3)],
          lambda x: np.linalg.norm(x, "fro"), ops=("mul", "reduce_sum", "sqrt")),
    _spec("norm_axis_keepdims", lambda x: gt.norm(x, axis=1, keepdims=True), [normal(2, 3)],
          lambda x: np.linalg.norm(x, axis=1, keepdims=True), ops=("sqrt", "reshape")),
]
