"""The documentation site and the README: every code block of docs/*.md and of README.md runs,
its shown output is compared, and the site builds with warnings as errors.

Conventions (docs/CONTRIBUTING.md): a ```python block is executed in its page's namespace (the
blocks of one page run in order, sharing names, in a fresh temporary directory); lines starting
with ``>>>`` in a ```python block are doctest examples whose output is compared (ELLIPSIS and
NORMALIZE_WHITESPACE); a ```console block's ``$ `` lines are shell commands, run in the same
directory, whose output is compared with the lines under them. ``<!-- skip: next if(not
HAS_CUDA, reason="needs a CUDA GPU") -->`` marks a GPU-only block. Parsing, doctest comparison
and skipping are Sybil's; the console parser is ours (Sybil has none for shell sessions).

Sybil and MkDocs are part of the ``test`` extra: a missing one is an ImportError here, never
a skip.
"""

from __future__ import annotations

import doctest
import os
import shlex
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import mkdocs  # noqa: F401  (the build below needs it: fail loudly when it is missing)
import pytest
from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _has_cuda() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001  (no CuPy, no driver, no device: no GPU blocks)
        return False


class ConsoleParser(CodeBlockParser):
    """```console blocks: ``$ command`` lines, each followed by its expected output."""

    language = "console"

    def evaluate(self, example) -> str | None:
        commands: list[tuple[str, list[str]]] = []
        for line in example.parsed.splitlines():
            if line.startswith("$ "):
                commands.append((line[2:], []))
            elif commands:
                commands[-1][1].append(line)
        checker = doctest.OutputChecker()
        for command, expected in commands:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [str(ROOT), os.environ.get("PYTHONPATH", "")]), NO_COLOR="1", COLUMNS="100")
            argv = shlex.split(command)
            if argv and argv[0] == "adcompiler":   # the checkout's, whatever PATH holds
                argv = [sys.executable, "-m", "adcompiler", *argv[1:]]
            done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
            got = done.stdout + done.stderr
            want = "\n".join(expected).strip() + "\n"
            if not checker.check_output(want, got.strip() + "\n", FLAGS):
                return (f"`{command}` (exit status {done.returncode}) printed:\n{got}\n"
                        f"expected:\n{want}")
        return None


def _setup(namespace):
    namespace["HAS_CUDA"] = _has_cuda()
    namespace["_docs_cwd"] = os.getcwd()
    namespace["_docs_tmp"] = tempfile.TemporaryDirectory(prefix="adcompiler-docs-")
    os.chdir(namespace["_docs_tmp"].name)


def _teardown(namespace):
    os.chdir(namespace["_docs_cwd"])
    namespace["_docs_tmp"].cleanup()


PARSERS = [PythonCodeBlockParser(doctest_optionflags=FLAGS), ConsoleParser(), SkipParser()]
SYBIL = Sybil(parsers=PARSERS, path=str(DOCS), patterns=["*.md", "**/*.md"])
README_SYBIL = Sybil(parsers=PARSERS, path=str(ROOT), patterns=["README.md"])

PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))


def test_pages_found():
    assert len(PAGES) >= 15, PAGES


@pytest.mark.parametrize("page", PAGES)
def test_page(page):
    """Run every block of one page in order; a failing block names its line."""
    _run(SYBIL.parse(DOCS / page))


def test_readme():
    """The README's blocks run as a docs page's do (its example and the source it shows)."""
    ran = _run(README_SYBIL.parse(ROOT / "README.md"))
    assert ran >= 2


def _run(document) -> int:
    """Evaluate a document's examples in order, in a fresh temporary directory; the count run."""
    examples = list(document.examples())
    ran = skipped = 0
    _setup(document.namespace)
    try:
        for example in examples:
            try:
                example.evaluate()
            except unittest.SkipTest:
                skipped += 1
                continue
            ran += 1
    finally:
        _teardown(document.namespace)
    assert ran + skipped == len(examples)
    return ran


def test_mkdocs_build_strict(tmp_path):
    """``mkdocs build --strict`` (the one command that builds the site) succeeds."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "numpy" / "index.html").is_file()


def test_generated_tables_cover_the_code():
    """The supported-NumPy tables list every primitive and every callable the frontend maps."""
    sys.path.insert(0, str(DOCS))
    try:
        import gen_tables
    finally:
        sys.path.remove(str(DOCS))
    from adcompiler.frontend import calls
    from adcompiler.ir.primitives import PRIMS
    prims = gen_tables.primitives_table()
    for name, prim in PRIMS.items():
        if prim.family not in ("internal", "control", "check", "custom"):
            assert f"| `{name}` |" in prims, name
    functions = gen_tables.functions_table()
    assert functions.count("\n") >= len(calls.FUNCTIONS) - 2
    assert "| `np.tanh` |" in functions and "| `np.linalg.solve` |" in functions
