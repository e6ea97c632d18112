"""The op table: every primitive with its shape rule, reference and derivatives.

Importing this package declares every op. The functions exported here emit
equations on Syms; derivative rules and passes are written with them.
"""
from .elementwise import *  # noqa: F401,F403
from .complex_parts import *  # noqa: F401,F403
from .fourier import *  # noqa: F401,F403
from .fourier_pairs import *  # noqa: F401,F403
from .complex_product import *  # noqa: F401,F403
from .elementwise_division import *  # noqa: F401,F403
from .int_pow import *  # noqa: F401,F403
from .bitwise import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .random_bits import *  # noqa: F401,F403
from .layout import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .sort import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .contract import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .linalg_decomp import *  # noqa: F401,F403
from .linalg_eig import *  # noqa: F401,F403
from .call import *  # noqa: F401,F403
from .custom import *  # noqa: F401,F403
from .control import *  # noqa: F401,F403
from .loops import *  # noqa: F401,F403
from .while_loop import *  # noqa: F401,F403
from .while_vjp import *  # noqa: F401,F403
