"""docs/numpy_coverage.md is generated (tools/numpy_coverage.py) and must be
current."""
import functools
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("numpy_coverage", ROOT / "tools" / "numpy_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()


@functools.cache
def coverage_rows():
    """The table, made when a test first asks (it runs every function's example: seconds,
    which every pytest-xdist worker would otherwise pay at collection)."""
    return TOOL.table()


# NumPy functions newer than NumPy 2.0 (the floor), with the release that added them
_NEWER_THAN_2_0 = {"unstack": "2.1.0", "cumulative_sum": "2.1.0", "cumulative_prod": "2.1.0",
                   "matvec": "2.2.0", "vecmat": "2.2.0"}


def _numpy_before(version):
    import numpy as np

    return np.lib.NumpyVersion(np.__version__) < version


def test_the_doc_is_up_to_date():
    if _numpy_before("2.2.0"):
        pytest.skip("docs/numpy_coverage.md is written on NumPy >= 2.2 (its rows run matvec, unstack, ...); "
                    "CI's main row checks it")
    assert (ROOT / "docs" / "numpy_coverage.md").read_text() == TOOL.render(coverage_rows()), (
        "docs/numpy_coverage.md is out of date: run python tools/numpy_coverage.py"
    )


def test_every_upstream_function_exists_in_numpy_or_scipy():
    import numpy as np
    from scipy import special

    for name, *_ in TOOL.upstream_rows():
        module, _, short = name.rpartition(".")
        namespace = {"numpy": np, "numpy.linalg": np.linalg, "numpy.fft": np.fft, "scipy.special": special}[module]
        assert hasattr(namespace, short) or (module == "numpy" and _numpy_before(_NEWER_THAN_2_0.get(short, "0.0.0"))), name


def test_a_registered_function_whose_example_fails_is_reported_not_hidden():
    # every registered function's status comes from running it: none is "unsupported: not implemented"
    for name, kind, upstream, status, detail, ops in coverage_rows():
        if TOOL.implementation(name) is not None:
            assert detail != "not implemented", name
