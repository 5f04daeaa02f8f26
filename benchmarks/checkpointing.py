"""Checkpointed reverse mode against the unbounded gradient: peak memory and time (#33 item 6).

``python -m benchmarks.checkpointing`` (``--quick``: 10^4 steps only; ``--steps 10000 100000``
to choose; ``--rounds R``) differentiates the RNN and the RK4 neural ODE of
:mod:`benchmarks.workloads` (narrowed so that 10^5 steps run in minutes on a loaded machine)
with ``checkpoint=None`` and ``checkpoint="sqrt"``, checks that the gradients agree to 1e-12,
and writes benchmarks/CHECKPOINTING.md: the peak memory a call allocates (tracemalloc, which
sees NumPy's allocations; the arguments excluded), the rows of the stacks the generated code
allocates (the stored states: the snapshots plus one segment's residuals, against T), and the
time per call, medians of interleaved rounds, as a ratio to the unbounded gradient.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import time
import tracemalloc
from pathlib import Path

import numpy as np

import adcompiler as ad

from . import workloads

OUT = Path(__file__).with_name("CHECKPOINTING.md")


def _rnn(T):
    return workloads.rnn, (0, 1, 2), workloads.make_rnn(T=T, hidden=16, d_in=8, batch=4)


def _ode(T):
    return workloads.ode_rk4, (0, 1, 2), workloads.make_ode(batch=8, d=4, hidden=16, steps=T)


POLICIES = {"sqrt": "sqrt", "levels3": ad.Checkpoint(levels=3)}
CASES = {"rnn": ("RNN (hidden 16, batch 4)", _rnn), "ode_rk4": ("RK4 neural ODE (hidden 16, "
                                                                 "batch 8)", _ode)}


def _peak_bytes(g, args) -> int:
    """What one call allocates at its peak, its pooled work arrays included (the pools the
    generated module keeps between calls are emptied first, so the call makes them again)."""
    for value in g.specialize(*args).function.__globals__.values():
        if isinstance(value, list) and value and isinstance(value[0], tuple):
            value.clear()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        g(*args)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _stored(source, T) -> int:
    """Per-iteration states kept at once: the snapshots plus one segment's rows, as the
    checkpointed code's comment says (checked against its stack allocations); T for the
    unbounded gradient, whose code stacks every iteration."""
    notes = re.findall(r"# checkpointed: (\d+) snapshots? of .*, one per (\d+) steps", source)
    rows = {int(m) for m in re.findall(r"np\.empty\(\((\d+), ", source)}
    if not notes:
        assert T in rows, source
        return T
    # the outermost loop's snapshots, each nested level's (the largest of each), one segment
    levels = sorted({(int(n), int(length)) for n, length in notes}, key=lambda p: -p[1])
    by_length = {}
    for n, length in levels:
        by_length[length] = max(by_length.get(length, 0), n)
    snapshots = sum(by_length.values())
    innermost = min(by_length)
    assert innermost in rows and not any(T <= r for r in rows), source
    return snapshots + innermost


def _close(a, b) -> float:
    return max(np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-300) for x, y in zip(a, b))


def measure(name, T, rounds, policy="sqrt") -> dict:
    fn, wrt, args = CASES[name][1](T)
    full = ad.grad(fn, wrt=wrt)
    ck = ad.grad(fn, wrt=wrt, checkpoint=POLICIES[policy])
    error = _close(ck(*args), full(*args))   # compiled, and the gradients agree
    assert error <= 1e-12, error
    peaks = {"full": _peak_bytes(full, args), "ck": _peak_bytes(ck, args)}
    times = {"full": [], "ck": []}
    for r in range(rounds):   # interleaved, the order alternating
        for key in (("full", "ck") if r % 2 == 0 else ("ck", "full")):
            g = full if key == "full" else ck
            t0 = time.perf_counter()
            g(*args)
            times[key].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"name": name, "T": T, "policy": policy, "error": error, "peak_full": peaks["full"],
            "peak_ck": peaks["ck"], "stored_full": _stored(full.source, T),
            "stored_ck": _stored(ck.source, T), "t_full": med["full"],
            "t_ck": med["ck"], "rounds": rounds}


def table(rows) -> str:
    lines = ["| workload | T | checkpoint= | stored states, unbounded | checkpointed (2 sqrt(T)) | "
             "peak MB, unbounded | checkpointed | memory ratio | time ratio (s per call, "
             "unbounded) | max rel. difference |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(
            f"| {CASES[r['name']][0]} | {r['T']:,} | {_policy(r)} | {r['stored_full']:,} | "
            f"{r['stored_ck']:,} ({2 * math.sqrt(r['T']):,.0f}) | {r['peak_full'] / 1e6:.1f} | "
            f"{r['peak_ck'] / 1e6:.1f} | {r['peak_ck'] / r['peak_full']:.3f}x | "
            f"{r['t_ck'] / r['t_full']:.2f}x ({r['t_full']:.2f} s) | {r['error']:.1e} |")
    return "\n".join(lines)


def _policy(row) -> str:
    return {"sqrt": '`"sqrt"`', "levels3": "`Checkpoint(levels=3)`"}[row.get("policy", "sqrt")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^4 steps only")
    parser.add_argument("--steps", type=int, nargs="*", default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--only", choices=sorted(CASES), default=None)
    parser.add_argument("--policies", nargs="*", choices=sorted(POLICIES),
                        default=["sqrt", "levels3"])
    parser.add_argument("--no-write", action="store_true", help="print only")
    opts = parser.parse_args(argv)
    steps = opts.steps or ([10_000] if opts.quick else [10_000, 100_000])
    rows = []
    for T in steps:
        for name in ([opts.only] if opts.only else CASES):
            for policy in opts.policies:
                rounds = opts.rounds or (5 if T <= 10_000 else 3)
                rows.append(measure(name, T, rounds, policy))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print(text)
    if not opts.no_write:
        OUT.write_text(_page(text, rows))


def _page(text, rows) -> str:
    return f"""# Checkpointed reverse mode: memory and time

Written by `python -m benchmarks.checkpointing` ({', '.join(sorted({f'{r["T"]:,}' for r in
rows}))} steps; medians of {', '.join(sorted({str(r['rounds']) for r in rows}))} interleaved
rounds per configuration; one process, a loaded shared 2-core machine: read the ratios, not the
times). `checkpoint="sqrt"` (two levels) and `checkpoint=ad.Checkpoint(levels=3)` against the
unbounded gradient of the same function, compiled for the same arguments (#33 item 6's targets:
at most 2 sqrt(T) stored states, at most 3x the time).

- *stored states*: per-iteration states the generated code keeps at once, read from its stack
  allocations and comments: T rows for the unbounded gradient; for the checkpointed one the
  snapshots of each level (`T // L` rows at two levels) plus one innermost segment's residual
  stacks (`L` rows), `L = ceil(T / ceil(sqrt(T)))` at two levels.
- *peak MB*: the most memory one call holds at once beyond its arguments (tracemalloc, which
  counts NumPy's array allocations).
- *time ratio*: checkpointed / unbounded seconds per call.

{text}
"""


if __name__ == "__main__":
    main()
