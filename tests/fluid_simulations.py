"""The objectives of HIPS autograd's examples/fluidsim/fluidsim.py and
examples/fluidsim/wing.py (Jos Stam's "Real-Time Fluid Dynamics for Games":
semi-Lagrangian advection, then a Jacobi pressure projection on a periodic
grid), restated as plain NumPy code at small sizes.

The code is written as those examples write theirs, since the point is that
such code differentiates unchanged: NumPy calls on whatever comes in,
`np.floor(...).astype(int)` for the source cells, fancy indexing with those
integer arrays, in-place `-=` on the velocities, masks filled by slice
assignment into NumPy arrays. Called with arrays it is the reference
(finite differences); called with tensors it runs on a tape or is traced.
"""
import numpy as np


def advect(field, vx, vy):
    """field carried along (vx, vy) for one step: each cell takes the bilinear
    interpolation of field at the point the flow came from (wrapping around)."""
    n_rows, n_cols = field.shape
    col, row = np.meshgrid(np.arange(n_cols), np.arange(n_rows))
    src_row = (row - vy).ravel()
    src_col = (col - vx).ravel()
    r0 = np.floor(src_row).astype(int)
    c0 = np.floor(src_col).astype(int)
    fr = src_row - r0  # how far past cell r0 the source lies, in [0, 1)
    fc = src_col - c0
    r0, c0 = np.mod(r0, n_rows), np.mod(c0, n_cols)
    r1, c1 = np.mod(r0 + 1, n_rows), np.mod(c0 + 1, n_cols)
    upper = (1 - fc) * field[r0, c0] + fc * field[r0, c1]
    lower = (1 - fc) * field[r1, c0] + fc * field[r1, c1]
    return np.reshape((1 - fr) * upper + fr * lower, (n_rows, n_cols))


def _neighbour_sum(a):
    return np.roll(a, 1, axis=0) + np.roll(a, -1, axis=0) + np.roll(a, 1, axis=1) + np.roll(a, -1, axis=1)


def _central(a, axis):
    """a[i + 1] - a[i - 1] along axis, periodic."""
    return np.roll(a, -1, axis=axis) - np.roll(a, 1, axis=axis)


# fluidsim.py: find the initial velocity field that carries a smoke image onto a target image


def project(vx, vy, sweeps):
    """Subtract the gradient of a pressure that makes (vx, vy) nearly divergence-free."""
    h = 1.0 / vx.shape[0]
    divergence = -0.5 * h * (_central(vx, 1) + _central(vy, 0))
    pressure = np.zeros(vx.shape)
    for _ in range(sweeps):
        pressure = (divergence + _neighbour_sum(pressure)) / 4.0
    vx -= 0.5 * _central(pressure, 1) / h  # rebinds a tensor; updates an array in place, as fluidsim does
    vy -= 0.5 * _central(pressure, 0) / h
    return vx, vy


def smoke_objective(params, smoke, target, steps=3, sweeps=5):
    """Mean squared distance to target of the smoke after `steps` steps, with the initial
    velocities params = (vx.ravel(), vy.ravel())."""
    n_rows, n_cols = smoke.shape
    vx = np.reshape(params[: n_rows * n_cols], (n_rows, n_cols))
    vy = np.reshape(params[n_rows * n_cols:], (n_rows, n_cols))
    for _ in range(steps):
        vx, vy = project(advect(vx, vx, vy), advect(vy, vx, vy), sweeps)
        smoke = advect(smoke, vx, vy)
    return np.mean((target - smoke) ** 2)


# wing.py: shape an obstacle (a soft occlusion mask) for the most lift per drag


def blocked(field, occlusion):
    return field * (1 - occlusion)


def fill_occluded(field, occlusion):
    """Inside the obstacle, field becomes the average of its open neighbours."""
    open_ = 1 - occlusion
    total = _neighbour_sum(field * open_)
    weight = _neighbour_sum(open_)
    return field * open_ + occlusion * total / (weight + 0.001)


def project_around(vx, vy, occlusion, sweeps):
    divergence = fill_occluded(-0.5 * (_central(vx, 1) + _central(vy, 0)), occlusion)
    pressure = np.zeros(vx.shape)
    for _ in range(sweeps):
        pressure = fill_occluded((divergence + _neighbour_sum(pressure)) / 4.0, occlusion)
    vx = blocked(vx - 0.5 * _central(pressure, 1), occlusion)
    vy = blocked(vy - 0.5 * _central(pressure, 0), occlusion)
    return vx, vy


def wing_objective(params, shape, window, red, blue, steps=2, sweeps=5):
    """-lift / drag of a unit wind from the left past the obstacle tanh(params) / 2 + 1/2,
    allowed only in the square rows and columns window = (start, stop); red and blue smoke
    ride along (wing.py makes them inside; here they come in, see the test's docstring)."""
    start, stop = window
    mask = np.zeros(shape)
    mask[start:stop, start:stop] = 1.0
    occlusion = 0.5 * (np.tanh(np.reshape(params, shape)) + 1.0) * mask
    wind_x, wind_y = np.ones(shape), np.zeros(shape)
    vx, vy = project_around(wind_x, wind_y, occlusion, sweeps)
    for _ in range(steps):
        vx, vy = project_around(advect(vx, vx, vy), advect(vy, vx, vy), occlusion, sweeps)
        red = blocked(advect(red, vx, vy), occlusion)
        blue = blocked(advect(blue, vx, vy), occlusion)
    lift = np.mean(vy - wind_y)
    drag = np.mean(wind_x - vx)
    return -lift / drag
