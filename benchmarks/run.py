"""Run the benchmark suite: every system on every workload, each in a fresh process; write reports.

    python -m benchmarks.run [--quick] [--only NAME[,NAME...]] [--skip NAME[,NAME...]]
                             [--no-plots] [--out DIR] [--threads N] [--report-only]

A full run writes benchmarks/RESULTS.md, benchmarks/results.json and benchmarks/plots/*.png;
--quick, --only and --skip runs write to benchmarks/quick/ (unless --out says otherwise), so that
a smoke or partial run never overwrites the full figures. ``--only dask`` runs
benchmarks/dask_scale.py instead (a gradient over more data than a Dask cluster's memory; it
writes benchmarks/DASK.md, and nothing with --quick).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

if __package__ in (None, ""):          # run as a script: python benchmarks/run.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import load, plots, report, rounds, systems, workloads  # noqa: E402
from benchmarks.figures import Results  # noqa: E402
from benchmarks.progress import Progress  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# target: seconds of timed calls per task; wait: the most one task waits for a quieter machine;
# wait_total, retry_total: the run's budgets for waiting and for measuring disturbed tasks again
# rounds: fresh processes for each of rounds.SYSTEMS (the hand-written and adcompiler's gradients)
FULL = {"target": 1.0, "min_repeats": 7, "timeout": 300, "wait": 10, "wait_total": 90,
        "retry_total": 150, "rounds": 3}
QUICK = {"target": 0.15, "min_repeats": 3, "timeout": 120, "wait": 0, "wait_total": 0,
         "retry_total": 0, "rounds": 1}
COMPILE_TIMEOUT_FACTOR = 3
HEAVY = {"elementwise_1e7": 5.0, "rosenbrock_1e6": 1.5, "elementwise_1e6": 1.5, "rnn": 1.5}


def availability(system: str) -> str | None:
    """None when ``system`` can run here; otherwise why not (checked without importing peers)."""
    if system in ("hand", "compiled", "generated", "standalone"):
        return None
    if system == "tape":
        try:
            import adcompiler.tape as tape
        except Exception as e:  # noqa: BLE001 (a half-built tape is simply not there yet)
            return f"adcompiler.tape does not import: {type(e).__name__}: {e}"
        return None if hasattr(tape, "dynamic_grad") else "adcompiler.tape.dynamic_grad not built"
    module = {"torch": "torch", "torch_compile": "torch", "jax": "jax", "autograd": "autograd",
              "numba": "numba"}[system]
    if not importlib.util.find_spec(module):
        return f"{module} is not installed"
    if system == "torch_compile" and not any(shutil.which(cc) for cc in ("g++", "c++", "clang++")):
        return "no C++ compiler on PATH: inductor writes and compiles C++ for the CPU"
    return None


def _matches(name: str, tokens: list[str]) -> bool:
    return not tokens or any(name == t or name.startswith(t) for t in tokens)


def plan(opts) -> list[tuple[str, str]]:
    """The (workload, system) pairs to measure, workload by workload."""
    tokens = [t for t in (opts.only or "").split(",") if t]
    skipped = [t for t in (getattr(opts, "skip", None) or "").split(",") if t]
    chosen_systems = [s for s in systems.ORDER if not tokens or s in tokens] or list(systems.ORDER)
    chosen_systems = [s for s in chosen_systems if s not in skipped]
    workload_tokens = [t for t in tokens if t not in systems.ORDER]
    skipped_workloads = [t for t in skipped if t not in systems.ORDER]
    names = [w.name for w in workloads.WORKLOADS
             if _matches(w.name, workload_tokens) and not (w.sweep and opts.quick)
             and not (skipped_workloads and _matches(w.name, skipped_workloads))]
    if not names:
        sys.exit(f"--only {opts.only}: no workload matches; known: {', '.join(workloads.BY_NAME)}")
    if "hand" not in chosen_systems:
        chosen_systems.insert(0, "hand")          # every ratio needs the floor
    return [(w, s) for w in names for s in chosen_systems]


def worker_env(threads: int | None) -> dict:
    """The workers' environment: the checkout importable, and the thread count if one is set."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    env["ADCOMPILER_CACHE"] = "0"  # time to first gradient includes compiling, every run
    if threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS"):
            env[var] = str(threads)
        if threads == 1:
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
                                " intra_op_parallelism_threads=1").strip()
    return env


