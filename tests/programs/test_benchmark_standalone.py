"""The benchmark's standalone system: each workload's module from ``adcompiler compile``, timed
against the decorated gradient, with the ratio in the report."""

import pytest

from benchmarks import report, systems, workloads
from benchmarks.figures import Results
from tests.programs.test_benchmark_rounds import _row
from tests.programs.test_benchmarks_smoke import TINY


@pytest.mark.parametrize("name", sorted(TINY))
def test_the_standalone_module_gives_the_hand_written_gradient(name):
    """Compiled for a tiny input's shapes (``--shape``), the module of each workload's own
    function gives the hand-written gradient there, and (one body for every size) at the
    workload's own sizes, where they are quick."""
    workload = next(w for w in workloads.WORKLOADS if w.fn.__name__ == name)
    tiny = TINY[name]()
    runner = systems.prepare("standalone", workload, tiny)
    got = runner.to_numpy(runner.step())
    assert systems.compare(got, systems._plain(workload.hand(*tiny))) is None
    if name in ("small_mlp", "logistic", "rnn"):
        args = workload.make()
        gradient = systems._compiled_module(workload, tiny)
        assert systems.compare(runner.to_numpy(gradient(*args)),
                               systems._plain(workload.hand(*args))) is None


def test_the_report_gives_the_standalone_module_over_the_decorated_gradient():
    rows = [_row("hand", 10.0, workload="logistic"), _row("compiled", 4.0, workload="logistic"),
            _row("standalone", 5.0, workload="logistic")]
    meta = {"command": "python -m benchmarks.run", "date": "today", "duration_s": 1.0,
            "cpu": "cpu", "cores": 2, "os": "os", "python": "3", "blas": "blas",
            "versions": {k: "1" for k in report.VERSIONED}, "memory_methods": [],
            "settings": {"target_s": 1.0, "min_repeats": 7, "threads": None, "rounds": 3}}
    text = report.render(rows, meta)
    assert "## The standalone module against the decorated gradient" in text
    assert "| logistic regression | 1.25 |" in text
    assert Results(rows).ratio("logistic", "standalone") == 0.5
    # without the standalone system measured, no such section
    assert "standalone module against" not in report.render(rows[:2], meta)
