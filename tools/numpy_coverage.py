"""Generate docs/numpy_coverage.md: which NumPy, numpy.linalg and
scipy.special functions that JAX or HIPS autograd differentiate work on
gradtape tensors, and how.

    python tools/numpy_coverage.py            # rewrite docs/numpy_coverage.md
    python tools/numpy_coverage.py --check    # exit 1 if it is out of date

The upstream list is the data file tools/numpy_coverage_upstream.tsv (JAX
and autograd are not needed). Each function's status comes from gradtape
itself: whether NumPy's dispatch registry (tracer/numpy_dispatch.py) or
gradtape.scipy.special has it, and what one example call does on tensors
under a GradientTape: a gradient (differentiable), integer or bool results
(integer result), or an error. The ops column is the set of IR ops (the op
table, ir/ops/) that the call traces to, or why it cannot be traced.
Rows with complex numbers (in or out, upstream) are probed like the others,
their example making complex tensors; numpy.fft's rows are unsupported until
gradtape has the FFT (issue 28): they are not probed.
"""
from __future__ import annotations

import pathlib
import sys
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
UPSTREAM = ROOT / "tools" / "numpy_coverage_upstream.tsv"
DOC = ROOT / "docs" / "numpy_coverage.md"

# scipy.special functions in gradtape.scipy.special's scope (issue 15 point 5); the
# others upstream differentiates are listed, and counted apart.
SPECIAL_SCOPE = {"erf", "erfc", "expit", "logit", "gammaln", "digamma", "xlogy", "xlog1py", "logsumexp",
                 "softmax", "log_softmax"}

# Why a function is unsupported, where there is more to say than "not implemented".
REASONS = {
    "numpy.unique": "its result's length depends on the values, so it has no fixed shape to compile",
    "numpy.unique_values": "its result's length depends on the values",
    "numpy.unique_all": "its result's length depends on the values",
    "numpy.unique_counts": "its result's length depends on the values",
    "numpy.unique_inverse": "its result's length depends on the values",
    "numpy.intersect1d": "its result's length depends on the values",
    "numpy.union1d": "its result's length depends on the values",
    "numpy.setdiff1d": "its result's length depends on the values",
    "numpy.setxor1d": "its result's length depends on the values",
    "numpy.trim_zeros": "its result's length depends on the values",
    "numpy.extract": "its result's length depends on the values",
    "numpy.histogram": "bin counts are integers; only JAX's weights= path has a derivative",
    "numpy.histogram_bin_edges": "edges from data-dependent ranges",
    "numpy.histogram2d": "bin counts are integers; only JAX's weights= path has a derivative",
    "numpy.histogramdd": "bin counts are integers; only JAX's weights= path has a derivative",
    "numpy.kaiser": "NumPy's kaiser does not dispatch to tensors, and takes float() of beta",
}

# NumPy functions that never dispatch to tensors (they convert their arguments
# themselves): gradtape's function of the same name does their job.
ALIASES = {"numpy.array": "array", "numpy.asarray": "asarray", "numpy.full": "full"}

# Why numpy.fft's rows are unsupported (issue 28, complex numbers and the FFT)
FFT_REASON = "numpy.fft is not implemented yet (issue 28)"

MODULES = ("numpy", "numpy.linalg", "numpy.fft", "scipy.special")

STATUSES = ("differentiable", "integer result", "constant result", "unsupported")


def upstream_rows() -> list:
    """[(name, kind, upstream, numbers, example)] from the data file."""
    rows = []
    for line in UPSTREAM.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, kind, upstream, numbers, example = line.split("\t")
        rows.append((name, kind, upstream, numbers, example))
    return rows


class Row(tuple):
    """(name, kind, upstream, status, detail, ops), knowing whether it is a function's complex case."""

    complex = False


def _row(fields, numbers: str) -> Row:
    row = Row(fields)
    row.complex = numbers == "complex"
    return row


def fft_row(name: str) -> bool:
    """numpy.fft's rows, counted unsupported (not probed) until gradtape implements the function."""
    return name.startswith("numpy.fft.") and implementation(name) is None


