"""The versions gradtape declares are the versions it tests and refuses anything older.

pyproject.toml's lower bounds, .ci/floors.txt's pins (what CI's oldest row
installs) and gradtape/_requirements.py's import check name the same floors;
an older NumPy or llvmlite is refused at import with a message that says the
fix (read from its installed metadata when gradtape has not imported it yet); and the LLVM of the installed llvmlite compiles what made llvmlite 0.44
(LLVM 15) abort.
"""
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gradtape import _requirements

ROOT = Path(__file__).resolve().parents[1]


def _padded(version):
    parts = _requirements.release(version)
    return parts + (0,) * (3 - len(parts))


def _declared():
    """{name: floor string} of [project].dependencies and the test and docs extras (what CI installs)."""
    text = (ROOT / "pyproject.toml").read_text()
    blocks = [re.search(r"^dependencies = \[(.*?)\n\]", text, re.S | re.M).group(1),
              re.search(r"^test = \[(.*)\]$", text, re.M).group(1),  # one line
              re.search(r"^docs = \[(.*)\]$", text, re.M).group(1)]
    found = re.findall(r'"([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?>=([0-9.]+)"', "".join(blocks))
    return dict(found)


def _pinned():
    lines = (ROOT / ".ci" / "floors.txt").read_text().splitlines()
    pins = [line.split("==") for line in lines if line.strip() and not line.startswith("#")]
    return {name.strip(): version.strip() for name, version in pins}


def test_every_declared_dependency_is_pinned_at_its_floor_for_ci():
    declared, pinned = _declared(), _pinned()
    assert {"numpy", "llvmlite", "networkx", "scipy", "pytest", "dask", "sphinx"} <= set(declared)
    for name, floor in declared.items():
        assert name in pinned, f".ci/floors.txt does not pin {name} (pyproject.toml: >={floor})"
        assert _padded(pinned[name]) == _padded(floor), (name, pinned[name], floor)
    # the one pin pyproject does not name: dask[distributed]'s, released with dask
    assert set(pinned) - set(declared) == {"distributed"} and pinned["distributed"] == pinned["dask"]


def test_the_import_check_holds_the_declared_floors():
    declared = _declared()
    for name, (floor, _) in _requirements.FLOORS.items():
        assert _padded(declared[name]) == floor + (0,) * (3 - len(floor)), name


@pytest.mark.parametrize("name, old", [("llvmlite", "0.44.0"), ("numpy", "1.26.4"), ("networkx", "2.8.8")])
def test_import_refuses_an_older_release_and_says_the_fix(name, old):
    # The module's __version__ is what the check reads: set it before gradtape is imported.
    code = f"import {name}; {name}.__version__ = {old!r}; import gradtape"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    floor = ".".join(map(str, _requirements.FLOORS[name][0]))
    assert last.startswith(f"ImportError: gradtape needs {name} >= {floor}, found {name} {old} (")
    assert last.endswith(f"python -m pip install '{name}>={floor}'")


@pytest.mark.parametrize("name, old", [("llvmlite", "0.44.0"), ("networkx", "2.8.8")])
def test_import_refuses_an_older_release_it_has_not_imported_yet(name, old):
    # `import gradtape` loads neither: their installed metadata is what the check reads then.
    code = (f"import importlib.metadata as m; real = m.version\n"
            f"m.version = lambda n: {old!r} if n == {name!r} else real(n)\n"
            f"import gradtape")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    floor = ".".join(map(str, _requirements.FLOORS[name][0]))
    assert out.stderr.strip().splitlines()[-1].startswith(f"ImportError: gradtape needs {name} >= {floor}, "
                                                          f"found {name} {old} (")


def test_the_installed_version_is_the_imported_modules_or_else_the_metadatas(monkeypatch):
    import llvmlite

    assert _requirements.installed_version("llvmlite") == llvmlite.__version__
    monkeypatch.setattr(llvmlite, "__version__", "0.1.0")  # what the running module says wins
    assert _requirements.installed_version("llvmlite") == "0.1.0"
    monkeypatch.delitem(sys.modules, "llvmlite")
    assert _requirements.installed_version("llvmlite") == importlib.metadata.version("llvmlite") != "0.1.0"


def test_the_check_reads_release_numbers():
    assert _requirements.release("2.0.2rc1") == (2, 0, 2)
    assert _requirements.release("0.45") == (0, 45)
    _requirements.check_installed({"numpy": "2.0.0", "llvmlite": "0.45.0", "networkx": "3.0"})
    with pytest.raises(ImportError, match=r"needs numpy >= 2\.0, found numpy 1\.99\.9 "):
        _requirements.check_installed({"numpy": "1.99.9", "llvmlite": "0.50.0", "networkx": "3.7"})


# LLVM 15 (llvmlite 0.44) stops the process in emit_object with "LLVM ERROR: Cannot select:
# f64 = fmaximum": its x86 back end has no lowering of llvm.maximum/llvm.minimum, which every
# max/min compiles to (NaN propagates, as in NumPy). gradtape compiles in a worker process and
# falls back to its interpreter when that dies, so the suite alone would pass slowly; this
# compiles the intrinsics with the installed llvmlite directly, in a child that may abort.
_EMIT = """
import llvmlite.binding as llvm
from llvmlite import ir
try:
    llvm.initialize()
except RuntimeError:  # llvmlite >= 0.45 initializes itself
    pass
llvm.initialize_native_target()
llvm.initialize_native_asmprinter()
module = ir.Module("m")
for ty in (ir.DoubleType(), ir.FloatType()):
    for base in ("llvm.maximum", "llvm.minimum"):
        fnty = ir.FunctionType(ty, [ty, ty])
        fn = ir.Function(module, fnty, f"{base[5:]}_{len(module.functions)}")
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(b.call(module.declare_intrinsic(base, [ty], fnty=fnty), fn.args))
machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
print(len(machine.emit_object(llvm.parse_assembly(str(module)))) > 0)
"""


def test_the_installed_llvm_compiles_nan_propagating_max_and_min():
    out = subprocess.run([sys.executable, "-c", _EMIT], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout.strip()) == (0, "True"), out.stderr[-2000:]
