"""Would an optional numba path reach jax.jit(jax.grad)? Fused numba gradient kernels, timed.

``python -m benchmarks.numba_probe`` (where numba is installed) times per-call medians, in one
process and interleaved: the hand-written NumPy gradient, adcompiler's, jax.jit(jax.grad)'s and
numba kernels as an emitter could write them, the whole gradient in one loop (``prange`` or
serial) with libm's exp/tanh or with exp/tanh as polynomials that LLVM vectorises (as XLA's are),
under several ``fastmath`` settings; errors against the hand-written gradient; each kernel's
compile time in fresh processes (``--compile KEY [--cache]`` is that child), without and with
numba's on-disk cache. Writes benchmarks/NUMBA.md (keeping its "## Conclusion" section).
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
import timeit

import numpy as np

numba = None   # imported by _load_numba(), so that a child process can time the import
_vexp = _vtanh = None   # set by _own_math()

LN2_HI, LN2_LO, INV_LN2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.4426950408889634
EXPM1_C = tuple(1.0 / math.factorial(k) for k in range(12, 0, -1))   # 1/12!, ..., 1/1!


def _load_numba() -> bool:
    global numba
    try:
        import numba
    except ImportError:
        pass
    return numba is not None


def _own_math():
    """exp and tanh from + - * / floor, a bit cast and selects: LLVM vectorises loops of them.
    Set as module globals, so that kernels calling them can be cached on disk."""
    global _vexp, _vtanh
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def f64_from_bits(typingctx, v):
        return types.float64(types.int64), lambda ctx, b, sig, args: b.bitcast(args[0],
                                                                               ir.DoubleType())

    @numba.njit(inline="always")
    def expm1_small(r):                   # e^r - 1 for |r| <= ln2/2: Taylor to r^13, < 1e-17
        p = 1.0 / 6227020800.0
        for c in EXPM1_C:
            p = p * r + c
        return p * r

    @numba.njit(inline="always")
    def vexp(x):                          # 2^k e^r, x = k ln2 + r; subnormal results flush to 0
        k = math.floor(min(max(x, -708.0), 709.0) * INV_LN2 + 0.5)
        r = (x - k * LN2_HI) - k * LN2_LO
        v = (1.0 + expm1_small(r)) * f64_from_bits((np.int64(k) + 1023) << 52)
        return 0.0 if x < -708.39 else (math.inf if x > 709.78 else v)

    @numba.njit(inline="always")
    def vtanh(x):                         # expm1(2|x|) / (expm1(2|x|) + 2), sign restored
        y = min(abs(x), 20.0)
        m = expm1_small(2.0 * y) if y < 0.17 else vexp(2.0 * y) - 1.0
        t = m / (m + 2.0)
        return t if x >= 0.0 else -t
    _vexp, _vtanh = vexp, vtanh


def _ew_own(x):                           # the whole gradient, one loop (prange or range)
    g = np.empty_like(x)
    for i in numba.prange(x.size):
        xi = x[i]
        t = _vtanh(xi)
        g[i] = xi * (7.0 - t * t) + t + _vexp(-xi)
    return g


def _ew_libm(x):
    g = np.empty_like(x)
    for i in numba.prange(x.size):
        xi = x[i]
        t = math.tanh(xi)
        g[i] = xi * (7.0 - t * t) + t + math.exp(-xi)
    return g


def _ew_scalar(xi):                          # for numba.vectorize
    t = _vtanh(xi)
    return xi * (7.0 - t * t) + t + _vexp(-xi)


def _rosenbrock(x):                          # dx[i]: term i (as x[:-1]) and term i-1 (as x[1:])
    n = x.size
    g = np.empty_like(x)
    for i in numba.prange(1, n - 1):
        a = x[i]
        g[i] = 200.0 * (a - x[i - 1] * x[i - 1]) + (
            2.0 * (a - 1.0) - 400.0 * (a * (x[i + 1] - a * a)))
    a = x[0]
    g[0] = 2.0 * (a - 1.0) - 400.0 * (a * (x[1] - a * a))
    g[n - 1] = 200.0 * (x[n - 1] - x[n - 2] * x[n - 2])
    return g


def _ro_r(c, a):                             # per-chain form: one kernel per fused chain
    r = np.empty_like(a)
    for i in numba.prange(a.size):
        r[i] = 200.0 * (c[i] - a[i] * a[i])
    return r


def _ro_g(a, r, g):
    for i in numba.prange(a.size):
        g[i] = 2.0 * (a[i] - r[i] * a[i] - 1.0)


def _ro_chains(jit_r, jit_g):
    def grad(x):                             # the scatter of x[1:]'s adjoint stays in NumPy
        g = np.empty_like(x)
        r = jit_r(x[1:], x[:-1])
        g[-1] = 0.0
        jit_g(x[:-1], r, g[:-1])
        g[1:] += r
        return g
    return grad


def _kernels(cache=False):
    """key -> (workload, label, builder); builder() gives the jitted gradient of x."""
    _own_math()

    def jit(fn, par, fm, error_model="numpy"):   # "python": a / b checks b, no SIMD
        return lambda: numba.njit(parallel=par, fastmath=fm, error_model=error_model,
                                  cache=cache)(fn)
    out = {}
    for fm, fm_label in ((False, "off"), ({"contract"}, "contract"), (True, "True")):
        for par in (True, False):
            loop = "prange" if par else "serial loop"
            out[f"ew-own-{int(par)}-{fm_label}"] = (
                "elementwise", f"numba {loop}, own exp/tanh, fastmath {fm_label}",
                jit(_ew_own, par, fm))
            out[f"ro-{int(par)}-{fm_label}"] = ("rosenbrock", f"numba {loop}, fastmath {fm_label}",
                                                jit(_rosenbrock, par, fm))
    for par in (True, False):
        out[f"ew-libm-{int(par)}"] = ("elementwise", "numba " + ("prange" if par else "serial loop")
                                      + ", math.tanh/exp, fastmath off", jit(_ew_libm, par, False))
    out["ro-chains"] = ("rosenbrock", "numba per-chain kernels + NumPy g[1:] += r, serial, "
                        "fastmath off", lambda: _ro_chains(jit(_ro_r, False, False)(),
                                                           jit(_ro_g, False, False)()))
    out["ew-pyerr"] = ("elementwise", "numba prange, own exp/tanh, fastmath True, "
                       "error_model='python'", jit(_ew_own, True, True, "python"))
    out["ew-vec"] = ("elementwise", "numba vectorize(parallel), own exp/tanh, fastmath True",
                     lambda: numba.vectorize(["float64(float64)"], target="parallel",
                                             fastmath=True, cache=cache)(_ew_scalar))
    return out


def _median_ratio(fns, x, rounds):
    """Per-call medians, interleaved; and the CPUs other processes used meanwhile."""
    from . import load
    number = max(1, 3 * 10 ** 6 // x.size)
    times = {name: [] for name in fns}
    busy, own, wall = load._busy_seconds(), time.process_time(), time.perf_counter()
    for _ in range(rounds):
        for name, f in fns.items():
            times[name].append(min(timeit.repeat(lambda: f(x), number=number, repeat=3)) / number)
    wall = time.perf_counter() - wall
    others = (load._busy_seconds() - busy - (time.process_time() - own)) / wall
    return {name: float(np.median(t)) for name, t in times.items()}, max(0.0, others)


def _errors(got, want):
    """Max relative error per element, and normwise (max abs error / max abs value)."""
    diff = np.abs(got - want)
    return float(np.max(diff / np.maximum(np.abs(want), 1e-300))), float(diff.max() / np.abs(
        want).max())


def _peers(name, x):
    import adcompiler as ad

    from . import handwritten, workloads
    fns = {"hand-written NumPy": lambda x, h=getattr(handwritten, name): h(x)[0],
           "adcompiler.grad": ad.grad(getattr(workloads, name))}
    try:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp

        from .systems import rebind
        jax.config.update("jax_enable_x64", True)
        g = jax.jit(jax.grad(rebind(getattr(workloads, name), jnp, jnp)))
        jx = jax.block_until_ready(jnp.asarray(x))   # converted once, as the benchmarks do
        fns["jax.jit(jax.grad)"] = lambda _: jax.block_until_ready(g(jx))
    except ImportError:
        pass
    return fns


def _compile_child(key, cache):
    """In a fresh process: import numba, its one-off set-up, a kernel's first and second call."""
    t = [time.perf_counter()]
    _load_numba()
    t.append(time.perf_counter())
    numba.njit(lambda v: v + 1.0)(1.0)    # numba's first compile: its CPU target, LLVM, typing
    t.append(time.perf_counter())
    x = np.random.default_rng(0).uniform(-2.0, 2.0, 10 ** 6)
    f = _kernels(cache)[key][2]()
    for _ in range(2):
        f(x)
        t.append(time.perf_counter())
    print(json.dumps(np.diff(t).tolist()))     # import, set-up, build + first call, second call


