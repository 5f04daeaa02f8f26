"""The GPU benchmark: adcompiler's compiled CuPy gradient against PyTorch CUDA autograd and
``jax.jit(jax.grad)`` on the GPU (whichever are installed), written to benchmarks/RESULTS_GPU.md.

    python -m benchmarks.gpu            # about a minute or two on one GPU
    python -m benchmarks.gpu --quick    # a smoke run
    python -m benchmarks.gpu --dtype float32 --out /tmp/RESULTS_GPU.md

Invariants: every system computes the same gradient of the same function on the same inputs,
already on the device; each result is checked against adcompiler's NumPy gradient before it is
timed; a timing is the median over rounds of (``reps`` calls, then one device synchronisation)
/ ``reps``, after a warm-up, so compilation (adcompiler's, CuPy's, XLA's) is reported apart, as
the first call. Without CuPy and a CUDA device it writes nothing and exits with status 2.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with CuPy/torch

OUT = Path(__file__).resolve().parent / "RESULTS_GPU.md"


# ---- the workloads, in NumPy (adcompiler compiles these): the CPU suite's own functions ------
if __package__ in (None, ""):          # run as a script: python benchmarks/gpu.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.workloads import elementwise, mlp, rnn, rosenbrock  # noqa: E402


# ---- the same in PyTorch (jax runs the NumPy functions with np bound to jax.numpy) -------------
def torch_versions(torch):
    def t_elementwise(x):
        return torch.sum(torch.tanh(x) * x + 3.0 * x * x - torch.exp(-x))

    def t_rosenbrock(x):
        return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    def t_mlp(W1, b1, W2, b2, x, onehot):
        h = torch.tanh(x @ W1 + b1)
        logits = h @ W2 + b2
        shifted = logits - torch.amax(logits, dim=1, keepdim=True)
        logp = shifted - torch.log(torch.sum(torch.exp(shifted), dim=1, keepdim=True))
        return -torch.mean(torch.sum(onehot * logp, dim=1))

    def t_rnn(Wh, Wx, b, x, h0):
        h = h0
        for t in range(x.shape[0]):
            h = torch.tanh(h @ Wh + x[t] @ Wx + b)
        return torch.sum(h * h)

    return {"elementwise": t_elementwise, "rosenbrock": t_rosenbrock, "mlp": t_mlp,
            "rnn": t_rnn}


def workloads(quick, dtype):
    """``(label, name, function, args, wrt)``: NumPy inputs, moved to the device by each system."""
    rng = np.random.default_rng(0)

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    sizes = (10**4, 10**6) if quick else (10**4, 10**5, 10**6, 10**7)
    out = [(f"elementwise n={n:.0e}", "elementwise", elementwise, (r(n),), (0,)) for n in sizes]
    n = 10**5 if quick else 10**6
    out.append((f"rosenbrock n={n:.0e}", "rosenbrock", rosenbrock, (r(n),), (0,)))
    batch = 512 if quick else 4096
    onehot = np.eye(10, dtype=dtype)[rng.integers(0, 10, batch)]
    out.append((f"mlp {batch}x256-512-10", "mlp", mlp,
                (r(256, 512, scale=0.05), r(512, scale=0.0), r(512, 10, scale=0.05),
                 r(10, scale=0.0), r(batch, 256), onehot), (0, 1, 2, 3)))
    steps = 8 if quick else 32
    out.append((f"rnn T={steps} 256x256", "rnn", rnn,
                (r(256, 256, scale=0.05), r(64, 256, scale=0.05), r(256, scale=0.0),
                 r(steps, 128, 64), r(128, 256)), (0, 1, 2)))
    return out


# ---- the systems: each gives (step, sync), step() computing the gradients on the device --------
def adcompiler_cupy(cupy, fn, args, wrt, name):
    import adcompiler as ad
    g = ad.grad(fn, wrt=wrt, backend="cupy")
    dev = [cupy.asarray(a) for a in args]
    return (lambda: g(*dev)), cupy.cuda.Device().synchronize


def torch_cuda(torch, fn, args, wrt, name):
    f = torch_versions(torch)[name]
    dev = [torch.tensor(a, device="cuda", requires_grad=i in wrt) for i, a in enumerate(args)]
    leaves = [dev[i] for i in wrt]
    return (lambda: torch.autograd.grad(f(*dev), leaves)), torch.cuda.synchronize


def jax_gpu(jax, fn, args, wrt, name):
    import types
    f = types.FunctionType(fn.__code__, {**fn.__globals__, "np": jax.numpy}, fn.__name__)
    g = jax.jit(jax.grad(f, argnums=wrt))
    dev = [jax.device_put(a, jax.devices("gpu")[0]) for a in args]
    last = []

    def step():
        last[:] = [g(*dev)]
        return last[0]
    return step, lambda: jax.block_until_ready(last)


def available_systems():
    """``{name: (module, adapter)}`` for the systems that import and see a GPU."""
    systems = {}
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            systems["adcompiler (CuPy)"] = (cupy, adcompiler_cupy)
    except Exception:  # noqa: BLE001 - not installed, no driver, no device
        pass
    try:
        import torch
        if torch.cuda.is_available():
            systems["PyTorch CUDA autograd"] = (torch, torch_cuda)
    except ImportError:
        pass
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        if jax.devices("gpu"):
            systems["jax.jit(jax.grad)"] = (jax, jax_gpu)
    except Exception:  # noqa: BLE001 - not installed, or no GPU backend
        pass
    return systems


# ---- measuring -----------------------------------------------------------------------------------
def measure(step, sync, rounds, min_seconds):
    """(first call in s, steady per-call time in s)."""
    start = time.perf_counter()
    step()
    sync()
    first = time.perf_counter() - start
    reps, elapsed = 1, 0.0
    while elapsed < min_seconds / rounds and reps < 1 << 16:  # calls per round: ~min_s/rounds
        reps *= 2
        start = time.perf_counter()
        for _ in range(reps):
            step()
        sync()
        elapsed = time.perf_counter() - start
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            step()
        sync()
        times.append((time.perf_counter() - start) / reps)
    return first, statistics.median(times)


def worst_error(got, want) -> float:
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    worst = 0.0
    for g, w in zip(got, want):
        g = g.get() if hasattr(g, "get") else g.detach().cpu().numpy() if hasattr(g, "detach") \
            else np.asarray(g)
        worst = max(worst, float(np.max(np.abs(g - w)) / max(np.max(np.abs(w)), 1e-300)))
    return worst


def run(systems, quick, dtype, rounds):
    import adcompiler as ad
    rows = []
    for label, name, fn, args, wrt in workloads(quick, dtype):
        want = ad.grad(fn, wrt=wrt)(*args)
        row = {"workload": label}
        for system, (module, adapter) in systems.items():
            step, sync = adapter(module, fn, args, wrt, name)
            first, steady = measure(step, sync, rounds, 0.5 if quick else 2.0)
            row[system] = (first, steady, worst_error(step(), want))
            print(f"{label:<28} {system:<24} first {first * 1e3:9.1f} ms   "
                  f"{steady * 1e6:10.1f} us/call", file=sys.stderr, flush=True)
        rows.append(row)
    return rows


# ---- the report ----------------------------------------------------------------------------------
def machine():
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(0)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    versions = [f"CuPy {cupy.__version__}", f"CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}",
                f"NumPy {np.__version__}", f"Python {platform.python_version()}"]
    for mod in ("torch", "jax"):
        if mod in sys.modules:
            versions.append(f"{mod} {sys.modules[mod].__version__}")
    return gpu, ", ".join(versions)


def report(systems, rows, dtype, quick) -> str:
    gpu, versions = machine()
    names = list(systems)
    lines = [f"# GPU benchmark ({'quick' if quick else 'full'} run)", "",
             f"Machine: **{gpu}** ({platform.node()}); {versions}. dtype {dtype}.", "",
             "Steady time per gradient call (inputs already on the GPU; median of rounds of "
             "calls, each round ended by one synchronisation), the first call (compilation "
             "included) in parentheses, and the worst relative error against adcompiler's "
             "NumPy gradient. Regenerate with `python -m benchmarks.gpu`.", "",
             "| workload | " + " | ".join(names) + " |",
             "| --- |" + " --- |" * len(names)]
    for row in rows:
        cells = []
        for s in names:
            first, steady, err = row[s]
            cells.append(f"{_time(steady)} ({_time(first)}; err {err:.0e})")
        lines.append(f"| {row['workload']} | " + " | ".join(cells) + " |")
    if names and names[0].startswith("adcompiler"):
        lines += ["", "adcompiler's steady time relative to each peer (below 1: faster):", ""]
        for s in names[1:]:
            ratios = [row[names[0]][1] / row[s][1] for row in rows]
            lines.append(f"- vs {s}: " + ", ".join(f"{row['workload']} {r:.2f}x"
                                                     for row, r in zip(rows, ratios)))
    return "\n".join(lines) + "\n"


def _time(seconds) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} us"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, short timings")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    systems = available_systems()
    if not any(s.startswith("adcompiler") for s in systems):
        print("benchmarks/gpu.py needs CuPy and a CUDA device (pip install -e \".[cuda12]\" on a "
              "GPU machine); none found, so nothing was measured or written.", file=sys.stderr)
        return 2
    rows = run(systems, args.quick, np.dtype(args.dtype), args.rounds)
    args.out.write_text(report(systems, rows, args.dtype, args.quick))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
