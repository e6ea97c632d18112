"""A deliberately wrong-but-valid custom derivative and its finite-difference
derivatives, shared by the custom-derivative tests: sin(x) with the rule
x * exp(-x^2 / 2), so any path that used the true derivative would fail."""
import numpy as np

H = 1e-4  # finite-difference step on the analytic first derivative


def rule(x):
    """The custom first derivative (analytic, NumPy)."""
    return x * np.exp(-x * x / 2)


def rule_fd(x):
    """Its derivative by central differences: what the second derivative must be."""
    return (rule(x + H) - rule(x - H)) / (2 * H)


def rule_fd2(x):
    """Its second derivative by central differences: what the third derivative must be."""
    return (rule(x + H) - 2 * rule(x) + rule(x - H)) / H**2