def _numpy_object(name):
    module, _, short = name.rpartition(".")
    namespace = {"numpy": np, "numpy.linalg": np.linalg, "numpy.fft": np.fft}.get(module)
    return None if namespace is None else getattr(namespace, short, None)


def implementation(name):
    """What gradtape runs for `name` on tensors: the registered function, or None."""
    import gradtape
    from gradtape.tracer import numpy_dispatch

    module, _, short = name.rpartition(".")
    if module == "scipy.special":
        return getattr(gradtape.scipy.special, short, None)
    if name in ALIASES:
        return getattr(gradtape, ALIASES[name], None)
    obj = _numpy_object(name)
    return None if obj is None else numpy_dispatch._functions.get(obj)


def _callable(name):
    """The function the example calls: NumPy's own (so that dispatch is exercised), or gradtape.scipy.special's."""
    import gradtape

    module, _, short = name.rpartition(".")
    if name in ALIASES:
        return getattr(gradtape, ALIASES[name])
    return getattr(gradtape.scipy.special, short) if module == "scipy.special" else _numpy_object(name)


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.2, 0.8, (3, 3))
    y = rng.uniform(0.2, 0.8, (3, 3))
    return x, y, x @ x.T + 3.0 * np.eye(3)


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [leaf for item in out for leaf in _leaves(item)]
    return [out]


def _probe(name, example):
    """(status, detail) of one example call on tensors under a GradientTape."""
    import gradtape as gt

    f = _callable(name)
    x, y, m = (gt.constant(v) for v in _inputs())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with gt.GradientTape(persistent=True) as tape:
                tape.watch([x, y, m])
                out = f(*eval(f"({example},)", {"x": x, "y": y, "m": m, "np": np}))  # noqa: S307  the data file's own calls
            leaves = _leaves(out)
            if any(isinstance(leaf, gt.Tensor) for leaf in leaves):  # beside tensors, an int is a count (as
                leaves = [leaf for leaf in leaves if not isinstance(leaf, (int, np.integer))]  # lstsq's rank)
            if not all(isinstance(leaf, gt.Tensor) for leaf in leaves):
                return "unsupported", f"returned {type(out).__name__}, not tensors"
            floats = [leaf for leaf in leaves if leaf.dtype.kind in "fc"]
            if not floats:
                return "integer result", ""
            with tape:  # a complex result counts by its real and imaginary parts
                total = sum(gt.sum(gt.real(leaf) + gt.imag(leaf)) if leaf.dtype.kind == "c" else gt.sum(leaf)
                            for leaf in floats)
            grads = tape.gradient(total, [x, y, m])
        except Exception as err:  # noqa: BLE001  the doc reports what happened
            message = str(err).splitlines()[0][:150]
            return "unsupported", f"{type(err).__name__}: {message}"
    if all(g is None for g in grads):
        return "constant result", "no derivative reaches the inputs"
    return "differentiable", ""


