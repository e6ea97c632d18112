"""Op specs of NumPy's shape functions built from the layout and gather ops
(gradtape/functions/rearrange.py, joining.py, sorting.py, grids.py): flip, roll, rot90, tril/triu,
diagonal, repeat, tile, kron, atleast_nd, the stack and split families, sort,
argsort, partition, take_along_axis, searchsorted, linspace, meshgrid, pad modes and
einsum's sublist form and optimize=.

Each is called the way users write it, through NumPy (`np.flip(t)`), so the
dispatch is checked too, and composed with a nonlinearity so that second and
third derivatives are not trivially zero.
"""
import numpy as np

from .op_specs import OpSpec, args, normal


def _spec(name, fn, *makers, ops, np_fn=None):
    """fn is written with NumPy calls: on Tensors it dispatches to gradtape, on arrays it is
    NumPy itself, the reference."""
    return OpSpec(name, fn, args(*makers), ops=ops, numpy_fn=np_fn or fn)


def _sin(x):
    return np.sin(x)  # np.sin of a Tensor is gradtape's


def _split_product(x):
    a, b, c = np.array_split(x, 3, axis=1)
    return a[:, 1:] * _sin(b[:, :2]) + c


SPECS = [
    # --- flips and rotations -----------------------------------------------------------------
    _spec("np_flip_all", lambda x: _sin(np.flip(x)) * x, normal(2, 3), ops=("slice",)),
    _spec("np_flip_axes", lambda x: np.flip(x, (0, 2)) ** 2 * x, normal(2, 3, 2), ops=("slice",)),
    _spec("np_fliplr_flipud", lambda x: np.fliplr(x) * _sin(np.flipud(x)), normal(3, 3),
          ops=("slice",)),
    _spec("np_rot90", lambda x: _sin(np.rot90(x)) * np.rot90(x, -1, axes=(1, 0)), normal(3, 3),
          ops=("slice", "transpose")),
    _spec("np_rot90_k2_3d", lambda x: np.rot90(x, 2, axes=(2, 0)) ** 2, normal(2, 3, 2),
          ops=("slice",)),
    _spec("np_roll_axis", lambda x: np.roll(x, 2, axis=1) * _sin(x), normal(2, 5),
          ops=("slice", "concatenate")),
    _spec("np_roll_flat_negative", lambda x: _sin(np.roll(x, -4)), normal(2, 3),
          ops=("slice", "concatenate", "reshape")),
    _spec("np_roll_two_axes", lambda x: np.roll(x, (1, -1), axis=(0, 1)) ** 2, normal(3, 4),
          ops=("slice", "concatenate")),
    # --- triangles and diagonals ----------------------------------------------------------------
    _spec("np_tril", lambda x: _sin(np.tril(x)) * x, normal(3, 4), ops=("where",)),
    _spec("np_triu_offset_batched", lambda x: np.triu(x, -1) ** 2, normal(2, 3, 3), ops=("where",)),
    _spec("np_tril_vector", lambda x: _sin(np.tril(x, 1)), normal(3), ops=("where",)),
    _spec("np_diagonal", lambda x: _sin(np.diagonal(x)) * np.diagonal(x, 1), normal(3, 4),
          ops=("gather", "scatter_add")),
    _spec("np_diagonal_axes_3d", lambda x: np.diagonal(x, -1, 2, 0) ** 2, normal(3, 2, 3),
          ops=("gather", "transpose")),
    # --- replication -------------------------------------------------------------------------------
    _spec("np_repeat_scalar", lambda x: _sin(np.repeat(x, 2, axis=1)), normal(2, 3),
          ops=("broadcast_to", "reshape")),
    _spec("np_repeat_counts", lambda x: np.repeat(x, [2, 0, 1]) ** 2, normal(3),
          ops=("gather", "scatter_add")),
    _spec("np_tile", lambda x: _sin(np.tile(x, (2, 1, 2))), normal(2, 3),
          ops=("broadcast_to", "reshape")),
    _spec("np_kron", lambda x, y: _sin(np.kron(x, y)), normal(2, 3), normal(2, 2),
          ops=("mul", "reshape")),
    _spec("np_kron_vector_matrix", lambda x, y: np.kron(x, y) ** 2, normal(2), normal(2, 2),
          ops=("mul", "reshape")),
    _spec("np_atleast", lambda x: np.atleast_3d(x) * _sin(np.atleast_2d(x)), normal(3),
          ops=("reshape",)),
    # --- stacking ------------------------------------------------------------------------------------
    _spec("np_vstack", lambda x, y: _sin(np.vstack([x, y, x])), normal(3), normal(2, 3),
          ops=("concatenate", "reshape")),
    _spec("np_hstack", lambda x, y: np.hstack((x, y)) ** 2, normal(2, 1), normal(2, 3),
          ops=("concatenate",)),
    _spec("np_dstack", lambda x, y: _sin(np.dstack([x, y])), normal(2, 3), normal(2, 3),
          ops=("concatenate", "reshape")),
    _spec("np_column_stack", lambda x, y: np.column_stack([x, _sin(y)]) * 2.0, normal(3),
          normal(3, 2), ops=("concatenate", "reshape")),
    # --- splitting ---------------------------------------------------------------------------------
    _spec("np_array_split", _split_product, normal(2, 8), ops=("slice", "unslice")),
    _spec("np_split_points", lambda x: np.split(x, [1, 3])[1] * _sin(np.split(x, [1, 3])[2]),
          normal(5), ops=("slice",)),
    _spec("np_hsplit_vsplit", lambda x: np.hsplit(x, 2)[0] * _sin(np.vsplit(x, 2)[1]).T,
          normal(2, 2), ops=("slice",)),
    _spec("np_dsplit", lambda x: np.dsplit(x, 2)[0] ** 2 - np.dsplit(x, 2)[1], normal(1, 2, 4),
          ops=("slice",)),
    # --- sorting and searching (staged: the permutation from the argsort op) -------------------------
    _spec("np_sort", lambda x: _sin(np.sort(x)) * np.sort(x, axis=0), normal(3, 4),
          ops=("argsort", "gather", "scatter_add")),
    _spec("np_sort_flat_with_ties", lambda x: np.sort(np.concatenate([x, x[::-1]]), axis=None) ** 3,
          normal(2, 2), ops=("argsort", "gather")),
    _spec("np_argsort_times_x", lambda x: _sin(x) * np.argsort(x, axis=0), normal(4, 2),
          ops=("argsort",)),
    _spec("np_partition_kth_and_smallest", lambda x: _sin(np.partition(x, 2)[:, 2])
          + np.sum(np.partition(x, 2)[:, :2], axis=1) ** 2, normal(3, 5), ops=("argsort", "gather")),
    _spec("np_take_along_axis", lambda x: np.take_along_axis(x, np.array([[2, 0, 0]]), 1) ** 2,
          normal(2, 3), ops=("gather", "scatter_add")),
    _spec("np_searchsorted", lambda a, v: v * np.searchsorted(np.sort(a), v, side="right") + _sin(v),
          normal(5), normal(2, 3), ops=("less", "reduce_sum")),
    # --- grids --------------------------------------------------------------------------------------
    _spec("np_linspace", lambda a, b: _sin(np.linspace(a, b, 5)), normal(), normal(2),
          ops=("mul", "add", "where")),
    _spec("np_linspace_axis_no_endpoint", lambda a, b: np.linspace(a, b, 3, endpoint=False, axis=1) ** 2,
          normal(2), normal(2), ops=("mul", "add")),
    _spec("np_meshgrid", lambda x, y: np.meshgrid(x, y)[0] * _sin(np.meshgrid(x, y, indexing="ij")[1].T),
          normal(3), normal(2), ops=("broadcast_to", "reshape")),
    # --- pad modes (gathers of x's own elements) and einsum's other forms ----------------------
    _spec("np_pad_reflect", lambda x: _sin(np.pad(x, ((2, 1), (0, 3)), mode="reflect")), normal(3, 4),
          ops=("gather", "scatter_add")),
    _spec("np_pad_edge_symmetric_wrap",
          lambda x: np.pad(x, 2, mode="edge") * np.pad(x, 2, mode="symmetric") - np.pad(x, 2, mode="wrap"),
          normal(2, 3), ops=("gather", "scatter_add")),
    _spec("np_einsum_sublist", lambda x, y: _sin(np.einsum(x, [0, 1], y, [Ellipsis, 1, 2], [Ellipsis, 0, 2])),
          normal(2, 3), normal(2, 3, 2), ops=("contract",)),
    _spec("np_einsum_optimize", lambda x, y, z: np.einsum("ij,jk,kl->li", x, y, z, optimize="optimal") ** 2,
          normal(2, 3), normal(3, 4), normal(4, 2), ops=("contract",)),
    # --- float32 ---------------------------------------------------------------------------------
    _spec("np_roll_tile_float32", lambda x: _sin(np.tile(np.roll(x, 1), 2)),
          normal(3, dtype=np.float32), ops=("slice", "concatenate", "broadcast_to")),
]
