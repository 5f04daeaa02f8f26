"""Do broadcast-then-reduce products and planned 2-D products pay? One workload's gradient as
compiled before them, with passes/broadcast_products.py only, and with planned products too.

``python -m benchmarks.products_probe gmm 15`` (workload, rounds) times, in one process and
interleaved (ratios, not absolute times, are what the shared machine gives reliably; set
OMP_NUM_THREADS=1 for one BLAS thread): the hand-written gradient, then the compiled gradient
without the pass and without 2-D products in planned buffers (the code before #33 item 3),
with the pass, and with both; per call the median time, its median ratio to the hand-written
time of the same round, the ratio of the minima, and minor page faults. docs/performance.md
quotes the mixture's figures.
"""

from __future__ import annotations

import inspect
import resource
import statistics
import sys
import time

import adcompiler as ad
from adcompiler import passes
from adcompiler.backends import emit, planner

from . import workloads


def _compiled(w, args, with_pass, planned):
    """``w``'s gradient compiled with or without the pass and the planned products."""
    full, product, plannable = passes.PIPELINE, planner._product_into_buffer, emit.plannable_nodes

    def unplanned(graph, sharing, rows=frozenset()):
        planner._product_into_buffer = lambda node: False
        try:
            return plannable(graph, sharing, rows)
        finally:
            planner._product_into_buffer = product

    passes.PIPELINE = full if with_pass else tuple(
        p for p in full if p is not passes.contract_broadcast_products)
    emit.plannable_nodes = plannable if planned else unplanned
    try:
        names = list(inspect.signature(w.fn).parameters)
        g = ad.grad(w.fn, wrt=tuple(names.index(n) for n in w.wrt))
        g(*args)
        return g
    finally:
        passes.PIPELINE, emit.plannable_nodes = full, plannable


def main(name="gmm", rounds=15, calls=3):
    w = workloads.get(name)
    args = w.make()
    systems = {"hand-written": w.hand, "before": _compiled(w, args, False, False),
               "pass": _compiled(w, args, True, False),
               "pass + planned": _compiled(w, args, True, True)}
    times = {k: [] for k in systems}
    faults = {k: [] for k in systems}
    for _ in range(rounds):
        for k, f in systems.items():
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t = time.perf_counter()
            for _ in range(calls):
                f(*args)
            times[k].append((time.perf_counter() - t) / calls)
            faults[k].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / calls)
    hand = times["hand-written"]
    for k in systems:
        ratio = statistics.median(a / b for a, b in zip(times[k], hand))
        print(f"{k:15s} median {statistics.median(times[k]) * 1e3:8.2f} ms   / hand-written "
              f"{ratio:.2f} (minima {min(times[k]) / min(hand):.2f})   page faults a call "
              f"{statistics.median(faults[k]):.0f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gmm",
         int(sys.argv[2]) if len(sys.argv) > 2 else 15)
