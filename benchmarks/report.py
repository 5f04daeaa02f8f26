"""Write RESULTS.md from a run's results: the tables, the machine, the versions and the method."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform

from . import rounds, targets, workloads
from .figures import Results, crossover, megabytes, ratio, seconds
from .load import BUSY_LIMIT
from .systems import ORDER, label

VERSIONED = ("numpy", "adcompiler", "torch", "jax", "jaxlib", "autograd", "matplotlib")
CROSSOVER_WORKLOADS = ("seed_graph", "seed_f", "small_mlp", "logistic", "mlp", "elementwise_1e6")


def machine_info() -> dict:
    """CPU model, cores, OS, Python, the BLAS numpy uses, and the installed versions."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = {}
    for dist in VERSIONED:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return {"cpu": cpu, "cores": os.cpu_count(), "os": platform.platform(),
            "python": platform.python_version(), "blas": _blas(), "versions": versions,
            "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")}


def _blas() -> str:
    try:
        import numpy as np
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 (informational only)
        return "unknown"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _cell(res: Results, w: str, s: str, text: str | None, also: str | None = None) -> str:
    """``text``, marked † when measured beside other work; the status word when missing."""
    if text is None or text == "–":
        return res.status_word(w, s)
    noisy = res.disturbed(w, s) or (also is not None and res.disturbed(w, also))
    return text + (" †" if noisy else "")


def _ratio_table(res, names, systems):
    rows = []
    for w in names:
        hand = res.ok(w, "hand")
        row = [workloads.get(w).title, _cell(res, w, "hand", seconds(hand["median_s"]))
               if hand else res.status_word(w, "hand")]
        for s in systems:
            r = res.ratio(w, s)
            row.append(_cell(res, w, s, None if r is None else ratio(r), also="hand"))
        rows.append(row)
    return _table(["workload", "hand-written (per call)"] + [label(s) for s in systems], rows) + [
        "", f"† measured while other processes kept more than {BUSY_LIMIT} CPUs busy on average "
        "(from /proc/stat): less reliable."]


def _value_table(res, names, systems, key, fmt):
    rows = [[workloads.get(w).title]
            + [_cell(res, w, s, fmt(res.value(w, s, key))) for s in systems] for w in names]
    return _table(["workload"] + [label(s) for s in systems], rows)


def _crossover_text(mine: dict, theirs: dict) -> str:
    kind, n = crossover(mine, theirs)
    if kind == "after":
        return f"from call {n} on"
    if kind == "before":
        return f"only for the first {n - 1} calls"
    return "from the first call" if kind == "always" else "never"


def _crossover_lines(res: Results) -> list[str]:
    rows = []
    for w in CROSSOVER_WORKLOADS:
        mine = res.ok(w, "compiled")
        for other in ("tape", "jax", "torch"):
            theirs = res.ok(w, other)
            if mine is None or theirs is None:
                continue
            rows.append([workloads.get(w).title, label(other), _crossover_text(mine, theirs)])
    if not rows:
        return ["(no workload has both the compiled gradient and a peer measured)"]
    return _table(["workload", "against", "compiled gradient ahead in total time"], rows)


