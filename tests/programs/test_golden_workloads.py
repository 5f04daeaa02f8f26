"""Golden sources of the benchmark workloads: the generated gradients, byte for byte.

The redesign (moving modules, deriving tables from one row per primitive, one rewrite walker)
must not change what the compiler writes. ``tests/golden/workloads/`` holds the ``grad`` and
``value_and_grad`` source of every workload of ``benchmarks/workloads.py``, with numexpr on
(where it is installed) and off; this test compiles each again and compares. A change that
alters generated code on purpose rewrites them with ``python -m tests.programs.test_golden_workloads``
and shows the difference in its commit.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

import adcompiler as ad
from adcompiler.backends import numexpr_chains
from adcompiler.templates import factorizations

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "workloads"
NUMEXPR = importlib.util.find_spec("numexpr") is not None


def _workloads():
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import workloads
    finally:
        sys.path.remove(str(ROOT))
    return workloads.WORKLOADS


@contextlib.contextmanager
def _as_without_scipy():
    """Compile as where SciPy is not installed (the test extra does not install it), so the
    goldens are the same in every environment: the factorization rules' triangular solves and
    passes/triangular_solves.py take NumPy's solve then."""
    held = list(factorizations._SCIPY)
    factorizations._SCIPY[:] = [False, False]
    try:
        yield
    finally:
        factorizations._SCIPY[:] = held


def _source(workload, transform, numexpr: bool) -> str:
    context = contextlib.nullcontext() if numexpr else numexpr_chains.disabled()
    with context, _as_without_scipy():
        g = transform(workload.fn, wrt=workload.wrt)
        return g.specialize(*workload.make()).source


TRANSFORMS = {"grad": ad.grad, "value_and_grad": ad.value_and_grad}
CASES = [(w, t, ne) for w in _workloads() for t in TRANSFORMS for ne in (True, False)]


def _path(workload, transform, numexpr) -> Path:
    return GOLDEN / f"{workload.name}.{transform}.{'numexpr' if numexpr else 'numpy'}.txt"


@pytest.mark.parametrize("workload, transform, numexpr", CASES,
                         ids=[f"{w.name}-{t}-{'numexpr' if ne else 'numpy'}"
                              for w, t, ne in CASES])
def test_generated_source_is_unchanged(workload, transform, numexpr, monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE", "0")   # compile it here, not from the disk cache
    if numexpr and not NUMEXPR:
        pytest.skip("numexpr is not installed: its variant cannot be compiled here")
    want = _path(workload, transform, numexpr).read_text()
    assert _source(workload, TRANSFORMS[transform], numexpr) == want


def main():
    """Rewrite the golden files (an intended change of the generated code)."""
    os.environ["ADCOMPILER_CACHE"] = "0"
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for workload, transform, numexpr in CASES:
        _path(workload, transform, numexpr).write_text(
            _source(workload, TRANSFORMS[transform], numexpr))


if __name__ == "__main__":
    main()
