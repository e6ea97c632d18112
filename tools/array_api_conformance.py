"""The array API standard's own test suite (data-apis/array-api-tests) on gradtape.array_api,
and on another namespace for comparison, as pass rates per test file.

    git clone --recursive https://github.com/data-apis/array-api-tests /tmp/array-api-tests
    python -m pip install -r /tmp/array-api-tests/requirements.txt
    python tools/array_api_conformance.py /tmp/array-api-tests                       # gradtape
    python tools/array_api_conformance.py /tmp/array-api-tests --module numpy        # the baseline
    JAX_ENABLE_X64=1 /tmp/jax/bin/python tools/array_api_conformance.py /tmp/array-api-tests --module jax.numpy
    python tools/array_api_conformance.py /tmp/array-api-tests --tests array_api_tests/test_linalg.py

    python tools/array_api_conformance.py /tmp/array-api-tests --xfails tools/array_api_xfails.txt

tools/array_api_xfails.txt lists the tests gradtape.array_api does not pass,
grouped under their reasons (complex dtypes, the fft extension, NumPy's
floor_divide of infinities, ...); with --xfails they are reported as
xfailed, so a new failure stands out. `--failures FILE` writes the node ids
of the tests that did not pass (what that list was made from).

A test counts as passed when pytest reports it passed; failed, errored and
skipped tests count against the namespace (a skip there means a name the
namespace lacks or a dtype it does not have). Hypothesis draws
--max-examples examples per test (the suite's default is 20; fewer run
faster and find fewer failures, so compare namespaces at the same value).
The suite runs under the Python that runs this script (sys.executable), so
another library's namespace is measured from an environment that has it (JAX's
venv, above; JAX_ENABLE_X64=1 gives jax.numpy the float64 and int64 the suite
draws).
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET


def run(suite: str, module: str, max_examples: int, tests: list, extra: list, failures: list = None) -> dict:
    """{test file: Counter of outcomes} of one run of the suite on `module`; the node ids of the
    tests that did not pass are appended to `failures` when given."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.xml")
        env = dict(os.environ, ARRAY_API_TESTS_MODULE=module)
        cmd = [sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
               f"--max-examples={max_examples}", "--disable-warnings", f"--junitxml={report}", *extra]
        subprocess.run(cmd, cwd=suite, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        outcomes = collections.defaultdict(collections.Counter)
        for case in ET.parse(report).getroot().iter("testcase"):
            where = case.get("classname", "").rsplit(".", 1)[-1] or case.get("file", "?")
            outcome = _outcome(case)
            outcomes[where][outcome] += 1
            if failures is not None and outcome != "passed":
                failures.append(_node_id(case))
        return outcomes


def _outcome(case) -> str:
    """passed, failed, skipped, or xfailed (a test the --xfails-file marks, which failed)."""
    kinds = {child.tag: child for child in case}
    if kinds.keys() & {"failure", "error"}:
        return "failed"
    skipped = kinds.get("skipped")
    if skipped is not None:
        return "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
    return "passed"


def _node_id(case) -> str:
    """The pytest node id of a junit (xunit1) test case: file::[Class::]name."""
    path, classname = case.get("file", ""), case.get("classname", "")
    module = path[:-3].replace("/", ".") if path.endswith(".py") else ""
    klass = classname[len(module) + 1:] if module and classname.startswith(module + ".") else ""
    return "::".join(p for p in (path, klass, case.get("name", "")) if p)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", help="a checkout of data-apis/array-api-tests (with its array-api submodule)")
    parser.add_argument("--module", default="gradtape.array_api", help="the namespace (default gradtape.array_api)")
    parser.add_argument("--max-examples", type=int, default=10)
    parser.add_argument("--tests", nargs="+", default=["array_api_tests"],
                        help="test files of the suite to run (default: all of array_api_tests)")
    parser.add_argument("--xfails", metavar="FILE",
                        help="the suite's --xfails-file: tests known not to pass, each group with its reason "
                             "(tools/array_api_xfails.txt for gradtape); they are counted as xfailed")
    parser.add_argument("--failures", metavar="FILE", help="write the node ids of the tests that did not pass")
    args, pytest_args = parser.parse_known_args()  # the rest goes to pytest, e.g. -k "not linalg"
    if args.xfails:
        pytest_args += ["--xfails-file", os.path.abspath(args.xfails)]
    failures = [] if args.failures else None
    outcomes = run(args.suite, args.module, args.max_examples, args.tests, pytest_args, failures)
    if args.failures:
        with open(args.failures, "w") as f:
            f.writelines(node + "\n" for node in failures)
    total = collections.Counter()
    print(f"{args.module}, --max-examples={args.max_examples}")
    for where in sorted(outcomes):
        c = outcomes[where]
        total += c
        n = sum(c.values())
        print(f"  {where:42s} {c['passed']:5d} / {n:5d} passed ({100 * c['passed'] / n:5.1f}%)"
              f"  failed {c['failed']}, skipped {c['skipped']}, xfailed {c['xfailed']}")
    n = sum(total.values())
    print(f"  {'all':42s} {total['passed']:5d} / {n:5d} passed ({100 * total['passed'] / max(n, 1):5.1f}%)"
          f"  failed {total['failed']}, skipped {total['skipped']}, xfailed {total['xfailed']}")


if __name__ == "__main__":
    main()
