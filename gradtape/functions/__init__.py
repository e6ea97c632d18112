"""The NumPy-like functions of gradtape's public namespace.

Each module registers its functions for the NumPy functions they implement
and installs its own Tensor methods (operators, indexing, .sum, ...).
"""
from . import operators  # noqa: F401  (installs Tensor's arithmetic operators)
from .elementwise import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
