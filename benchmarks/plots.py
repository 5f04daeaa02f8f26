"""PNG plots of a run: time against input size, cumulative time against calls, peak memory."""

from __future__ import annotations

import os

import numpy as np

from . import workloads
from .figures import Results, cumulative
from .systems import ORDER, label

STYLE = {"hand": ("black", "o", "-"), "compiled": ("tab:blue", "s", "-"),
         "generated": ("tab:cyan", "P", ":"), "numba": ("tab:brown", "*", "-."),
         "tape": ("tab:orange", "^", "-"), "torch": ("tab:red", "v", "--"),
         "jax": ("tab:green", "D", "--"), "autograd": ("tab:purple", "x", "--"),
         "standalone": ("tab:gray", "h", ":"), "torch_compile": ("tab:pink", "<", "--")}
CUMULATIVE = ("seed_graph", "small_mlp", "mlp", "elementwise_1e6")
SKIP = ("generated",)       # the same compiled code as "compiled": only in the size plot


def available() -> bool:
    import importlib.util
    return importlib.util.find_spec("matplotlib") is not None


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 10, "axes.grid": True, "grid.alpha": 0.3})
    return plt


def _line(ax, system, xs, ys):
    color, marker, dash = STYLE[system]
    ax.plot(xs, ys, dash, color=color, marker=marker, label=label(system), markersize=5)


def _sweep_row(res: Results, left, right, names, title: str) -> None:
    for s in res.systems_measured(ORDER):
        pts = [(workloads.get(n).size, res.ok(n, s)["median_s"], res.ratio(n, s))
               for n in names if res.ok(n, s)]
        if pts:
            _line(left, s, [p[0] for p in pts], [p[1] for p in pts])
            _line(right, s, [p[0] for p in pts], [p[2] for p in pts])
    left.set(xscale="log", yscale="log", xlabel="n (elements)", ylabel="seconds per gradient",
             title=f"time per call ({title})")
    right.set(xscale="log", yscale="log", xlabel="n (elements)",
              ylabel="per call / hand-written", title=f"relative to hand-written ({title})")
    right.axhline(1.0, color="grey", lw=0.8)


def plot_sweep(res: Results, path: str, single: Results | None = None) -> bool:
    """Per-call time against n for the elementwise workload, absolute and relative to hand."""
    names = [w.name for w in workloads.SWEEP]
    passes = [(r, t) for r, t in ((res, "library threads"), (single, "one thread"))
              if r is not None and any(r.ok(n, "hand") for n in names)]
    if not passes:
        return False
    plt = _pyplot()
    fig, axes = plt.subplots(len(passes), 2, figsize=(11, 4.3 * len(passes)), squeeze=False)
    for (r, title), (left, right) in zip(passes, axes):
        _sweep_row(r, left, right, names, title)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("sum(tanh(x)·x + 3x² − exp(−x)): gradient time against input size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_cumulative(res: Results, path: str) -> bool:
    """Total time for N gradients from a fresh process (compile + N calls), a few workloads."""
    shown = [w for w in CUMULATIVE if res.ok(w, "hand")]
    if not shown:
        return False
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), squeeze=False)
    calls = np.unique(np.logspace(0, 5, 60).round())
    for ax, w in zip(axes.flat, shown):
        for s in res.systems_measured(ORDER):
            row = None if s in SKIP else res.ok(w, s)
            if row:
                _line(ax, s, calls, [cumulative(row["first_s"], row["median_s"], n)
                                     for n in calls])
        ax.set(xscale="log", yscale="log", xlabel="number of gradient calls",
               ylabel="total seconds (incl. compile)", title=workloads.get(w).title)
        for line in ax.get_lines():
            line.set_markevery(8)
    for ax in list(axes.flat)[len(shown):]:
        ax.set_visible(False)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Cumulative time: compiling once against recording every call")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_memory(res: Results, path: str) -> bool:
    """Peak resident-set growth per workload and system (fresh process), log scale."""
    names = [w.name for w in workloads.WORKLOADS if not w.sweep and res.get(w.name, "hand")]
    systems = [s for s in res.systems_measured(ORDER) if s not in SKIP]
    if not names or not systems:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(11, 5))
    width = 0.8 / len(systems)
    for i, s in enumerate(systems):
        peaks = [res.value(n, s, "peak_bytes") for n in names]
        ys = [np.nan if p is None else max(p / 2**20, 1e-2) for p in peaks]   # no bar: no figure
        xs = np.arange(len(names)) + (i - (len(systems) - 1) / 2) * width
        ax.bar(xs, ys, width, color=STYLE[s][0], label=label(s))
    ax.set_xticks(np.arange(len(names)), [workloads.get(n).title for n in names],
                  rotation=20, ha="right")
    ax.set(yscale="log", ylabel="peak RSS growth (MB)",
           title="Peak memory in a fresh process (compile + first three calls)")
    ax.set_ylim(top=ax.get_ylim()[1] * 10)       # room for the legend above the bars
    ax.legend(fontsize=8, ncol=3, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def make_all(res: Results, folder: str, single: Results | None = None) -> list[str]:
    """Write the plots that this run has data for; returns the file names written."""
    os.makedirs(folder, exist_ok=True)
    drawn = [("time_vs_size.png", plot_sweep(res, os.path.join(folder, "time_vs_size.png"),
                                             single)),
             ("cumulative.png", plot_cumulative(res, os.path.join(folder, "cumulative.png"))),
             ("memory.png", plot_memory(res, os.path.join(folder, "memory.png")))]
    return [name for name, ok in drawn if ok]
