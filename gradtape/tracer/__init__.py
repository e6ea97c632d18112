"""Tensors, Variables, the tape stack, GradientTape, and NumPy dispatch."""
from . import numpy_dispatch  # noqa: F401  (installs the NumPy protocols on Tensor)
from .dispatch import bind
from .errors import (ArrayModifiedError, ConcretizationError, ConstantConversionError, TracerError,
                     UnexpectedTracerError,
                     UnsupportedNumPyFunction)
from .forward_accumulator import ForwardAccumulator
from .gradient_tape import GradientTape, UnconnectedGradients
from . import value_plans  # noqa: F401  (reads a repeating recording's value with a compiled plan)
from .tensor import Tensor
from .variable import Variable
from .trace import make_ir, trace
from .custom_gradient import custom_gradient
