"""The benchmark's rounds: which tasks run again, and how their rows merge into one."""

from benchmarks import report, rounds
from benchmarks.figures import Results


def test_later_rounds_follow_each_workloads_peers_and_skip_the_sweep():
    tasks = [("a", "hand", None), ("a", "compiled", None), ("a", "torch", None),
             ("sweep", "hand", None), ("sweep", "compiled", None),
             ("a", "hand", 1), ("a", "torch", 1)]
    assert rounds.expand(tasks, 3, {"sweep"}) == [
        ("a", "hand", None), ("a", "compiled", None), ("a", "torch", None),
        ("a", "hand", None), ("a", "compiled", None),
        ("a", "hand", None), ("a", "compiled", None),
        ("sweep", "hand", None), ("sweep", "compiled", None),
        ("a", "hand", 1), ("a", "torch", 1),
        ("a", "hand", 1), ("a", "hand", 1)]
    assert rounds.expand(tasks, 1, set()) == tasks


def _row(system, median, first=1.0, status="ok", threads=None, workload="w"):
    return {"workload": workload, "system": system, "status": status, "threads": threads,
            "median_s": median, "q1_s": median, "q3_s": median, "min_s": median,
            "first_s": first, "peak_bytes": 100, "others_cpu": 0.0}


def test_rounds_merge_into_their_medians_in_first_seen_order():
    rows = [_row("hand", 4.0, first=9.0), _row("torch", 5.0), _row("hand", 1.0, first=7.0),
            _row("hand", 2.0, first=20.0), _row("hand", 4.0, threads=1)]
    merged = rounds.merge(rows)
    assert [(r["system"], r["threads"]) for r in merged] == [
        ("hand", None), ("torch", None), ("hand", 1)]
    hand = merged[0]
    assert (hand["median_s"], hand["first_s"]) == (2.0, 9.0)   # medians, not means
    assert [r["median_s"] for r in hand["rounds"]] == [4.0, 1.0, 2.0]
    assert merged[1] == rows[1] and merged[2] == rows[4]   # one round: untouched


def test_a_failed_round_is_the_merged_row():
    wrong = _row("compiled", 1.0, status="WRONG")
    merged = rounds.merge([_row("compiled", 2.0), wrong, _row("compiled", 3.0)])
    assert len(merged) == 1 and merged[0]["status"] == "WRONG"
    assert [r["status"] for r in merged[0]["rounds"]] == ["ok", "WRONG", "ok"]


def test_the_report_divides_medians_over_rounds_and_says_so():
    rows = rounds.merge([_row("hand", 10.0, workload="logistic"),
                         _row("compiled", 14.0, workload="logistic"),
                         _row("hand", 12.0, workload="logistic"),
                         _row("compiled", 11.0, workload="logistic"),
                         _row("hand", 11.0, workload="logistic"),
                         _row("compiled", 12.0, workload="logistic")])
    assert Results(rows).ratio("logistic", "compiled") == 12.0 / 11.0
    meta = {"command": "python -m benchmarks.run", "date": "today", "duration_s": 1.0,
            "cpu": "cpu", "cores": 2, "os": "os", "python": "3", "blas": "blas",
            "versions": {k: "1" for k in report.VERSIONED}, "memory_methods": [],
            "settings": {"target_s": 1.0, "min_repeats": 7, "threads": None, "rounds": 3}}
    text = report.render(rows, meta)
    assert "| logistic regression | 11 s | 1.09 |" in text
    assert "each ran in 3 fresh processes" in text
