"""Measure one system on one workload in a fresh process; print the figures as one JSON line.

    python -m benchmarks.worker SYSTEM WORKLOAD [--target SECONDS] [--min-repeats N]

In order: import the system (excluded from every figure), make the inputs, take the memory
baseline, then time compile + first gradient, run two more gradients for the memory peak, check
the result against the hand-written gradient, and only when it matches, time the warm calls.

Peak memory is the growth of the resident set over the baseline: the kernel's high-water mark
(VmHWM) is reset by writing 5 to /proc/self/clear_refs once imports and inputs are done, so the
peak is VmHWM - VmRSS(baseline). Where that reset is not allowed, the fallback is
getrusage(RUSAGE_SELF).ru_maxrss minus the baseline resident set (a lower bound, 0 when the
import-time peak was higher). tracemalloc is not used: it misses torch's and XLA's buffers.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import resource
import statistics
import sys
import time

from . import systems, workloads

MAX_REPEATS = 2000


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def memory_baseline() -> tuple[int, str]:
    """Return the resident set now (bytes) and the method the peak will be measured with."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)   # hand freed heap back, as a fresh process would
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_kb("VmRSS") * 1024, "VmHWM"
    except OSError:
        return _status_kb("VmRSS") * 1024, "ru_maxrss"


def memory_peak(baseline: int, method: str) -> int:
    """The growth of the resident set's high-water mark over ``baseline``, in bytes."""
    if method == "VmHWM":
        high = _status_kb("VmHWM") * 1024
    else:
        high = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return max(0, high - baseline)


def _batch(step, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        step()
    return time.perf_counter() - start


def time_per_call(step, target_s: float, min_repeats: int, min_batch_s: float = 0.005) -> dict:
    """Median per-call time: batches of ``number`` calls, repeated to fill about ``target_s``."""
    number = 1
    while True:                      # calibration, which doubles as the warm-up
        elapsed = _batch(step, number)
        if elapsed >= min_batch_s or number >= 1 << 22:
            break
        number *= 10 if elapsed < min_batch_s / 10 else 2
    repeats = int(min(MAX_REPEATS, max(min_repeats, target_s / max(elapsed, 1e-9))))
    per_call = sorted(_batch(step, number) / number for _ in range(repeats))
    q1, _, q3 = statistics.quantiles(per_call, n=4) if repeats >= 2 else (per_call[0],) * 3
    return {"median_s": statistics.median(per_call), "q1_s": q1, "q3_s": q3,
            "min_s": per_call[0], "repeats": repeats, "number": number}


def _first_gradient(runner, result: dict):
    """Compile + first call (timed), two more calls; fills first_s and peak_bytes (and, for
    adcompiler's default, tier and tier_s: when its numba tier-up was decided)."""
    baseline, method = memory_baseline()
    start = time.perf_counter()
    out = runner.step()
    result["first_s"] = time.perf_counter() - start
    for _ in range(2):
        out = runner.step()
    if runner.settle is not None:   # the tier-up's compile and check count in memory, timed
        runner.settle()       # the loop compiled
        out = runner.step()   # the checking call: the NumPy code and the loop, compared
        result["tier"] = runner.settle()
        result["tier_s"] = time.perf_counter() - start
        out = runner.step()   # the result compared: the tier's
    result["peak_bytes"] = memory_peak(baseline, method)
    result["memory_method"] = method
    return out


def _cpus() -> int | None:
    """How many CPUs this worker may run on (the runner pins a one-thread pass's to one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def measure(system: str, name: str, target_s: float, min_repeats: int) -> dict:
    """All figures for ``system`` on workload ``name``; ``status`` says how far it got."""
    result = {"system": system, "workload": name, "status": "ok", "cpus": _cpus()}
    try:
        systems.import_system(system)
    except Exception as e:  # noqa: BLE001 (any import failure means: not available)
        return dict(result, status="n/a", message=f"{type(e).__name__}: {e}")
    workload = workloads.get(name)
    args = workload.make()
    try:
        runner = systems.prepare(system, workload, args)
        out = _first_gradient(runner, result)
    except systems.Unsupported as e:
        return dict(result, status="unsupported", message=str(e))
    except Exception as e:  # noqa: BLE001 (a crash of the system under test is a result)
        return dict(result, status="error", message=f"{type(e).__name__}: {e}"[:500])
    problem = systems.compare(runner.to_numpy(out), workload.hand(*args))
    if problem is not None:
        return dict(result, status="WRONG", message=problem)
    result.update(time_per_call(runner.step, target_s, min_repeats))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("system", choices=systems.ORDER)
    parser.add_argument("workload", choices=list(workloads.BY_NAME))
    parser.add_argument("--target", type=float, default=1.5, help="seconds of timed calls")
    parser.add_argument("--min-repeats", type=int, default=7)
    opts = parser.parse_args(argv)
    result = measure(opts.system, opts.workload, opts.target, opts.min_repeats)
    sys.stdout.flush()
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
