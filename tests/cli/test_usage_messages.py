"""Bad command-line arguments get the command's usage line and a message saying what to write,
exit status 2, and never a traceback: for each subcommand and each kind of bad argument."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from gradtape import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOSSES = os.path.join(ROOT, "tests", "aot", "losses.py")  # loss(w, x): x @ w, so x is (m, k) and w (k, n)


def run_main(argv, capsys) -> tuple:
    """(exit status, stderr) of cli.main(argv); argparse's errors exit through SystemExit."""
    try:
        code = cli.main(argv)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


BAD = {
    "no shape for a two-argument function": (
        ["{LOSSES}:loss"], r"takes 2 arguments \(w, x\) but 0 --shape options were given; give one --shape per "
                           r"argument, in order, e.g. --shape w=3 --shape x=3"),
    "one shape too few": (
        ["{LOSSES}:loss", "--shape", "w=4,3"], r"takes 2 arguments \(w, x\) but 1 --shape option was given"),
    "one shape too many": (
        ["{LOSSES}:loss", "--shape", "4,3", "--shape", "5,4", "--shape", "2"], r"but 3 --shape options were given"),
    "shapes that do not fit the function": (
        ["{LOSSES}:loss", "--shape", "w=4,3", "--shape", "x=5,7"],
        r"loss\(w: f64\[4,3\], x: f64\[5,7\]\) cannot be traced: ValueError: matmul: .*check that the --shape "
        r"options fit the function"),
    "an unsupported dtype": (
        ["{LOSSES}:loss", "--shape", "w=4,3", "--shape", "x=5,4:timedelta64"],
        r"cannot be traced: TypeError: loss: argument 1 has dtype timedelta64"),
    "a malformed shape": (
        ["{LOSSES}:loss", "--shape", "w=4,three", "--shape", "x=5,4"], r"write \[name=\]d0,d1"),
    "no function named": (["{LOSSES}", "--shape", "3"], r"expected module:function"),
    "a missing function": (["{LOSSES}:nothing", "--shape", "3"], r"has no attribute 'nothing'"),
}


@pytest.mark.parametrize("command", ["inspect", "aot"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_arguments_print_usage_and_the_fix(command, case, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv, message = BAD[case]
    argv = [a.replace("{LOSSES}", LOSSES) for a in argv]
    if command == "aot":
        argv += ["-o", str(tmp_path / "libx.so")]
    code, err = run_main([command, *argv], capsys)
    assert code == 2
    assert err.startswith(f"usage: python -m gradtape {command} ")
    assert f"python -m gradtape {command}: error: " in err
    assert re.search(message, err), err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["inspect", "aot"])
def test_no_target_prints_usage(command, capsys):
    code, err = run_main([command], capsys)
    assert code == 2
    assert err.startswith(f"usage: python -m gradtape {command} ")
    assert "the following arguments are required: target" in err


def test_aot_argnums_out_of_range_names_the_arguments(capsys, tmp_path):
    code, err = run_main(["aot", f"{LOSSES}:loss", "--shape", "4,3", "--shape", "5,4", "--grad", "--argnums", "5",
                          "-o", str(tmp_path / "libx.so")], capsys)
    assert code == 2
    assert "--argnums 5: 5 is not an argument of a function given 2 --shape options (0 to 1)" in err


def test_inspect_without_shape_from_the_shell_prints_usage_not_a_traceback(tmp_path):
    # The case of the issue: `python -m gradtape inspect module:function` without --shape.
    proc = subprocess.run([sys.executable, "-m", "gradtape", "inspect", f"{LOSSES}:loss"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: python -m gradtape inspect ")
    assert "give one --shape per argument" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_arguments_prints_the_help_naming_every_command():
    out = subprocess.run([sys.executable, "-m", "gradtape"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: python -m gradtape")
    assert "aot" in out.stdout and "inspect" in out.stdout and "error" not in out.stdout + out.stderr