def worker_cpus(threads: int | None) -> set[int] | None:
    """The CPUs a worker with ``threads`` set is pinned to (the last ``threads`` of those the
    runner may use), or None: no count set, no fewer CPUs than that, or no affinity here.
    The thread variables do not bind every library: with them (and ``XLA_FLAGS``) set to 1,
    jax 0.10's XLA still ran one matrix product on three threads (benchmarks/MLP.md)."""
    if not threads or not hasattr(os, "sched_getaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    return set(allowed[-threads:]) if threads < len(allowed) else None


def _pinning(threads: int | None):
    """What the worker runs before it starts: its pin to ``worker_cpus(threads)``, if any."""
    cpus = worker_cpus(threads)
    return None if cpus is None else lambda: os.sched_setaffinity(0, cpus)


def run_one(workload: str, system: str, settings: dict, threads: int | None) -> dict:
    """Measure one pair in a fresh process; a crash or timeout becomes a result row."""
    cmd = [sys.executable, "-m", "benchmarks.worker", system, workload,
           "--target", str(settings["target"]), "--min-repeats", str(settings["min_repeats"])]
    # torch.compile's first call compiles with inductor (minutes for an unrolled loop)
    timeout = settings["timeout"] * (COMPILE_TIMEOUT_FACTOR if system == "torch_compile" else 1)
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=worker_env(threads), capture_output=True,
                              text=True, timeout=timeout, preexec_fn=_pinning(threads))
    except subprocess.TimeoutExpired:
        return {"workload": workload, "system": system, "status": "timeout",
                "message": f"no result within {timeout} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"workload": workload, "system": system, "status": "error",
            "message": f"worker exited with {done.returncode}: {tail[0][:300]}"}


def _weight(workload: str, system: str) -> float:
    return HEAVY.get(workload, 1.0) * (3.0 if system == "autograd" else 1.0) + (
        1.0 if system in ("torch", "jax") else 5.0 if system == "torch_compile" else 0.3)


def _measure(task, settings, budget: dict) -> dict:
    """One task: wait (within the budget) for a quieter machine, run it, note the others' load."""
    w, s, threads = task
    waited = load.wait_for_quiet(min(settings["wait"], budget["wait"]))
    budget["wait"] -= waited
    with load.Meter() as meter:
        row = run_one(w, s, settings, threads)
    return dict(row, threads=threads, others_cpu=meter.others)


def _retry_disturbed(rows, tasks, settings, budget, bar) -> None:
    """Measure again, while the budget lasts, the rows that ran beside other work (the
    hand-written ones first: every ratio divides by them); keep the quieter measurement. A row
    whose first gradient alone took longer than the budget has left is not measured again: a
    cold torch.compile repays its compile (minutes on an unrolled loop) in every process."""
    disturbed = sorted((i for i, r in enumerate(rows) if r["status"] == "ok"
                        and (r.get("others_cpu") or 0) > load.BUSY_LIMIT),
                       key=lambda i: (rows[i]["system"] != "hand", -rows[i]["others_cpu"]))
    for i in disturbed:
        if budget["retry"] <= 0:
            break
        if (rows[i].get("first_s") or 0.0) > budget["retry"]:
            continue
        began = time.perf_counter()
        bar.start(f"again: {tasks[i][0]} / {tasks[i][1]}", 0)
        row = _measure(tasks[i], settings, budget)
        bar.done(row["status"])
        budget["retry"] -= time.perf_counter() - began
        if row["status"] == "ok" and row["others_cpu"] is not None and \
                row["others_cpu"] < rows[i]["others_cpu"]:
            rows[i] = dict(row, retried=True)


def measure_all(tasks, settings) -> list[dict]:
    """Run every (workload, system, threads) task in turn, behind a progress bar."""
    rows, missing = [], {s: availability(s) for s in {s for _, s, _ in tasks}}
    budget = {"wait": settings["wait_total"], "retry": settings["retry_total"]}
    with Progress(sum(_weight(w, s) for w, s, _ in tasks if missing[s] is None)) as bar:
        for task in tasks:
            w, s, threads = task
            if missing[s] is not None:
                rows.append({"workload": w, "system": s, "status": "n/a",
                             "message": missing[s], "threads": threads})
                continue
            bar.start(f"{w} / {s}" + (f" / {threads} thread" if threads else ""), _weight(w, s))
            rows.append(_measure(task, settings, budget))
            bar.done(rows[-1]["status"])
        _retry_disturbed(rows, tasks, settings, budget, bar)
    return rows


