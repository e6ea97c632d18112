"""Every Python code block in README.md and docs/**/*.md runs as a script in a fresh process.

Each ```python block is saved as a file and run with `python file.py` in a
new process whose working directory is a new temporary directory (so files
it writes go there) and whose compile cache on disk is its own: a block
that works only when pasted into a session (a process pool without a
`__main__` guard, say) fails here as it would for a reader who saves it.
A block that continues an earlier one of the same file (uses its names) is
preceded by the marker line

    <!-- continue -->

(an HTML comment: invisible on GitHub); it is appended to the script of
the block it continues, which then runs as one. Blocks that are not Python
meant to run (shell commands, program output, C) use another fence
(```bash, ```text, ```c); of those, the `python -m gradtape ...` command
lines of ```bash blocks are run too (from a directory holding a copy of
examples/, as the docs say to run them from there). New files anywhere
under docs/ are picked up with no change here.
"""
from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTINUE = "<!-- continue -->"
_FENCE = re.compile(r"^```(\w*)\s*$")


def doc_files() -> list:
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                recursive=True))


def blocks(path: str) -> list:
    """[(language, first line number, code, continues)] of the fenced blocks of a Markdown file."""
    found, lines = [], open(path, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start = i
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"{path}:{start + 1}: a code block is never closed"
        before = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        found.append((m.group(1), start + 2, "\n".join(lines[start + 1:end]) + "\n", before == CONTINUE))
        i = end + 1
    return found


def _label(path: str, line: int) -> str:
    return f"{os.path.relpath(path, ROOT)}:{line}"


def python_chains() -> list:
    """One entry per Python block that starts a chain: (label, [(label, code), ...]): the block
    and the blocks that continue it, which must run after it in its namespace."""
    chains = []
    for path in doc_files():
        current = None
        for lang, line, code, continues in blocks(path):
            if lang != "python":
                continue
            if continues:
                assert current is not None, f"{_label(path, line)}: {CONTINUE} before the file's first Python block"
                current[1].append((_label(path, line), code))
            else:
                current = (_label(path, line), [(_label(path, line), code)])
                chains.append(current)
    return chains


def shell_commands() -> list:
    """(label, argv) of each `python -m gradtape` command in the ```bash blocks (continuation
    lines joined)."""
    commands = []
    for path in doc_files():
        for lang, line, code, _ in blocks(path):
            if lang not in ("bash", "sh", "shell"):
                continue
            for k, text in enumerate(code.replace("\\\n", " ").splitlines()):
                text = text.split(" #")[0].strip()
                if text.startswith("python -m gradtape "):
                    commands.append((f"{_label(path, line)}+{k}", shlex.split(text)))
    return commands


def script(parts) -> str:
    """The chain's blocks as one file, each after a comment naming where it is in the docs."""
    return "".join(f"# --- {label}\n{code}" for label, code in parts)


def _fresh_process_env(tmp_path) -> dict:
    # this checkout's gradtape, and a compile cache on disk that no other block has filled
    return dict(os.environ, PYTHONPATH=ROOT, GRADTAPE_CACHE_DIR=str(tmp_path / "cache"))


def run_as_script(chain, tmp_path) -> None:
    label, parts = chain
    code = script(parts)
    if "export_c" in code and shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("gradtape.export_c needs a C compiler (cc)")
    work = tmp_path / "work"
    work.mkdir()
    (work / "block.py").write_text(code, encoding="utf-8")
    proc = subprocess.run([sys.executable, "block.py"], cwd=work, capture_output=True, text=True, timeout=300,
                          env=_fresh_process_env(tmp_path))
    assert proc.returncode == 0, f"the code block at {label}, run as a script, failed:\n{proc.stderr[-4000:]}"


@pytest.mark.parametrize("chain", python_chains(), ids=lambda chain: chain[0])
def test_python_block_runs_as_a_script(chain, tmp_path):
    run_as_script(chain, tmp_path)


@pytest.mark.parametrize("command", shell_commands(), ids=lambda command: command[0])
def test_command_line_in_the_docs_runs(command, tmp_path):
    _, argv = command
    if argv[3:4] == ["aot"] and shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("python -m gradtape aot needs a C compiler (cc)")
    shutil.copytree(os.path.join(ROOT, "examples"), tmp_path / "examples")
    proc = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path / "examples", capture_output=True, text=True,
                          timeout=300, env=_fresh_process_env(tmp_path))
    assert proc.returncode == 0, proc.stderr


def test_the_docs_have_python_blocks_and_commands():
    # The collection above finds what it should: the README's first example, and the CLI's commands.
    assert any(label.startswith("README.md:") for label, _ in python_chains())
    assert any(argv[3:4] == ["inspect"] for _, argv in shell_commands())


def test_blocks_parses_fences_and_the_continue_marker(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("text\n```python\na = 1\n```\n\n<!-- continue -->\n\n```python\nb = a\n```\n"
                   "```bash\npython -m gradtape inspect m:f --shape 3 \\\n    --llvm   # a comment\n```\n")
    assert blocks(str(doc)) == [("python", 3, "a = 1\n", False), ("python", 9, "b = a\n", True),
                                ("bash", 12, "python -m gradtape inspect m:f --shape 3 \\\n    --llvm   # a comment\n",
                                 False)]


def test_script_joins_a_chain_and_names_each_block():
    assert script([("a.md:3", "a = 1\n"), ("a.md:9", "b = a\n")]) == "# --- a.md:3\na = 1\n# --- a.md:9\nb = a\n"


def test_a_block_that_needs_a_main_guard_fails_as_a_script(tmp_path):
    # What the script mode is for: spawned workers import the script, so a pool started at its
    # top level starts pools again in every worker (BrokenProcessPool); pasted lines hide that.
    doc = tmp_path / "doc.md"
    doc.write_text("```python\nimport multiprocessing\nfrom concurrent.futures import ProcessPoolExecutor\n"
                   "with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn')) as pool:\n"
                   "    print(list(pool.map(abs, [-1])))\n```\n")
    (_, _, code, _), = blocks(str(doc))
    with pytest.raises(AssertionError, match="run as a script, failed"):
        run_as_script(("doc.md:2", [("doc.md:2", code)]), tmp_path)


def test_docs_link_only_to_what_the_repository_ships():
    # Links outside the repository's tree (../shared, ...) are dead for anyone who clones it.
    for path in doc_files():
        text = open(path, encoding="utf-8").read()
        assert "../shared" not in text, f"{os.path.relpath(path, ROOT)} refers to ../shared"
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
            assert resolved.startswith(ROOT + os.sep) and os.path.exists(resolved), \
                f"{os.path.relpath(path, ROOT)} links to {target}, which the repository does not have"