def _compile_times(keys):
    """key -> [import, set-up, compile (cache=False), load from a filled on-disk cache]."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = {}
    for key in keys:
        with tempfile.TemporaryDirectory() as cache_dir:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=root)
            runs = [json.loads(subprocess.run(
                [sys.executable, "-m", "benchmarks.numba_probe", "--compile", key, *extra],
                env=env, capture_output=True, text=True, check=True, cwd=root).stdout)
                for extra in ([], ["--cache"], ["--cache"])]
        out[key] = runs[0][:2] + [runs[0][2] - runs[0][3], runs[2][2] - runs[2][3]]
    return out


def _measure(kernels):
    from . import load
    rows = []
    for name, n in (("elementwise", 10 ** 6), ("elementwise", 10 ** 7), ("rosenbrock", 10 ** 6)):
        x = np.random.default_rng(0).uniform(-2.0, 2.0, n)
        fns = _peers(name, x)
        fns.update({label: build() for w, label, build in kernels.values() if w == name})
        want = fns["hand-written NumPy"](x)
        errs = {label: _errors(np.asarray(f(x)), want) for label, f in fns.items()}  # + warm-up
        load.wait_for_quiet(30.0)
        times, others = _median_ratio(fns, x, rounds=7 if n <= 10 ** 6 else 3)
        hand, jax_t = times["hand-written NumPy"], times.get("jax.jit(jax.grad)", math.nan)
        for label, t in times.items():
            rows.append(f"| {name} 10^{len(str(n)) - 1} | {label} | {t * 1e3:.2f} ms | "
                        f"{t / hand:.2f} | {t / jax_t:.2f} | {errs[label][0]:.1e} | "
                        f"{errs[label][1]:.1e} |")
        rows.append(f"| | (other processes meanwhile: {others:.2f} CPUs) | | | | | |")
    return rows


def _text(kernels, rows, compiled):
    imp, setup = (np.median([c[i] for c in compiled.values()]) * 1e3 for i in (0, 1))
    compile_rows = [f"| {kernels[k][0]} | {kernels[k][1]} | {c[2] * 1e3:.0f} ms | "
                    f"{c[3] * 1e3:.0f} ms |" for k, c in compiled.items()]
    return "\n".join([
        "# numba probe", "",
        f"`python -m benchmarks.numba_probe` on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores; numpy {np.__version__}, numba {numba.__version__} "
        f"({numba.get_num_threads()} threads, threading layer {numba.threading_layer()}, Intel "
        f"SVML {'in use' if numba.config.USING_SVML else 'not in use'}); Python "
        f"{sys.version.split()[0]}.", "",
        "Per-call medians, interleaved in one process; ratios to the hand-written gradient and "
        "to jax.jit(jax.grad); errors against the hand-written gradient (max relative error per "
        "element; normwise: max abs error / max abs value).", "",
        "| workload | gradient | per call | / hand-written | / JAX | max rel. error | normwise |",
        "| --- | --- | --- | --- | --- | --- | --- |", *rows, "",
        f"Compile time, each kernel in fresh processes (10^6 elements; first call minus second "
        f"call): `import numba` {imp:.0f} ms and numba's one-off set-up (its first compile, of "
        f"a one-line function) {setup:.0f} ms come first in any process; then the kernel's "
        f"compile with `cache=False`, or its load from numba's on-disk cache once filled.", "",
        "| workload | kernel | compile | from the cache |", "| --- | --- | --- | --- |",
        *compile_rows, ""])


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--compile"]:
        return _compile_child(argv[1], "--cache" in argv) or 0
    if not _load_numba():
        print("numba not installed: pip install numba (into an environment of its own)")
        return 1
    kernels = _kernels()
    timed = [k for k in kernels if not k.endswith(("-off", "-contract"))]  # as fastmath=True
    text = _text(kernels, _measure(kernels), _compile_times(timed))
    path = os.path.join(os.path.dirname(__file__), "NUMBA.md")
    if os.path.exists(path):                   # a hand-written conclusion below the figures stays
        with open(path) as f:
            old = f.read()
        text += old[old.index("\n## Conclusion"):] if "\n## Conclusion" in old else ""
    with open(path, "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