def _ops(name, example):
    """The IR ops the example traces to, or why it does not trace."""
    import gradtape as gt

    f = _callable(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn = gt.make_ir(lambda x, y, m: f(*eval(f"({example},)", {"x": x, "y": y, "m": m, "np": np})), *_inputs())
        except Exception as err:  # noqa: BLE001
            return f"eager only ({type(err).__name__})"
    ops = sorted({e.op.name for e in fn.eqns})
    return ", ".join(f"`{op}`" for op in ops) if ops else "(no ops: layout only)"


def table() -> list:
    """[(name, kind, upstream, status, detail, ops)] for every upstream row."""
    rows = []
    for name, kind, upstream, numbers, example in upstream_rows():
        if fft_row(name):
            rows.append(_row((name, kind, upstream, "unsupported", FFT_REASON, ""), numbers))
            continue
        if implementation(name) is None:
            status, detail = "unsupported", REASONS.get(name, "not implemented")
            ops = ""
        else:
            status, detail = _probe(name, example)
            ops = _ops(name, example) if status != "unsupported" else ""
            if name in ALIASES and status != "unsupported":
                detail = (f"as gradtape.{ALIASES[name]} ({name} converts its arguments itself, "
                          "without dispatching to tensors)")
        rows.append(_row((name, kind, upstream, status, detail, ops), numbers))
    return rows


def in_scope(name: str) -> bool:
    """numpy and numpy.linalg functions, and scipy.special's in gradtape.scipy.special's scope."""
    module, _, short = name.rpartition(".")
    return module != "scipy.special" or short in SPECIAL_SCOPE


def coverage(rows) -> tuple:
    """(differentiable here, differentiated upstream) over the in-scope functions."""
    wanted = [r for r in rows if r[1] == "differentiable" and in_scope(r[0])]
    return sum(r[3] == "differentiable" for r in wanted), len(wanted)


def real_rows(rows) -> list:
    """The rows without complex numbers (numpy.fft's counted among those)."""
    return [r for r in rows if not r.complex and not r[0].startswith("numpy.fft.")]


def render(rows=None) -> str:
    rows = table() if rows is None else rows
    done, total = coverage(rows)
    real_done, real_total = coverage(real_rows(rows))
    all_diff = [r for r in rows if r[1] == "differentiable"]
    lines = [
        "# NumPy coverage",
        "",
        "<!-- Generated by tools/numpy_coverage.py from tools/numpy_coverage_upstream.tsv; do not edit. -->",
        "",
        "Every function of `numpy`, `numpy.linalg`, `numpy.fft` and `scipy.special` that JAX",
        "(`jax.numpy`, `jax.numpy.linalg`, `jax.numpy.fft`, `jax.scipy.special`) or HIPS autograd",
        "differentiate, and what it does on gradtape tensors. The upstream list is",
        "`tools/numpy_coverage_upstream.tsv`, made by `tools/numpy_coverage_upstream.py` from JAX's",
        "namespaces (each function probed with `jax.grad`) and autograd's. Rows marked (complex) are",
        "a function's complex case (complex inputs or results upstream), probed with complex tensors",
        "(docs/complex.md), and `numpy.fft`'s rows with complex tensors too.",
        "The status comes from running one example call on tensors under a `GradientTape`:",
        "",
        "- **differentiable**: a float (real or complex) result with a gradient;",
        "- **integer result**: int or bool results, which carry no derivative (as upstream);",
        "- **constant result**: a result that does not depend on the input values;",
        "- **unsupported**: NumPy raises `UnsupportedNumPyFunction` (with the reason), or the call failed.",
        "",
        "The ops column lists the IR ops (`ir/ops/`) the call traces to in a staged function.",
        "Regenerate with `python tools/numpy_coverage.py`; `tests/test_numpy_coverage.py` fails when",
        "this page is out of date.",
        "",
        f"**{done} of {total} ({100.0 * done / total:.1f}%)** of the functions upstream differentiates are",
        "differentiable here, counting numpy, numpy.linalg, numpy.fft, the complex rows and the",
        "scipy.special functions in `gradtape.scipy.special`'s scope",
        "(" + ", ".join(sorted(SPECIAL_SCOPE)) + ").",
        f"Without the complex and `numpy.fft` rows: {real_done} of {real_total} ({100.0 * real_done / real_total:.1f}%).",
        f"Counting every scipy.special function too: {sum(r[3] == 'differentiable' for r in all_diff)} of {len(all_diff)}.",
        "",
    ]
    for module in MODULES:
        section = [r for r in rows if r[0].rpartition(".")[0] == module]
        counts = {s: sum(r[3] == s for r in section) for s in STATUSES}
        lines += [f"## `{module}`", "", ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) + ".", "",
                  "| function | upstream | status | ops (staged) |", "|---|---|---|---|"]
        for row in section:
            name, kind, upstream, status, detail, ops = row
            short = f"`{name.rpartition('.')[2]}`"
            if row.complex and module != "numpy.fft":
                short += " (complex)"  # the complex case of a function listed for real numbers too
            shown = status if not detail else f"{status}: {detail}"
            if kind != "differentiable":
                upstream = f"{upstream} ({kind})"
            lines.append(f"| {short} | {upstream} | {shown.replace('|', '/')} | {ops} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    sys.path.insert(0, str(ROOT))
    text = render()
    if "--check" in argv:
        if DOC.read_text() != text:
            print(f"{DOC} is out of date: run python tools/numpy_coverage.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC}: " + text.split("\n**")[1].split("**")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
