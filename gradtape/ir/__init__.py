"""The IR: types, Function/Eqn/Var/Literal, the op table, printer, verifier,
reference interpreter, and the adjoint and tangent passes.

This layer never imports llvmlite and never looks at data in a shape rule.
"""
from . import ops  # noqa: F401  (declares every op)
from .adjoint import vjp
from .batching import vmap
from .builder import Builder, Sym, bind
from .core import Eqn, Function, Literal, Var
from .errors import DTypeError, IRError, MissingRuleError, ShapeError, VerifyError
from .interpret import eval_function
from .op import FACTS, Op, all_ops, batching_rules, impls, jvp_rules, new_op, shape_rules, vjp_rules
from .passes import dce, inputs_from_known, select_outputs
from .tangent import jvp
from .types import TensorType, complex_dtype, dtype_name, is_complex, is_float, real_dtype, type_of
from .verify import verify
from .. import _lazy

# networkx loads with the first dependency graph, not with the IR (gradtape/_lazy.py).
__getattr__, __dir__ = _lazy.names(__name__, globals(), {"dependency_graph": ".graph", "reachable": ".graph"}, None)
