"""A logistic regression's gradient over more data than the Dask workers' memory (#32), on a
``LocalCluster`` of worker processes limited by ``memory_limit``: ``backend="dask"`` and the tape
against the same gradient written by hand in ``dask.array`` and as per-chunk partial gradients
(``map_blocks``, summed), and against reading the data once; 1 and 2 workers.

    python -m benchmarks.dask_scale [--gb 8] [--workers 1,2] [--memory 1GiB] [--rounds 2]
                                    [--quick] [--out benchmarks/DASK.md]

The data (``X``: rows x 100 features, ``y``: labels drawn from a true model) is generated chunk
by chunk from each block's index (``map_blocks``) inside the graph, never materialised: every
gradient generates it again. Per method and worker count: the median time per gradient over
interleaved rounds, the peak resident memory of each worker (sampled in the workers every 20 ms
with psutil), throughput in rows/s and GB/s; the gradients of all methods are checked to agree.
``--quick`` (0.25 GB, one round) writes nothing unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import threading
import time

import numpy as np

if __package__ in (None, ""):          # run as a script: python benchmarks/dask_scale.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import workloads  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FEATURES, CHUNK_ROWS, SEED = 100, 100_000, 2026


# ---- the data: each chunk made from its block index, inside the graph ----------------------
def _features(seed, block_info=None):
    info = block_info[None]
    x = np.random.default_rng([seed, info["chunk-location"][0]]).random(info["chunk-shape"])
    x -= 0.5
    x *= math.sqrt(12.0)   # unit variance
    return x


def _labels(x, w_true, seed, block_info=None):
    i = block_info[None]["chunk-location"][0]
    noise = np.random.default_rng([seed, i, 1]).logistic(size=x.shape[0])
    return (x @ w_true + noise > 0.0).astype(np.float64)


def data(rows, d=FEATURES, chunk=CHUNK_ROWS, seed=SEED):
    """``(X, y)``: lazy Dask arrays of ``rows`` rows in chunks of ``chunk`` rows (the last one
    shorter), generated block by block where they are computed."""
    import dask.array as da
    sizes = (chunk,) * (rows // chunk) + ((rows % chunk,) if rows % chunk else ())
    X = da.map_blocks(_features, chunks=(sizes, (d,)), dtype=np.float64, meta=np.empty((0, 0)),
                      seed=seed, name=f"features-{seed}-{rows}-{d}-{chunk}")
    w_true = np.random.default_rng(seed).standard_normal(d) / math.sqrt(d)
    y = X.map_blocks(_labels, w_true, seed, drop_axis=1, dtype=np.float64)
    return X, y


# ---- the gradients (each returns a NumPy array) -----------------------------------------------
def by_adcompiler():
    import adcompiler as ad
    g = ad.grad(workloads.logistic, backend="dask")   # compute=None: NumPy w, a NumPy gradient
    return lambda w, X, y: g(w, X, y)


def by_tape():
    from adcompiler import tape
    return tape.dynamic_grad(workloads.logistic)


def by_hand():
    """The gradient written by hand in ``dask.array`` (benchmarks/handwritten.py's)."""
    import dask.array as da

    def grad(w, X, y):
        s = 2.0 * y - 1.0
        dm = s / (1.0 + da.exp(s * (X @ w)))
        return (X.T @ (dm * (-1.0 / y.shape[0]))).compute()
    return grad


def _partial(x, y, w):
    """One chunk's share of the gradient, a (1, d) row."""
    s = 2.0 * y[:, 0] - 1.0
    dm = s / (1.0 + np.exp(s * (x @ w)))
    return (x.T @ dm)[None, :]


def by_map_blocks():
    """Per-chunk partial gradients (``map_blocks``), summed (dask-ml is not installed: this is
    what its gradient of a GLM does, chunk by chunk)."""
    import dask.array as da

    def grad(w, X, y):
        parts = da.map_blocks(_partial, X, y[:, None], w=w, dtype=np.float64,
                              chunks=((1,) * X.numblocks[0], (X.shape[1],)))
        return (parts.sum(axis=0) * (-1.0 / y.shape[0])).compute()
    return grad


def by_reading():
    """The floor: generating the data and reading it once (``X.sum()``, ``y.sum()``)."""
    import dask

    return lambda w, X, y: np.array(dask.compute(X.sum(), y.sum()))


METHODS = {"adcompiler backend='dask'": by_adcompiler, "adcompiler.tape on Dask": by_tape,
           "dask.array by hand": by_hand, "map_blocks partial sums": by_map_blocks,
           "generate + read the data once": by_reading}
BASELINE = "dask.array by hand"


# ---- peak memory, sampled in each worker -----------------------------------------------------
def _start_sampling(dask_worker, interval=0.02):
    """Sample this worker process's RSS until :func:`_stop_sampling` (state kept on the worker:
    ``client.run`` may ship these functions by value)."""
    import psutil
    process, state = psutil.Process(), {"run": True}
    state["peak"] = state["idle"] = process.memory_info().rss

    def sample():
        while state["run"]:
            state["peak"] = max(state["peak"], process.memory_info().rss)
            time.sleep(interval)
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    dask_worker.adcompiler_sampler = (state, thread)


def _stop_sampling(dask_worker):
    state, thread = dask_worker.adcompiler_sampler
    state["run"] = False
    thread.join()
    return state["peak"], state["idle"]


def timed(client, fn, args):
    """``(seconds, [(peak, idle) RSS bytes of each worker], result)`` of one gradient."""
    client.run(_start_sampling)
    began = time.perf_counter()
    result = fn(*args)
    seconds = time.perf_counter() - began
    peaks = sorted(client.run(_stop_sampling).values())
    return seconds, peaks, result


# ---- one cluster: interleaved rounds ----------------------------------------------------------
def measure(n_workers, memory, rows, rounds):
    """``{method: {"times": [...], "peaks": [[...]...]}}`` on a fresh cluster of ``n_workers``
    one-thread worker processes of ``memory`` each, and the gradients' largest disagreement."""
    import logging

    from distributed import Client, LocalCluster
    X, y = data(rows)
    w = np.random.default_rng(1).standard_normal(FEATURES) * 0.1
    fns = {name: make() for name, make in METHODS.items()}
    found = {name: {"times": [], "peaks": []} for name in fns}
    grads = {}
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      memory_limit=memory, dashboard_address=":0",
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        client.wait_for_workers(n_workers)
        small = data(3 * CHUNK_ROWS // 2)
        for fn in fns.values():   # untimed: compiles the gradient, imports in the workers
            fn(w, *small)
        names = list(fns)
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:   # rotated order
                seconds, peaks, grads[name] = timed(client, fns[name], (w, X, y))
                found[name]["times"].append(seconds)
                found[name]["peaks"].append(peaks)
                print(f"  {n_workers} worker(s), round {r + 1}: {name}: {seconds:.1f} s, "
                      f"peak (idle) {_mib(peaks)} MiB", flush=True)
    return found, disagreement(grads)


def _mib(peaks):
    return " / ".join(f"{p / 2**20:.0f} ({i / 2**20:.0f})" for p, i in peaks)


def disagreement(grads) -> float:
    """The largest relative difference between the gradients and the hand-written one."""
    want = grads[BASELINE]
    scale = np.max(np.abs(want))
    return max(float(np.max(np.abs(g - want)) / scale) for name, g in grads.items()
               if not name.startswith("generate"))


# ---- the report -------------------------------------------------------------------------------
def table(results, rows, gb):
    """Markdown rows: workers, method, median time, its ratio to the hand-written gradient on
    the same cluster, peak memory per worker, rows/s, GB/s."""
    lines = ["| workers | gradient | time per gradient (median) | / by hand | peak RSS per "
             "worker, MiB (idle before) | rows/s | GB/s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for n_workers, (found, _) in sorted(results.items()):
        base = statistics.median(found[BASELINE]["times"])
        for name, row in found.items():
            t = statistics.median(row["times"])
            peaks = [max(p[i] for p in row["peaks"]) for i in range(n_workers)]
            lines.append(f"| {n_workers} | {name} | {t:.1f} s | {t / base:.2f} | {_mib(peaks)} | "
                         f"{rows / t:,.0f} | {gb / t:.2f} |")
    return lines


def scaling(results):
    """One line per method: its median time on 1 worker over its median on 2."""
    if not {1, 2} <= set(results):
        return []
    out = ["", "Scaling, 1 worker's median time over 2 workers':", ""]
    for name in results[1][0]:
        one, two = (statistics.median(results[k][0][name]["times"]) for k in (1, 2))
        out.append(f"- {name}: {one / two:.2f}x")
    return out


def report(results, opts, rows, seconds):
    gb = rows * (FEATURES + 1) * 8 / 1e9
    memory = opts.memory
    lines = [
        "# Dask: a gradient over more data than the workers' memory (#32)", "",
        "Written by `python -m benchmarks.dask_scale" + (f" {' '.join(opts.argv)}" if opts.argv
                                                         else "") + "` (do not edit by hand).", "",
        f"Logistic regression (benchmarks/workloads.py's `logistic`), {rows:,} rows x "
        f"{FEATURES} features: X and y are {gb:.2f} GB of float64, generated chunk by chunk "
        f"({CHUNK_ROWS:,} rows, {CHUNK_ROWS * FEATURES * 8 / 1e6:.0f} MB per chunk of X) "
        f"inside each gradient's graph and never materialised. Workers: `LocalCluster` "
        f"processes, one thread each, `memory_limit={memory}` each (the data is "
        f"{gb * 1e9 / _bytes(memory):.1f}x one worker's limit). w is a NumPy array, so every "
        "gradient is a NumPy array (one `dask.compute`).", "",
        f"Machine: {os.cpu_count()} cores shared with other jobs; {opts.rounds} interleaved "
        "round(s) per cluster, medians; peak RSS is the largest any round saw, sampled in each "
        "worker process every 20 ms (it includes the worker's own memory, its RSS before the "
        "gradient in brackets). Each method ran once untimed on 1.5 chunks first (compiling "
        "adcompiler's gradient, importing in the workers). dask-ml is not "
        "installed: the `map_blocks` row is its kind of chunk-wise gradient, written by hand.",
        "", *table(results, rows, gb), *scaling(results), "",
        "Largest relative difference of each gradient from the hand-written one: " +
        ", ".join(f"{k} worker(s) {v[1]:.1e}" for k, v in sorted(results.items())) + ".", "",
        f"Total run time: {seconds:.0f} s.", ""]
    return "\n".join(lines)


def _bytes(memory: str) -> float:
    from dask.utils import parse_bytes
    return parse_bytes(memory)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=8.0, help="size of X in GB (default 8)")
    parser.add_argument("--workers", default="1,2", help="worker counts (default 1,2)")
    parser.add_argument("--memory", default="1GiB", help="memory_limit per worker")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    parser.add_argument("--quick", action="store_true", help="0.25 GB, one round, no file")
    parser.add_argument("--out", help="the report (default benchmarks/DASK.md; --quick: none)")
    opts = parser.parse_args(argv)
    opts.argv = [a for a in (sys.argv[1:] if argv is None else argv)
                 if a != "--out" and a != opts.out and not a.startswith("--out=")]
    if opts.quick:
        opts.gb, opts.rounds = min(opts.gb, 0.25), 1
    rows = int(opts.gb * 1e9 / (FEATURES * 8))
    began, results = time.perf_counter(), {}
    for n_workers in (int(k) for k in opts.workers.split(",")):
        print(f"{n_workers} worker(s), {opts.memory} each, {rows:,} rows:", flush=True)
        results[n_workers] = measure(n_workers, opts.memory, rows, opts.rounds)
    text = report(results, opts, rows, time.perf_counter() - began)
    print(text)
    out = opts.out or (None if opts.quick else os.path.join(HERE, "DASK.md"))
    if out:
        with open(out, "w") as f:
            f.write(text)
        print(f"wrote {os.path.relpath(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
