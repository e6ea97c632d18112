"""One RK4 step of y' = -th y + 0.5 sin(y), the loop body of the loop tests that compare
scan, while_loop and the unrolled loop (test_while_once.py, test_scan_residuals.py)."""
import gradtape as gt

DT = 0.05


def rk4_step(y, th, dt=DT):
    f = lambda y: -th * y + 0.5 * gt.sin(y)
    k1 = f(y)
    k2 = f(y + 0.5 * dt * k1)
    k3 = f(y + 0.5 * dt * k2)
    k4 = f(y + dt * k3)
    return y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
