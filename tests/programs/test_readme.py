"""The first example (Getting started in the docs, shown again in the README) prints what
adcompiler really generates (the README's copy had drifted once). The docs test runs both
pages' blocks; this test reads the example back as a module of its own, so the source it shows
is checked in a fresh import as well."""

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started.md"


def _block_after(marker: str, text: str) -> str:
    start = text.index(marker)
    match = re.compile(r"```(?:python)?\n(.*?)```", re.S).search(text, start)
    return match.group(1)


def _shown_output(prompt: str, text: str) -> str:
    """The lines a doctest shows under ``prompt``, up to the block's end or the next prompt."""
    after = text.split(prompt + "\n", 1)[1].split("```", 1)[0]
    return after.split(">>> ", 1)[0]


def test_the_first_example_and_its_source_are_what_the_docs_show(tmp_path, monkeypatch):
    text = PAGE.read_text(encoding="utf-8")
    example = _block_after("## A first gradient", text)
    module = tmp_path / "first_example.py"
    module.write_text(example)
    monkeypatch.syspath_prepend(str(tmp_path))
    import first_example
    got = first_example.loss(2.0, 3.0, 4.0, np.ones((2, 2)))
    assert got == (28.0, 8.0, 10.0)
    assert _shown_output(">>> loss(2.0, 3.0, 4.0, np.ones((2, 2)))", text) == "(28.0, 8.0, 10.0)\n"
    assert first_example.loss.source == _shown_output(">>> print(loss.source)", text)


def test_the_readme_shows_the_same_example():
    """The README's front-page example is the docs' first one, with the same generated source."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    docs = PAGE.read_text(encoding="utf-8")
    shown = _shown_output(">>> print(loss.source)", docs)
    assert shown in readme
    assert "def loss(w1, w2, w3, inp):" in readme
