"""Sphinx configuration of the API reference (docs/api): autodoc reads gradtape's docstrings,
napoleon their Google-style sections, and the doctest builder runs their examples.

Build: python -m sphinx -W --keep-going -b html docs/api build/api (and -b doctest); .ci/docs.
"""
import os
import re
import sys

# the checkout's gradtape, whatever is installed
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

project = "gradtape"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.doctest"]
autodoc_member_order = "bysource"
autodoc_typehints = "none"
# members of every module and class documented (those without a docstring left out)
autodoc_default_options = {"members": True}
html_theme = "alabaster"
# The names every docstring example assumes (as the docstrings' own doctest run does:
# tests/test_docstring_examples.py).
doctest_global_setup = "import numpy as np\nimport gradtape\nimport gradtape as gt"

_EXAMPLE = re.compile(r"^(\s*)(Examples?)::\s*$")


def _examples_as_sections(app, what, name, obj, options, lines):
    # Docstrings write "Example::" so that help() shows a literal block; for Sphinx that would
    # hide the >>> lines from the doctest builder. Napoleon's "Example:" section keeps them
    # doctest blocks, so the reference runs every docstring example.
    for i, line in enumerate(lines):
        lines[i] = _EXAMPLE.sub(r"\1\2:", line)


def setup(app):
    app.connect("autodoc-process-docstring", _examples_as_sections, priority=400)
