"""Shared helpers over a run's results: lookup, unit formatting, status words and crossovers."""

from __future__ import annotations

import math

from .load import BUSY_LIMIT

STATUS_WORDS = {"n/a": "n/a", "unsupported": "not yet supported", "WRONG": "WRONG",
                "error": "error", "timeout": "timeout"}


class Results:
    """A run's result rows, looked up by (workload, system)."""

    def __init__(self, rows: list[dict]):
        self.rows = rows
        self.by = {(r["workload"], r["system"]): r for r in rows}

    def get(self, workload: str, system: str) -> dict | None:
        return self.by.get((workload, system))

    def ok(self, workload: str, system: str) -> dict | None:
        """The row when the system produced a checked, timed gradient; else None."""
        row = self.get(workload, system)
        return row if row is not None and row.get("status") == "ok" else None

    def value(self, workload: str, system: str, key: str) -> float | None:
        row = self.get(workload, system)
        if row is None or key not in row or row.get("status") in ("WRONG", "n/a"):
            return None
        return row[key]

    def ratio(self, workload: str, system: str) -> float | None:
        """Per-call median over the hand-written gradient's (None when either is missing)."""
        mine, hand = self.ok(workload, system), self.ok(workload, "hand")
        if mine is None or hand is None:
            return None
        return mine["median_s"] / hand["median_s"]

    def disturbed(self, workload: str, system: str) -> bool:
        """Whether other processes used more than BUSY_LIMIT CPUs while this row was measured."""
        row = self.get(workload, system)
        return bool(row) and (row.get("others_cpu") or 0.0) > BUSY_LIMIT

    def status_word(self, workload: str, system: str) -> str:
        row = self.get(workload, system)
        if row is None:
            return "–"
        return STATUS_WORDS.get(row.get("status"), row.get("status", "?"))

    def systems_present(self, order) -> list[str]:
        seen = {r["system"] for r in self.rows}
        return [s for s in order if s in seen]

    def systems_measured(self, order) -> list[str]:
        seen = {r["system"] for r in self.rows if r.get("status") == "ok"}
        return [s for s in order if s in seen]


def seconds(t: float | None) -> str:
    """``t`` seconds with a unit and three significant digits (``1.23 ms``)."""
    if t is None:
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def megabytes(b: float | None) -> str:
    if b is None:
        return "–"
    return f"{b / 2**20:.1f} MB" if b >= 2**20 / 10 else f"{b / 2**10:.0f} kB"


def ratio(r: float | None) -> str:
    if r is None:
        return "–"
    return f"{r:.2f}" if r < 10 else f"{r:.1f}" if r < 100 else f"{r:,.0f}"


def cumulative(first_s: float, per_call_s: float, calls: float) -> float:
    """Time for ``calls`` gradients from a fresh process: compile + first call, then warm calls."""
    return first_s + max(calls - 1, 0) * per_call_s


def crossover(a: dict, b: dict) -> tuple[str, float | None]:
    """When ``a`` (e.g. compiled) is ahead of ``b`` (e.g. the tape) in cumulative time.

    Returns ("always" | "after" | "before" | "never", N): "after N" means ``a`` is ahead from the
    N-th call on; "before N" means ahead only for the first N - 1 calls.
    """
    fa, pa, fb, pb = a["first_s"], a["median_s"], b["first_s"], b["median_s"]
    if fa <= fb and pa <= pb:
        return "always", 1
    if fa > fb and pa >= pb:
        return "never", None
    n = 1 + (fa - fb) / (pb - pa)    # where the cumulative lines meet
    return ("after", math.ceil(n)) if fa > fb else ("before", math.ceil(n))
