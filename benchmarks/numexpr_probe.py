"""Does a numexpr path pay? The compiled gradient against numexpr variants of the same adjoint.

``python -m benchmarks.numexpr_probe`` (numexpr from the ``bench`` extra) times, in one process
and interleaved (ratios, not absolute times, are what the shared machine gives reliably): the
hand-written NumPy gradient, adcompiler's generated gradient, the whole adjoint as one
``numexpr.evaluate`` (its own tanh/exp: scalar libm calls, blocked and multi-threaded), and a
hybrid (NumPy's vectorised tanh/exp into buffers, numexpr for the arithmetic around them).
It writes benchmarks/NUMEXPR.md. docs/performance.md quotes the figures and the
decision they led to: the hybrid is now what ``ad.grad`` emits where numexpr is installed
(adcompiler/backends/numexpr_chains.py), so the probe times it beside the ufunc-only code.
"""

from __future__ import annotations

import os
import platform
import sys
import timeit

import numpy as np

import adcompiler as ad

from . import handwritten, workloads


def _variants(ne, n):
    b = [np.empty(n) for _ in range(2)]

    def elementwise_whole(x):
        return ne.evaluate("x * (7.0 - tanh(x) ** 2) + tanh(x) + exp(-x)")

    def elementwise_hybrid(x):
        t = np.tanh(x, out=b[0])
        e = np.exp(np.negative(x, out=b[1]), out=b[1])
        return ne.evaluate("x * (7.0 - t * t) + t + e")

    def rosenbrock_whole(x):
        a, c = x[:-1], x[1:]   # noqa: F841 - read by name inside the numexpr strings
        r = ne.evaluate("200.0 * (c - a * a)")
        g = np.empty_like(x)
        g[-1:] = 0.0
        ne.evaluate("2.0 * (a - r * a - 1.0)", out=g[:-1])
        g[1:] += r
        return g
    return {"elementwise": [("numexpr, whole adjoint", elementwise_whole),
                            ("NumPy tanh/exp + numexpr", elementwise_hybrid)],
            "rosenbrock": [("numexpr, whole adjoint", rosenbrock_whole)]}


def _median_ratio(fns, x, rounds=7):
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, f in fns.items():
            times[name].append(min(timeit.repeat(lambda: f(x), number=3, repeat=3)) / 3)
    hand = np.median(times["hand-written NumPy"])
    return {name: (np.median(t), np.median(t) / hand) for name, t in times.items()}


def main() -> int:
    try:
        import numexpr as ne
    except ImportError:
        print("numexpr is not installed: pip install numexpr (or the bench extra)")
        return 1
    rows = []
    for name, n in (("elementwise", 10 ** 6), ("elementwise", 10 ** 7), ("rosenbrock", 10 ** 6)):
        x = np.random.default_rng(0).uniform(-2.0, 2.0, n)
        fn = getattr(workloads, name)
        os.environ["ADCOMPILER_NUMEXPR"] = "0"
        ufuncs_only = ad.grad(fn)
        ufuncs_only(x)  # compiled now, without numexpr
        del os.environ["ADCOMPILER_NUMEXPR"]
        fns = {"hand-written NumPy": lambda x, h=getattr(handwritten, name): h(x)[0],
               "adcompiler.grad, ufuncs only (ADCOMPILER_NUMEXPR=0)": ufuncs_only,
               "adcompiler.grad (its numexpr path)": ad.grad(fn)}
        fns.update(_variants(ne, n)[name])
        expected = fns["hand-written NumPy"](x)
        for label, f in fns.items():
            assert np.allclose(f(x), expected, rtol=1e-10), label
        for label, (t, ratio) in _median_ratio(fns, x).items():
            rows.append(f"| {name} 10^{len(str(n)) - 1} | {label} | {t * 1e3:.2f} ms | "
                        f"{ratio:.2f} |")
    text = "\n".join([
        "# numexpr probe", "",
        f"`python -m benchmarks.numexpr_probe` on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores; numpy {np.__version__}, numexpr {ne.__version__} "
        f"({ne.nthreads} threads); Python {sys.version.split()[0]}.", "",
        "Per-call medians, interleaved in one process; ratio to the hand-written gradient.", "",
        "| workload | gradient | per call | ratio |", "| --- | --- | --- | --- |", *rows, ""])
    path = os.path.join(os.path.dirname(__file__), "NUMEXPR.md")
    with open(path, "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
