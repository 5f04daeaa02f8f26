"""Rounds: the systems every ratio rests on, measured in several fresh processes and merged.

Each (system, workload) runs in a fresh worker process. On a shared 2-vCPU machine, two workers
that run a minute apart meet different stalls, and a process's own state (where the allocator
puts large temporaries, where code and data land) moves a small gradient's time by up to 20%:
over three pairs of workers, logistic regression's compiled/hand-written ratio came out at 0.84,
1.02 and 1.04, and the hand-written seed f took 0.12 µs in one process and 0.14 µs in another.

So the hand-written gradient (the denominator of every ratio) and adcompiler's own gradients are
measured in several processes each (``run.FULL["rounds"]``: 3), the later rounds run after the
workload's peers so that the rounds are spread over time, and each figure of the merged row is
the median over rounds.
Timing the two in turns inside one process was tried and dropped: the hand-written gradient then
allocates into a heap that the compiled one has shaped (the RNN's took 6.6 ms there, 4.6 ms
alone), and a second process beside it meets the first one's spinning BLAS threads.
"""

from __future__ import annotations

import statistics

SYSTEMS = ("hand", "compiled", "generated", "standalone")
MERGED = ("median_s", "q1_s", "q3_s", "min_s", "first_s", "peak_bytes", "others_cpu")


def expand(tasks: list[tuple], rounds: int, sweep: set[str]) -> list[tuple]:
    """``tasks`` of (workload, system, threads), with rounds 2..``rounds`` of the ``SYSTEMS``
    appended after each workload's tasks of a pass (not for the size sweep's workloads)."""
    out: list[tuple] = []
    for i, task in enumerate(tasks):
        out.append(task)
        workload, _, threads = task
        last = i + 1 == len(tasks) or tasks[i + 1][0] != workload or tasks[i + 1][2] != threads
        if last and workload not in sweep:
            mine = [t for t in tasks if t[0] == workload and t[2] == threads and t[1] in SYSTEMS]
            out += mine * (rounds - 1)
    return out


def merge(rows: list[dict]) -> list[dict]:
    """One row per (workload, system, threads), in first-seen order. Rows measured in several
    rounds merge into one whose figures are the medians over rounds, with the rounds' own
    figures under ``rounds``; a round that failed (wrong gradient, error) is the row instead."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["workload"], row["system"], row.get("threads")), []).append(row)
    return [_merged(group) for group in groups.values()]


def _merged(group: list[dict]) -> dict:
    if len(group) == 1:
        return group[0]
    per_round = [{k: r.get(k) for k in ("status", "median_s", "first_s", "others_cpu")}
                 for r in group]
    failed = [r for r in group if r.get("status") != "ok"]
    if failed:
        return dict(failed[0], rounds=per_round)
    row = dict(group[0], rounds=per_round)
    for key in MERGED:
        values = [r[key] for r in group if r.get(key) is not None]
        if values:
            row[key] = statistics.median(values)
    return row
