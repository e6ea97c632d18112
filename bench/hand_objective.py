"""ADBench's hand-tracking objective (the simple variant), written from its definition.

A skinned hand mesh posed by 26 parameters (ADBench's `hand_objective`,
Srajer et al. 2018): a global rotation (angle-axis, 3) and translation (3),
then 4 joint angles per finger (2 at the knuckle, 1 at each of the two
other joints). Each bone's pose is its base transform times the rotation of
its Euler angles; bones compose from the root down their parents (22 bones:
forearm, wrist, and per finger a metacarpal and three phalanges); each
vertex is the blend, by its skinning weights, of its bones' transforms
(from the base pose to the posed one) applied to its base position; the
global rotation and translation come last. The residuals are
`points[i] - vertex[correspondences[i]]`, 3 per point; the derivative
wanted is their (n, 3, 26) Jacobian with respect to the parameters.

The skeleton and mesh are synthetic, of our own construction (ADBench's
data files are not used): the same 22 bones, the same 26 parameters and
the same residual structure, with 546 vertices (ADBench's hand has 544)
set in rings along the bones, each weighted to its bone and the bone's
parent. Unlike ADBench's C++, the global rotation has no branch for a zero
angle: the synthetic pose's is never zero. `np_` is the array module:
gradtape, NumPy or jax.numpy.
"""
from __future__ import annotations

import numpy as np

N_PARAMS = 26
FINGERS = 5
N_BONES = 2 + 4 * FINGERS  # forearm, wrist, per finger: metacarpal and 3 phalanges
PARENTS = np.array([-1, 0] + [p for f in range(FINGERS) for p in (1, 2 + 4 * f, 3 + 4 * f, 4 + 4 * f)])


def pose_index():
    """(N_BONES * 3,) positions in [0, theta[6:]...]: each bone's 3 Euler angles (0: none)."""
    index = np.zeros((N_BONES, 3), dtype=np.int64)
    at = 1
    for f in range(FINGERS):
        knuckle = 3 + 4 * f  # the proximal phalanx: two angles; the other two joints one
        index[knuckle, 0], index[knuckle, 1] = at, at + 1
        index[knuckle + 1, 0], index[knuckle + 2, 0] = at + 2, at + 3
        at += 4
    return index.reshape(-1)


POSE_INDEX = pose_index()


def euler_rotations(np_, angles):
    """(b, 3, 3) rotations Rz @ Ry @ Rx from (b, 3) angles (x, z, y), as ADBench orders them."""
    tx, tz, ty = angles[:, 0], angles[:, 1], angles[:, 2]
    cx, sx, cy, sy, cz, sz = np_.cos(tx), np_.sin(tx), np_.cos(ty), np_.sin(ty), np_.cos(tz), np_.sin(tz)
    rows = [cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx,
            sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx,
            -sy, cy * sx, cy * cx]
    return np_.reshape(np_.stack(rows, axis=1), (-1, 3, 3))


def angle_axis_to_rotation_matrix(np_, angle_axis):
    theta = np_.sqrt(np_.sum(angle_axis * angle_axis))
    x, y, z = angle_axis[0] / theta, angle_axis[1] / theta, angle_axis[2] / theta
    s, c = np_.sin(theta), np_.cos(theta)
    rows = [x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s,
            x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s,
            x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]
    return np_.reshape(np_.stack(rows), (3, 3))


def bone_transforms(np_, theta, model):
    """(t_rot (B, 3, 3), t_t (B, 3)): each bone's posed absolute transform times its inverse base one."""
    angles = np_.concatenate([np_.zeros_like(theta[:1]), theta[6:]])[POSE_INDEX]
    rel_rot = np_.einsum("bij,bjk->bik", model["base_rot"], euler_rotations(np_, np_.reshape(angles, (N_BONES, 3))))
    abs_rot, abs_t = [], []
    for b in range(N_BONES):
        p = PARENTS[b]
        if p < 0:
            abs_rot.append(rel_rot[b])
            abs_t.append(model["base_t"][b])
        else:
            abs_rot.append(abs_rot[p] @ rel_rot[b])
            abs_t.append(abs_rot[p] @ model["base_t"][b] + abs_t[p])
    abs_rot, abs_t = np_.stack(abs_rot), np_.stack(abs_t)
    # posed absolute transforms times the inverse base absolutes
    t_rot = np_.einsum("bij,bjk->bik", abs_rot, model["inv_base_rot"])
    t_t = np_.einsum("bij,bj->bi", abs_rot, model["inv_base_t"]) + abs_t
    return t_rot, t_t


def vertex_positions(np_, theta, model):
    """(V, 3) posed vertices: the skinning as one three-operand einsum."""
    t_rot, t_t = bone_transforms(np_, theta, model)
    skinned = np_.einsum("vb,bij,vj->vi", model["weights"], t_rot, model["base_positions"]) + model["weights"] @ t_t
    return skinned @ np_.transpose(angle_axis_to_rotation_matrix(np_, theta[0:3])) + theta[3:6]


def hand_objective(np_, theta, model, correspondences, points):
    """(n, 3): each point minus its corresponding posed vertex."""
    return points - vertex_positions(np_, theta, model)[correspondences]


