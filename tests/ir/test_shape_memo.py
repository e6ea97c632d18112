"""Builder.bind's memo of shape rules (ir/builder.py: a traced loop binds the same ops on the
same types every step): the rule's answer, errors raised every time, never stored."""
import numpy as np
import pytest

from gradtape import ir
from gradtape.ir import builder
from gradtape.ir.errors import ShapeError
from gradtape.ir.op import shape_rules
from gradtape.ir.ops import add_p, reshape_p
from gradtape.ir.types import TensorType


def test_memo_gives_the_rules_answer_for_each_key():
    b = ir.Builder()
    x = b.input(TensorType((2, 3), np.float64))
    y = b.input(TensorType((3,), np.float64))
    for _ in range(3):
        assert b.bind(add_p, [x.atom, y.atom], {}).type == shape_rules[add_p](x.type, y.type)
        assert b.bind(reshape_p, [x.atom], {"shape": (3, 2)}).type == TensorType((3, 2), np.float64)
        assert b.bind(reshape_p, [x.atom], {"shape": (6,)}).type == TensorType((6,), np.float64)


def test_errors_are_raised_every_time():
    b = ir.Builder()
    x = b.input(TensorType((2, 3), np.float64))
    z = b.input(TensorType((4,), np.float64))
    for _ in range(2):
        with pytest.raises(ShapeError):
            b.bind(reshape_p, [x.atom], {"shape": (5,)})
        with pytest.raises(Exception):
            b.bind(add_p, [x.atom, z.atom], {})
    assert (reshape_p, x.type, ("shape", (5,))) not in builder._shapes
    assert (add_p, x.type, z.type) not in builder._shapes


def test_unhashable_params_reach_the_rule():
    b = ir.Builder()
    x = b.input(TensorType((2, 3), np.float64))
    assert b.bind(reshape_p, [x.atom], {"shape": [3, 2]}).type == TensorType((3, 2), np.float64)
