"""The examples in the docstrings of GradientTape, Variable and custom_gradient run and print
what they show (doctest)."""
import doctest
import importlib

import numpy as np
import pytest

import gradtape


@pytest.mark.parametrize("module", ["gradtape.tracer.gradient_tape", "gradtape.tracer.variable",
                                    "gradtape.tracer.custom_gradient"])
def test_docstring_examples_run(module, recording):
    result = doctest.testmod(importlib.import_module(module), extraglobs={"gradtape": gradtape, "np": np},
                             optionflags=doctest.NORMALIZE_WHITESPACE, report=True)
    assert result.attempted > 0
    assert result.failed == 0