def _method(meta: dict) -> list[str]:
    s = meta["settings"]
    return [
        "## Method", "",
        "- Each (system, workload) runs in its own fresh process (`python -m benchmarks.worker`), "
        "one after another; the system is imported first and its import is excluded from "
        "every figure. For adcompiler that includes the installed libraries its generated code "
        "calls (SciPy's linalg and special, numexpr), as each peer's import includes its own "
        "linear algebra.",
        *_rounds_line(s.get("rounds", 1)),
        "- **Check before timing**: every gradient is compared with the hand-written one "
        "(`np.allclose`, rtol 1e-6); a mismatch is reported as WRONG and not timed.",
        f"- **Per call**: median over batches of back-to-back calls (the batch size makes a batch "
        f"last ≥ 5 ms), repeated for about {s['target_s']} s of calls and at least "
        f"{s['min_repeats']} times, after the first calls and a calibration batch as warm-up.",
        "- **First gradient**: compile (tracing, code generation, XLA) plus the first call, in "
        "the fresh process; inputs are made (and converted to tensors) before the clock starts.",
        "- **Peak memory**: growth of the resident set over a baseline taken after imports and "
        "inputs (and a `malloc_trim`), across compile + the first three calls. The kernel's "
        "high-water mark VmHWM is reset through `/proc/self/clear_refs` (5) at the baseline; "
        f"method used in this run: {', '.join(meta['memory_methods']) or '–'} "
        "(the fallback `ru_maxrss` is a lower bound).",
        "- **Other load**: the CPU time other processes took during each worker is measured "
        "from /proc/stat; before each task the runner waits (briefly) for a quieter machine, and "
        "at the end measures the most disturbed tasks again while its budget lasts, keeping the "
        f"quieter measurement. {meta.get('load_line', '')}",
        "- Threads: " + (f"{s['threads']} (OMP/OpenBLAS/MKL/NUMBA_NUM_THREADS set in the workers, "
                         f"each worker pinned to {s['threads']} CPU(s) where the machine has more: "
                         "XLA does not keep to the variables)"
                         if s.get("threads") else "each library's default (none set)") + ".",
        "- PyTorch runs `torch.autograd.grad` on float64 CPU tensors (threads left default); "
        "JAX runs `jax.jit(jax.grad(f, argnums))` with `jax_enable_x64` on CPU, waiting for "
        "results; HIPS autograd runs `autograd.grad(f, argnum)`. All peers execute the same "
        "function from `benchmarks/workloads.py`, with `np`/`math` bound to their namespace.",
        "- torch.compile runs `torch.autograd.grad` of `torch.compile(f, backend=\"inductor\")` "
        "on the same tensors, with inductor's cache in a fresh folder (cold, as adcompiler "
        "runs with `ADCOMPILER_CACHE=0`): its time to first gradient is dynamo's trace "
        "(Python loops unrolled) and inductor's C++ compile of the forward and backward "
        "graphs, reported in its own table and never part of the per-call median.",
        "- Ratios are per-call medians over the hand-written gradient's, measured in the same "
        "run; < 1 is faster. \"not yet supported\" is a CompileError of adcompiler; n/a means "
        "the system is not installed (or, for the tape, not built yet).", ""]


def _rounds_line(n: int) -> list[str]:
    if n <= 1:
        return []
    return [f"- **Rounds**: {', '.join(label(s) for s in rounds.SYSTEMS)} each ran in {n} fresh "
            "processes per workload and pass (the later ones after the workload's peers, so "
            "spread over time); their figures are medians over those processes. Every ratio "
            "divides by the hand-written gradient, and one process's figure can be off by up "
            "to 20% on this shared machine (see `benchmarks/rounds.py`)."]


def _failures(res: Results) -> list[str]:
    lines = [f"- {r['system']} / {r['workload']}: **{res.status_word(r['workload'], r['system'])}**"
             f" — {r.get('message', '')}" for r in res.rows
             if r.get("status") not in ("ok",) and not (r.get("status") == "n/a"
                                                       and r["system"] != "tape")]
    return ["## Not measured, and why", ""] + (lines or ["- nothing: every system ran every "
                                                         "workload"]) + [""]


def _header(meta: dict) -> list[str]:
    v = meta["versions"]
    return [
        "# Benchmark results", "",
        f"Run: `{meta['command']}` on {meta['date']}, {meta['duration_s']:.0f} s in all.", "",
        f"Machine: {meta['cpu']}, {meta['cores']} cores; {meta['os']}.  ",
        f"Python {meta['python']}; numpy {v['numpy']} ({meta['blas']}); adcompiler "
        f"{v['adcompiler']}; torch {v['torch']}; jax {v['jax']} (jaxlib {v['jaxlib']}); "
        f"autograd {v['autograd']}; matplotlib {v['matplotlib']}.", ""]


def _single_thread(single: Results, main: list[str], peers: list[str]) -> list[str]:
    return ["## Per call with one thread per library, relative to hand-written", "",
            "The same workloads in a second pass with OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, "
            "MKL_NUM_THREADS and NUMBA_NUM_THREADS = 1 (and XLA's Eigen pool off). On a 2-vCPU "
            "virtual machine a "
            "parallel region waits for the slower vCPU, which the host may hold back for "
            "milliseconds; with one thread those stalls go, so this pass compares the code "
            "itself more steadily.", ""] + _ratio_table(single, main, peers) + [""]


