"""What ``pip install .`` ships: every package folder of the source tree is listed in
pyproject.toml (a missed one installs a package that fails to import, which an editable
install, the tests' own, would never show)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _packages_in_tree() -> set:
    found = {"adcompiler." + ".".join(p.parent.relative_to(ROOT / "adcompiler").parts)
             for p in (ROOT / "adcompiler").rglob("__init__.py")}
    found |= {"adcompiler.templates" + "".join("." + part for part in
                                                p.parent.relative_to(ROOT / "templates").parts)
              for p in (ROOT / "templates").rglob("__init__.py")}
    return {name.rstrip(".") for name in found}


def test_every_package_folder_is_installed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    in_tree = _packages_in_tree()
    assert "adcompiler.frontend.statements" in in_tree and "adcompiler.templates.idioms" in in_tree
    assert in_tree == listed, (sorted(in_tree - listed), sorted(listed - in_tree))
