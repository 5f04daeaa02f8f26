"""How busy other processes keep the machine: measured around each worker, and waited out."""

from __future__ import annotations

import os
import resource
import time

HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
BUSY_LIMIT = 0.25      # CPUs of other work above which a measurement is marked as disturbed


def _busy_seconds() -> float | None:
    """CPU-seconds all processes have spent busy since boot (None where /proc/stat is missing)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)      # idle + iowait
    return (sum(fields[:8]) - idle) / HZ


def _children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Meter:
    """``with Meter() as m: run a child``; then ``m.others`` is the other processes' CPUs."""

    def __enter__(self):
        self.busy, self.own, self.wall = _busy_seconds(), _children_seconds(), time.perf_counter()
        self.others = None
        return self

    def __exit__(self, *exc):
        busy = _busy_seconds()
        wall = time.perf_counter() - self.wall
        if busy is not None and self.busy is not None and wall > 0:
            own = _children_seconds() - self.own
            self.others = max(0.0, (busy - self.busy - own) / wall)


def others_now(window: float = 0.25) -> float | None:
    """The CPUs other processes use over ``window`` seconds (this process sleeps meanwhile)."""
    before = _busy_seconds()
    time.sleep(window)
    after = _busy_seconds()
    return None if before is None or after is None else max(0.0, (after - before) / window)


def wait_for_quiet(max_wait: float, limit: float = BUSY_LIMIT) -> float:
    """Wait at most ``max_wait`` s for other work to fall under ``limit`` CPUs; the time waited."""
    began = time.perf_counter()
    while time.perf_counter() - began < max_wait:
        busy = others_now()
        if busy is None or busy <= limit:
            break
    return time.perf_counter() - began