def _targets(res: Results, single: Results | None, main: list[str]) -> list[str]:
    verdicts = targets.evaluate(res, main)
    if single is None:
        return _table(["target", "this run"], [list(t) for t in verdicts])
    one = dict(targets.evaluate(single, main))
    return _table(["target", "library threads", "one thread"],
                  [[t, v, one[t]] for t, v in verdicts])


def _banner(rows: list[dict], single: Results | None) -> list[str]:
    """A warning when much of the run was measured beside other work."""
    seen = [r["others_cpu"] for r in rows if r.get("others_cpu") is not None]
    marked = sum(x > BUSY_LIMIT for x in seen)
    if not seen or marked <= len(seen) / 4:
        return []
    prefer = (" The one-thread pass below is far less sensitive to a busy neighbour: prefer its "
              "ratios for the BLAS-heavy workloads (logistic regression, MLP, RNN).") if single \
        else ""
    return [f"> **Disturbed run**: {marked} of {len(seen)} measurements of the main pass ran while "
            f"other processes kept more than {BUSY_LIMIT} CPUs busy (†). With one of the two "
            "cores taken, a two-thread BLAS or OpenMP region waits for the busy core, so "
            f"default-thread figures can be many times too slow.{prefer} Re-run on a quiet "
            "machine for figures to quote.", ""]


def _standalone(res, names) -> list[str]:
    """The standalone module's per-call median over ``adcompiler.grad``'s, per workload."""
    rows = []
    for w in names:
        mine, theirs = res.ok(w, "standalone"), res.ok(w, "compiled")
        text = None if mine is None or theirs is None else \
            ratio(mine["median_s"] / theirs["median_s"])
        rows.append([workloads.get(w).title, _cell(res, w, "standalone", text, also="compiled")])
    if all(r[1] == res.status_word(w, "standalone") for r, w in zip(rows, names)):
        return []   # not measured in this run
    return ["## The standalone module against the decorated gradient", "",
            "Per-call median of the module `adcompiler compile` writes for the workload (one body "
            "for every size, NumPy only: no numexpr) over `adcompiler.grad`'s (specialised to "
            "the call's sizes, numexpr on large chains); < 1 is faster.", ""] + \
        _table(["workload", "standalone / adcompiler.grad"], rows) + [""]


def render(rows: list[dict], meta: dict, single_rows: list[dict] | None = None) -> str:
    """The whole RESULTS.md text; ``single_rows``: the one-thread pass, when there was one."""
    res = Results(rows)
    single = Results(single_rows) if single_rows else None
    present = {r["workload"] for r in rows}
    main = [w.name for w in workloads.WORKLOADS if not w.sweep and w.name in present]
    sweep = [w.name for w in workloads.SWEEP if w.name in present]
    peers = [s for s in res.systems_present(ORDER) if s != "hand"]
    every = res.systems_present(ORDER)
    out = _header(meta) + _banner(rows, single)
    out += ["## Per call, relative to the hand-written NumPy gradient", "",
            "Hand-written column: its per-call median. Other columns: per-call median divided by "
            "the hand-written one (< 1 is faster).", ""]
    out += _ratio_table(res, main, peers) + [""]
    if single is not None:
        out += _single_thread(single, main, peers)
    out += _standalone(res, main)
    out += ["## Per-call medians", ""] + _value_table(res, main, every, "median_s", seconds)
    out += ["", "## Time to first gradient (fresh process, import excluded)", ""]
    out += _value_table(res, main, every, "first_s", seconds)
    out += ["", "## Peak memory (fresh process, growth over the baseline)", ""]
    out += _value_table(res, main, every, "peak_bytes", megabytes) + [""]
    if sweep:
        out += ["## Elementwise workload against input size (per-call medians)", ""]
        out += _value_table(res, sweep, every, "median_s", seconds) + [""]
    out += ["## Compile once or record every call: where the totals cross", "",
            "Total time for N gradients from a fresh process = first gradient + (N - 1) × per "
            "call.", ""] + _crossover_lines(res) + [""]
    out += ["## The issue's targets (compiled = `adcompiler.grad`, called as a user would)", ""]
    out += _targets(res, single, main) + [""]
    out += _failures(res) + _method(meta) + meta.get("plot_lines", [])
    return "\n".join(out) + "\n"