def hand_objective_chained(np_, theta, model, correspondences, points):
    """hand_objective as a first-time user may write it: each point's blended transform
    gathered per point (the weights' n rows), then applied to its base position by a second
    einsum: two chained contractions and a gather of n rows, each of the point's bones."""
    t_rot, t_t = bone_transforms(np_, theta, model)
    weights = np_.asarray(model["weights"])[correspondences]  # (n, B)
    blended = np_.einsum("nb,bij->nij", weights, t_rot)  # (n, 3, 3)
    skinned = np_.einsum("nij,nj->ni", blended, np_.asarray(model["base_positions"])[correspondences])
    skinned = skinned + weights @ t_t
    posed = skinned @ np_.transpose(angle_axis_to_rotation_matrix(np_, theta[0:3])) + theta[3:6]
    return points - posed


def hand_objective_gathered(np_, theta, model, correspondences, points):
    """hand_objective with the skinning as two chained einsums over the vertices and the
    residuals gathered from the flat (3V,) posed vertices by an index of 3n elements."""
    t_rot, t_t = bone_transforms(np_, theta, model)
    blended = np_.einsum("vb,bij->vij", model["weights"], t_rot)  # (V, 3, 3)
    skinned = np_.einsum("vij,vj->vi", blended, model["base_positions"]) + model["weights"] @ t_t
    posed = skinned @ np_.transpose(angle_axis_to_rotation_matrix(np_, theta[0:3])) + theta[3:6]
    flat_index = 3 * correspondences[:, None] + np.arange(3)  # (n, 3) into the flat (3V,)
    return points - np_.reshape(posed, (-1,))[flat_index]


FORMS = {"einsum3": hand_objective, "chained": hand_objective_chained, "gathered": hand_objective_gathered}


def _bone_offsets():
    """Each bone's head relative to its parent's, in the parent's frame."""
    t = np.zeros((N_BONES, 3))
    t[1] = [2.0, 0.0, 0.0]  # the wrist at the end of the forearm
    for f in range(FINGERS):
        spread = 0.25 * (f - 2)
        t[2 + 4 * f] = [0.1, 0.5 * spread, 0.0]  # metacarpal from the wrist
        t[3 + 4 * f] = [0.9, spread, 0.0]  # knuckle
        t[4 + 4 * f] = [0.45, 0.0, 0.0]
        t[5 + 4 * f] = [0.3, 0.0, 0.0]
    return t


def model(seed: int = 0, rings: int = 2, per_ring: int = 13) -> dict:
    """The synthetic skeleton and mesh: base rotations (small, random), bone offsets, base
    vertex positions in rings along bones 1..21 and their skinning weights (V, 22)."""
    rng = np.random.default_rng(seed)
    base_rot = euler_rotations(np, rng.uniform(-0.15, 0.15, (N_BONES, 3)))
    base_t = _bone_offsets()
    abs_rot, abs_t = np.empty((N_BONES, 3, 3)), np.empty((N_BONES, 3))
    for b in range(N_BONES):
        p = PARENTS[b]
        abs_rot[b] = base_rot[b] if p < 0 else abs_rot[p] @ base_rot[b]
        abs_t[b] = base_t[b] if p < 0 else abs_rot[p] @ base_t[b] + abs_t[p]
    inv_rot = np.transpose(abs_rot, (0, 2, 1))
    lengths = np.full(N_BONES, 0.25)
    for b in range(1, N_BONES):
        lengths[PARENTS[b]] = np.linalg.norm(base_t[b])
    positions, weights = [], []
    for b in range(1, N_BONES):
        for s in (np.arange(rings) + 0.5) / rings:
            for k in range(per_ring):
                a = 2 * np.pi * k / per_ring
                local = np.array([s * lengths[b], 0.1 * np.cos(a), 0.1 * np.sin(a)])
                positions.append(abs_rot[b] @ local + abs_t[b])
                wv = np.zeros(N_BONES)
                wv[PARENTS[b]] = 0.5 * (1 - s)
                wv[b] = 1 - wv[PARENTS[b]]
                weights.append(wv)
    positions = np.array(positions)
    return {"base_rot": base_rot, "base_t": base_t, "inv_base_rot": inv_rot,
            "inv_base_t": -np.einsum("bij,bj->bi", inv_rot, abs_t),
            "base_positions": positions, "weights": np.array(weights)}


def inputs(n: int, seed: int = 0):
    """(theta, model, correspondences, points): n points near the vertices of a pose near
    theta (ADBench's data are points on a posed mesh; here the mesh is ours)."""
    rng = np.random.default_rng(seed)
    m = model(seed)
    theta = rng.uniform(-0.3, 0.3, N_PARAMS)
    theta[0:3] += 0.2  # a nonzero global rotation
    correspondences = rng.integers(0, len(m["weights"]), n)
    posed = vertex_positions(np, theta + rng.normal(0, 0.05, N_PARAMS), m)
    points = posed[correspondences] + rng.normal(0, 0.01, (n, 3))
    return theta, m, correspondences, points
