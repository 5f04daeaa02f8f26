"""The binomial (Revolve) schedule against the unbounded gradient and the two-level one: peak
memory, stored states, forward steps and time (#33 item 6).

``python -m benchmarks.checkpointing_binomial`` (``--steps 10000 100000``, ``--rounds R``,
``--only rnn``) differentiates :mod:`benchmarks.checkpointing`'s RNN and RK4 ODE with
``checkpoint=None``, ``"sqrt"`` (two levels, ``2 sqrt(T)`` states) and
``Checkpoint(snapshots=s, schedule="binomial")`` for ``s = 2 ceil(sqrt(T)) - 1`` (as many states
as ``"sqrt"``, one step's residuals at a time) and ``s = 20``; checks that the gradients agree to
1e-12; measures medians of interleaved rounds in one process, and writes its section of
benchmarks/CHECKPOINTING.md (between the markers below, the rest of the page left as it is).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import adcompiler as ad
from adcompiler.backends.binomial import _Binomial

from .checkpointing import BINOMIAL_END as END
from .checkpointing import BINOMIAL_START as START
from .checkpointing import CASES, OUT, _close, _peak_bytes



def policies(T) -> dict:
    root = math.isqrt(T - 1) + 1
    return {'`"sqrt"` (two levels)': "sqrt",
            f"binomial, s = {2 * root - 1}": ad.Checkpoint(2 * root - 1, schedule="binomial"),
            "binomial, s = 20": ad.Checkpoint(20, schedule="binomial")}


def forward_steps(T, policy) -> tuple:
    """(forward steps one gradient runs, states held at once) by the schedule: the two-level
    one's ``T + L (T // L)``; the binomial store's count, run on a counter (forward sweep, its
    advances, the steps reversed with residuals)."""
    if policy == "sqrt":
        keep = math.isqrt(T - 1) + 1
        length = -(-T // keep)
        return T + length * (T // length), T // length + length
    store = _Binomial(T, policy.snapshots, lambda j, x: (x + 1,), 1)
    for k in range(T):
        store.put(k, (k,))
    for k in reversed(range(T)):
        store.view(0)[k]
    return 2 * T + store.steps, store.most + 1


def measure(name, T, rounds) -> list:
    fn, wrt, args = CASES[name][1](T)
    grads = {"unbounded": ad.grad(fn, wrt=wrt)}
    grads.update({k: ad.grad(fn, wrt=wrt, checkpoint=p) for k, p in policies(T).items()})
    want = grads["unbounded"](*args)
    errors = {k: _close(g(*args), want) for k, g in grads.items()}
    assert max(errors.values()) <= 1e-12, errors
    peaks = {k: _peak_bytes(g, args) for k, g in grads.items()}
    times = {k: [] for k in grads}
    for r in range(rounds):   # interleaved, the order alternating
        for key in (list(grads) if r % 2 == 0 else list(grads)[::-1]):
            t0 = time.perf_counter()
            grads[key](*args)
            times[key].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    rows = []
    for key, policy in policies(T).items():
        steps, states = forward_steps(T, policy)
        rows.append({"name": name, "T": T, "policy": key, "steps": steps, "states": states,
                     "peak_full": peaks["unbounded"], "peak": peaks[key], "error": errors[key],
                     "t_full": med["unbounded"], "t": med[key], "rounds": rounds})
    return rows


def table(rows) -> str:
    lines = ["| workload | T | checkpoint= | states held | forward steps / T | peak MB "
             "(unbounded) | time ratio (unbounded s) | max rel. difference |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(
            f"| {CASES[r['name']][0]} | {r['T']:,} | {r['policy']} | {r['states']:,} | "
            f"{r['steps'] / r['T']:.2f} | {r['peak'] / 1e6:.1f} ({r['peak_full'] / 1e6:.1f}) | "
            f"{r['t'] / r['t_full']:.2f}x ({r['t_full']:.2f} s) | {r['error']:.1e} |")
    return "\n".join(lines)


def section(rows) -> str:
    return f"""{START}
## The binomial schedule (`Checkpoint(snapshots=s, schedule="binomial")`)

Written by `python -m benchmarks.checkpointing_binomial`: the unbounded gradient, `"sqrt"` and
the binomial schedule with `s = 2 ceil(sqrt(T)) - 1` snapshots (as many states as `"sqrt"`: one
step's residuals besides them) and with `s = 20`, interleaved in one process (medians of
{', '.join(sorted({str(r['rounds']) for r in rows}))} rounds), on a loaded shared machine: read
the ratios, not the times. *states held*: snapshots plus residual rows at once, by the schedule
(the binomial store's most, counted); *forward steps / T*: body evaluations per step (forward
sweep, recomputation, the steps run again with residuals), counted on the store's schedule;
*peak MB*: tracemalloc's peak of one call beyond its arguments.

{table(rows)}
{END}
"""


def write(rows):
    text = OUT.read_text() if OUT.exists() else ""
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section(rows).rstrip("\n") + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section(rows)
    OUT.write_text(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=sorted(CASES), default=None)
    parser.add_argument("--no-write", action="store_true", help="print only")
    opts = parser.parse_args(argv)
    rows = []
    for T in opts.steps:
        for name in ([opts.only] if opts.only else CASES):
            rows += measure(name, T, opts.rounds)
            print(table(rows[-3:]), flush=True)
    print(table(rows))
    if not opts.no_write:
        write(rows)


if __name__ == "__main__":
    main()
