"""Optimizers and learning-rate schedules, Keras style and functional::

    opt = gradtape.optimizers.Adam(learning_rate=1e-3)

    # Keras style, on Variables (slots per variable, an iterations counter):
    with gradtape.GradientTape() as tape:
        loss = loss_fn(params, x, y)
    opt.apply_gradients(zip(tape.gradient(loss, params), params))

    # functional, on nested lists/tuples/dicts of arrays (traceable):
    state = opt.init(params)
    params, state = opt.update(grads, state, params)

    # compiled: loss, gradient and update in one native call per step
    step = gradtape.train_step(loss_fn, opt)
    loss = step(params, x, y)

Files: base.py (Optimizer: the three ways to apply a rule), sgd.py, adam.py
(Adam, AdamW), rmsprop.py (the rules, Keras's formulas), schedules.py
(learning-rate schedules), checks.py (gradient checks and their errors),
structure.py (comparing parameter trees), _generic.py (arithmetic on arrays
and Tensors alike).
"""
from . import schedules  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .base import Optimizer  # noqa: F401
from .checks import NonFiniteGradientError  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .sgd import SGD  # noqa: F401
