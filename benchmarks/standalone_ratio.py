"""The standalone module against the decorated gradient, timed in turns in one process.

    python -m benchmarks.standalone_ratio [WORKLOAD ...]     # every main workload by default

A short measurement for a loaded machine (the full suite's ``standalone`` system, in
``benchmarks/run.py``, is the careful one): for each workload, ``adcompiler.grad`` and the module
``adcompiler compile`` writes for it (``systems.prepare("standalone", ...)``, compiled for the
workload's shapes, one body for every size) are timed in turns, :data:`ROUNDS` rounds of
batches of at least :data:`BATCH_S` each, and each keeps its fastest per-call time (the least
disturbed); the ratio is standalone over decorated.
"""

from __future__ import annotations

import sys
import time

from benchmarks import systems, workloads

ROUNDS = 9
BATCH_S = 0.05


def per_call(step) -> float:
    """Seconds per call of ``step`` over a batch of at least :data:`BATCH_S`."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            step()
        elapsed = time.perf_counter() - start
        if elapsed >= BATCH_S or n >= 1 << 16:
            return elapsed / n
        n *= 2


def measure(name) -> tuple:
    """``(decorated s, standalone s)`` per call, each its fastest over the rounds."""
    w = workloads.get(name)
    args = w.make()
    runners = {s: systems.prepare(s, w, args) for s in ("compiled", "standalone")}
    for runner in runners.values():
        runner.step()   # compiles
        runner.step()
    best = {s: float("inf") for s in runners}
    for _ in range(ROUNDS):
        for s, runner in runners.items():
            best[s] = min(best[s], per_call(runner.step))
    return best["compiled"], best["standalone"]


def main(names):
    print("| workload | adcompiler.grad | standalone module | standalone / adcompiler.grad |")
    print("| --- | --- | --- | --- |")
    for name in names:
        grad, standalone = measure(name)
        print(f"| {workloads.get(name).title} | {grad * 1e6:.1f} µs | {standalone * 1e6:.1f} µs "
              f"| {standalone / grad:.2f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or [w.name for w in workloads.WORKLOADS if not w.sweep])