def tasks_of(opts) -> list[tuple[str, str, int | None]]:
    """The passes: the asked thread count; a full run adds a one-thread pass."""
    pairs = plan(opts)
    tasks = [(w, s, opts.threads) for w, s in pairs]
    if opts.threads is None and not opts.quick:
        tasks += [(w, s, 1) for w, s in pairs]
    return rounds.expand(tasks, opts.settings["rounds"],
                         {w.name for w in workloads.WORKLOADS if w.sweep})


def out_folder(opts) -> str:
    partial = opts.quick or opts.only or getattr(opts, "skip", None)
    return opts.out or (os.path.join(HERE, "quick") if partial else HERE)


def save(rows, opts, began: float) -> dict:
    """Write results.json (the raw rows and the run's facts) and return the facts."""
    os.makedirs(out_folder(opts), exist_ok=True)
    meta = report.machine_info()
    meta.update(command="python -m benchmarks.run " + " ".join(sys.argv[1:]),
                duration_s=time.perf_counter() - began,
                settings={"target_s": opts.settings["target"], "threads": opts.threads,
                          "min_repeats": opts.settings["min_repeats"],
                          "rounds": opts.settings["rounds"]},
                memory_methods=sorted({r["memory_method"] for r in rows if "memory_method" in r}),
                load_line=_load_line(rows))
    with open(os.path.join(out_folder(opts), "results.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return meta


def _load_line(rows) -> str:
    seen = [r["others_cpu"] for r in rows if r.get("others_cpu") is not None]
    if not seen:
        return ""
    marked = sum(x > load.BUSY_LIMIT for x in seen)
    return (f"In this run other processes used {sum(seen) / len(seen):.2f} CPUs on average "
            f"(at most {max(seen):.2f}) while a worker ran; {marked} of {len(seen)} "
            f"measurements ran beside more than {load.BUSY_LIMIT} CPUs of other work.")


def write_reports(rows, meta, opts) -> str:
    """Draw the plots (from the first pass) and write RESULTS.md; returns its path."""
    out, threads = out_folder(opts), meta["settings"]["threads"]
    primary = [r for r in rows if r.get("threads") == threads]
    single = [r for r in rows if r.get("threads") == 1] if threads != 1 else []
    meta = dict(meta, plot_lines=_plots(primary, single, opts, out))
    path = os.path.join(out, "RESULTS.md")
    with open(path, "w") as f:
        f.write(report.render(primary, meta, single))
    return path


def _plots(rows, single, opts, out) -> list[str]:
    if opts.no_plots:
        return ["## Plots", "", "Not drawn in this run (--no-plots).", ""]
    if not plots.available():
        return ["## Plots", "", "Not drawn: matplotlib is not installed (`pip install "
                "matplotlib`, or the `bench` extra).", ""]
    names = plots.make_all(Results(rows), os.path.join(out, "plots"),
                           Results(single) if single else None)
    return ["## Plots", ""] + [f"![{n}](plots/{n})" for n in names] + [""]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small repeat counts (smoke run)")
    parser.add_argument("--only", metavar="NAME", help="workloads (name or prefix) and/or "
                        "systems, comma-separated: e.g. mlp or elementwise,torch")
    parser.add_argument("--skip", metavar="NAME", help="workloads (name or prefix) and/or "
                        "systems to leave out, comma-separated: e.g. torch_compile, whose cold "
                        "compiles take minutes per workload")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--out", help="folder for RESULTS.md, results.json and plots/")
    parser.add_argument("--threads", type=int, help="one pass with OMP/OpenBLAS/MKL (and XLA, "
                        "for 1) thread counts set in the workers; default: a pass with each "
                        "library's own default, then (full runs) a one-thread pass")
    parser.add_argument("--report-only", action="store_true",
                        help="measure nothing: redraw RESULTS.md and plots from results.json")
    opts = parser.parse_args(argv)
    if opts.only == "dask":   # its own command: a Dask cluster, not the workloads' systems
        from benchmarks import dask_scale
        return dask_scale.main(["--quick"] if opts.quick else [])
    opts.settings = QUICK if opts.quick else FULL
    began = time.perf_counter()
    if opts.report_only:
        with open(os.path.join(out_folder(opts), "results.json")) as f:
            saved = json.load(f)
        rows, meta = saved["rows"], saved["meta"]
    else:
        rows = rounds.merge(measure_all(tasks_of(opts), opts.settings))
        meta = save(rows, opts, began)
    path = write_reports(rows, meta, opts)
    print(f"wrote {os.path.relpath(path)} in {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
