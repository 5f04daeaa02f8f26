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
    parser.add_argument("--while", dest="while_loops", action="store_true",
                        help="the while-loop versions instead (checkpoint=s, every=): their "
                             "section of CHECKPOINTING.md")
    opts = parser.parse_args(argv)
    if opts.while_loops:
        return while_main(opts)
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
        OUT.write_text(_page(text, rows) + _binomial_kept() + _while_section())


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


# the section benchmarks/checkpointing_binomial.py writes into the same page
BINOMIAL_START = "<!-- binomial: python -m benchmarks.checkpointing_binomial -->"
BINOMIAL_END = "<!-- end binomial -->"


def _binomial_kept() -> str:
    """The binomial section already written (kept when checkpointing.py rewrites the page)."""
    text = OUT.read_text() if OUT.exists() else ""
    if BINOMIAL_START not in text or BINOMIAL_END not in text:
        return ""
    section = text.split(BINOMIAL_START, 1)[1].split(BINOMIAL_END, 1)[0]
    return "\n" + BINOMIAL_START + section + BINOMIAL_END + "\n"


# ---- while loops: the same workloads with a while on a counter (transforms/while_checkpoints.py)
WHILE_MARK = "\n<!-- while loops: python -m benchmarks.checkpointing --while -->\n"


def rnn_while(Wh, Wx, b, x, h0):
    h = h0
    t = 0
    while t < x.shape[0]:
        h = np.tanh(h @ Wh + x[t] @ Wx + b)
        t = t + 1
    return np.sum(h * h)


def ode_while(W1, b1, W2, y0, obs):
    dt = 0.05
    y = y0
    loss = 0.0
    t = 0
    while t < obs.shape[0]:
        k1 = np.tanh(y @ W1 + b1) @ W2
        k2 = np.tanh((y + 0.5 * dt * k1) @ W1 + b1) @ W2
        k3 = np.tanh((y + 0.5 * dt * k2) @ W1 + b1) @ W2
        k4 = np.tanh((y + dt * k3) @ W1 + b1) @ W2
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        r = y - obs[t]
        loss = loss + np.mean(r * r)
        t = t + 1
    return loss / obs.shape[0]


WHILE_CASES = {
    "rnn": ("RNN, while on a counter", lambda T: (rnn_while, (0, 1, 2), _rnn(T)[2])),
    "ode_rk4": ("RK4 neural ODE, while on a counter",
                lambda T: (ode_while, (0, 1, 2), _ode(T)[2]))}


def while_policies(T) -> dict:
    """``checkpoint=s`` with ``s = 2 ceil(sqrt(T))`` (what "sqrt" would hold, given without
    T), and ``every=ceil(sqrt(T))``, the best every= for a known T."""
    root = math.isqrt(T - 1) + 1
    return {f"`checkpoint={2 * root}`": 2 * root, f"`Checkpoint(every={root})`":
            ad.Checkpoint(every=root)}


def held_states(T, policy) -> int:
    """Per-iteration states held at once, from the schedule: snapshots plus one segment's
    residuals (epochs: their snapshots, one epoch's segments', ``2 ** e`` residuals)."""
    from adcompiler.transforms.while_checkpoints import covered, split
    if isinstance(policy, ad.Checkpoint):
        return -(-T // policy.every) + min(policy.every, T)
    epochs, per_epoch = split(policy)
    used, done = 0, 0
    while done < T and used < epochs:
        done += per_epoch * 2 ** used
        used += 1
    rest = max(T - covered(policy), 0)
    return used + min(per_epoch, T) + max(2 ** (used - 1), rest)


def measure_while(name, T, rounds) -> list:
    fn, wrt, args = WHILE_CASES[name][1](T)
    full = ad.grad(fn, wrt=wrt)
    want = full(*args)
    graded = {label: ad.grad(fn, wrt=wrt, checkpoint=p) for label, p in while_policies(T).items()}
    errors = {label: _close(g(*args), want) for label, g in graded.items()}
    assert max(errors.values()) <= 1e-12, errors
    runs = {"full": full, **graded}
    peaks = {k: _peak_bytes(g, args) for k, g in runs.items()}
    times = {k: [] for k in runs}
    for r in range(rounds):   # interleaved, the order turning round
        keys = list(runs) if r % 2 == 0 else list(runs)[::-1]
        for key in keys:
            t0 = time.perf_counter()
            runs[key](*args)
            times[key].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    return [{"name": name, "T": T, "label": label, "held": held_states(T, p),
             "peak_full": peaks["full"], "peak": peaks[label], "t_full": med["full"],
             "t": med[label], "error": errors[label], "rounds": rounds}
            for label, p in while_policies(T).items()]


def while_table(rows) -> str:
    lines = ["| workload | T | checkpoint= | stored states, unbounded | checkpointed | peak MB, "
             "unbounded | checkpointed | memory ratio | time ratio (s per call, unbounded) | "
             "max rel. difference |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(
            f"| {WHILE_CASES[r['name']][0]} | {r['T']:,} | {r['label']} | {r['T']:,} | "
            f"{r['held']:,} | {r['peak_full'] / 1e6:.1f} | {r['peak'] / 1e6:.1f} | "
            f"{r['peak'] / r['peak_full']:.3f}x | {r['t'] / r['t_full']:.2f}x "
            f"({r['t_full']:.2f} s) | {r['error']:.1e} |")
    return "\n".join(lines)


def while_main(opts):
    steps = opts.steps or ([10_000] if opts.quick else [10_000, 100_000])
    rows = []
    for T in steps:
        for name in ([opts.only] if opts.only else WHILE_CASES):
            if name == "ode_rk4" and T > 10_000 and not opts.only:
                continue   # about a minute a call unbounded: --only ode_rk4 to run it
            rows.extend(measure_while(name, T, opts.rounds or (5 if T <= 10_000 else 3)))
            print(while_table(rows[-2:]).splitlines()[-2:], flush=True)
    text = while_table(rows)
    print(text)
    if not opts.no_write:
        old = OUT.read_text() if OUT.exists() else ""
        OUT.write_text(old.split(WHILE_MARK)[0] + WHILE_MARK + _while_page(text, rows))


def _while_page(text, rows) -> str:
    return f"""
## While loops

Written by `python -m benchmarks.checkpointing --while` (medians of
{', '.join(sorted({str(r['rounds']) for r in rows}))} interleaved rounds; one process, a loaded
shared 2-core machine: read the ratios, not the times). The RNN and RK4 ODE above with
`while t < T: ...; t = t + 1` instead of the `for` loop, so the trip count is the loop's own:
`checkpoint=s` (at most `s` snapshots whatever T, docs/reference/checkpointing.md#while-loops)
with `s = 2 ceil(sqrt(T))`, and `Checkpoint(every=ceil(sqrt(T)))`, the best `every=` for a T
known beforehand, against the unbounded gradient of the same while loop. *Stored states*: the
snapshots (at most `s` for `checkpoint=s`) plus one segment's residuals that the schedule holds
at once (computed from the schedule by `held_states`; tests/transforms/test_while_checkpoints.py
traces runs to check the snapshots). The RK4 ODE at 10^5 steps is not in the default run (about
10 s a call unbounded): `--only ode_rk4 --steps 100000`.

{text}
"""


def _while_section() -> str:
    """The while loops' section already written, kept when the for loops' part is rewritten."""
    old = OUT.read_text() if OUT.exists() else ""
    return WHILE_MARK + old.split(WHILE_MARK)[1] if WHILE_MARK in old else ""


if __name__ == "__main__":
    main()
