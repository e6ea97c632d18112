"""ADBench's bundle adjustment (BA) objective, written from its definition with NumPy calls.

n cameras, m points, p observations (ADBench's `ba_objective`, Srajer et al.
2018). A camera is 11 numbers: a Rodrigues (angle-axis) rotation (3), its
center (3), the focal length, the principal point (2) and two radial
distortion coefficients. Observation i sees point `obs[i, 1]` from camera
`obs[i, 0]` at feature `feats[i]` with weight `w[i]`; its residuals are the
weighted reprojection error (2) and the weight's `1 - w**2` (1).

The benchmark computes the sparse Jacobian row block by row block: the
three residuals of an observation depend on 15 numbers only (its camera's
11, its point's 3, its weight), so `observation_rows` gathers them into a
(p, 15) array and the derivative wanted is the (p, 3, 15) blocks; `obs`
says where each block goes in the (3p) x (11n + 3m + p) sparse matrix.
`observation_residuals` works on the last axis, so the same code runs on
one observation (15,) or on all of them (p, 15).

Unlike ADBench's C++, the rotation has no branch for a zero angle: the
synthetic cameras' rotations are never zero. `np_` is the array module:
gradtape, NumPy or jax.numpy.
"""
from __future__ import annotations

import numpy as np

N_CAM = 11  # rotation 0:3, center 3:6, focal 6, principal point 7:9, radial distortion 9:11


def cross(np_, a, b):
    return np_.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                      a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                      a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def rodrigues_rotate_point(np_, rot, x):
    theta = np_.sqrt(np_.sum(rot * rot, axis=-1, keepdims=True))
    costheta, sintheta = np_.cos(theta), np_.sin(theta)
    w = rot / theta
    tmp = np_.sum(w * x, axis=-1, keepdims=True) * (1.0 - costheta)
    return x * costheta + cross(np_, w, x) * sintheta + w * tmp


def radial_distort(np_, rad, proj):
    rsq = np_.sum(proj * proj, axis=-1, keepdims=True)
    return proj * (1.0 + rad[..., 0:1] * rsq + rad[..., 1:2] * rsq * rsq)


def project(np_, cam, x):
    xcam = rodrigues_rotate_point(np_, cam[..., 0:3], x - cam[..., 3:6])
    distorted = radial_distort(np_, cam[..., 9:11], xcam[..., 0:2] / xcam[..., 2:3])
    return distorted * cam[..., 6:7] + cam[..., 7:9]


def observation_residuals(np_, rows, feats):
    """(..., 3): an observation's weighted reprojection error and weight residual, from its
    (..., 15) row (camera, point, weight) and its (..., 2) feature."""
    cam, x, w = rows[..., 0:N_CAM], rows[..., N_CAM:N_CAM + 3], rows[..., N_CAM + 3:N_CAM + 4]
    return np_.concatenate([w * (project(np_, cam, x) - feats), 1.0 - w * w], axis=-1)


def observation_rows(cams, x, w, obs):
    """(p, 15): each observation's camera, point and weight (a NumPy gather)."""
    return np.concatenate([cams[obs[:, 0]], x[obs[:, 1]], w[:, None]], axis=1)


def ba_objective(np_, cams, x, w, obs, feats):
    """(p, 3): every observation's residuals, from the n cameras and m points."""
    rows = np_.concatenate([cams[obs[:, 0]], x[obs[:, 1]], w[:, None]], axis=1)
    return observation_residuals(np_, rows, feats)


def inputs(n: int, m: int, p: int, seed: int = 0):
    """(cams, x, w, obs, feats): n cameras about 10 units behind m points in the unit cube;
    observations pair camera i % n with point i % m, as ADBench's generator does."""
    rng = np.random.default_rng(seed)
    cams = np.empty((n, N_CAM))
    cams[:, 0:3] = rng.uniform(0.05, 0.3, (n, 3)) * rng.choice([-1.0, 1.0], (n, 3))
    cams[:, 3:6] = rng.uniform(-1, 1, (n, 3)) + [0.0, 0.0, -10.0]
    cams[:, 6] = rng.uniform(300, 500, n)
    cams[:, 7:9] = rng.uniform(-10, 10, (n, 2))
    cams[:, 9:11] = rng.uniform(-0.1, 0.1, (n, 2))
    x = rng.uniform(-1, 1, (m, 3))
    w = rng.uniform(0.5, 1.5, p)
    i = np.arange(p)
    obs = np.stack([i % n, i % m], axis=1)
    feats = rng.uniform(-50, 50, (p, 2))
    return cams, x, w, obs, feats
