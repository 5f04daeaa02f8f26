"""The README's first example prints what adcompiler really generates (it had drifted)."""

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[2] / "README.md"


def _block_after(marker: str, text: str) -> str:
    start = text.index(marker)
    match = re.compile(r"```(?:python)?\n(.*?)```", re.S).search(text, start)
    return match.group(1)


def test_the_first_example_and_its_source_are_what_the_readme_shows(tmp_path, monkeypatch):
    text = README.read_text(encoding="utf-8")
    example = _block_after("## Use", text)
    module = tmp_path / "readme_example.py"
    module.write_text(example.split("loss(2.0, 3.0, 4.0")[0])
    monkeypatch.syspath_prepend(str(tmp_path))
    import readme_example
    got = readme_example.loss(2.0, 3.0, 4.0, np.ones((2, 2)))
    assert got == (28.0, 8.0, 10.0) and "-> (28.0, 8.0, 10.0)" in example
    assert readme_example.loss.source == _block_after("`loss.source` is:", text)
