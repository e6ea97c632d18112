"""fuse_fills checks a node read along several paths (RK4's k1 feeds k2 and the sum) once:
walking every path made the unrolled RK4 gradient's compile exponential in the steps."""
import numpy as np

import gradtape as gt
from gradtape.codegen import lowering, nodes


def rk4_unrolled(th, y, steps=8, dt=0.01):
    f = lambda y: -th * y + 0.5 * gt.sin(y)
    for _ in range(steps):
        k1 = f(y)
        k2 = f(y + 0.5 * dt * k1)
        k3 = f(y + 0.5 * dt * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return gt.sum(y * y)


def test_the_walk_visits_each_shared_node_a_bounded_number_of_times(monkeypatch):
    th, y = np.linspace(0.5, 1.5, 4), np.linspace(-1, 1, 4)
    fn = gt.make_ir(gt.grad(rk4_unrolled), th, y)
    calls = [0]
    children = nodes.Map.children

    def counted(self):
        calls[0] += 1
        return children(self)
    monkeypatch.setattr(nodes.Map, "children", counted)
    lowering.lower_function(fn, "rk4")
    assert calls[0] < 300 * len(fn.eqns)          # was exponential in the steps (billions at 8 steps)
    monkeypatch.undo()
    g = gt.grad(rk4_unrolled)(th, y)
    eps = 1e-6
    fd = [(rk4_unrolled(th + eps * e, y) - rk4_unrolled(th - eps * e, y)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(g, np.array([float(v) for v in fd]), rtol=1e-6)
