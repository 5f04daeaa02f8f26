"""Which scatter-add is fastest? ``np.add.at`` against its replacements, over the sizes that matter.

``python -m benchmarks.scatter_probe`` times, in one process and interleaved (ratios, not
absolute times, are what the shared machine gives reliably), ``out = zeros((m, w)); np.add.at(out,
idx, g)`` for ``n`` indices drawn with repeats from ``m`` rows of width ``w`` (the adjoint of a
gather ``x[idx]``), written six ways: ``np.add.at`` on the rows; ``np.add.at`` on flat indices
``idx[:, None] * w + arange(w)`` (NumPy 2's 1-D fast path), whole and in chunks of 2^16
entries; ``np.bincount`` on the flat indices with weights; a stable sort then
``np.add.reduceat``; a sparse product ``csr(ones, idx).T @ g`` (SciPy); and PyTorch's
``index_add_`` as the peer's figure where PyTorch is installed. ``--quick`` times fewer sizes.
It writes benchmarks/SCATTER.md, and beside each row what the emitted rule
(:mod:`adcompiler.backends.scatters`) picks and its time over the best's.
"""

from __future__ import annotations

import argparse
import platform
import sys
import timeit
from pathlib import Path

import numpy as np

from adcompiler.backends import scatters

OUT = Path(__file__).with_name("SCATTER.md")
CHUNK = 1 << 16


def _add_at(idx, g, shape):
    out = np.zeros(shape)
    np.add.at(out, idx, g)
    return out


def _flat(idx, g, shape):
    out = np.zeros(shape)
    w = out.size // shape[0]
    np.add.at(out.reshape(-1), (idx[:, None] * w + np.arange(w)).reshape(-1), g.reshape(-1))
    return out


def _flat_chunked(idx, g, shape):
    out = np.zeros(shape)
    flat, w = out.reshape(-1), out.size // shape[0]
    cols, step = np.arange(w), max(1, CHUNK // w)
    for k in range(0, idx.size, step):
        np.add.at(flat, (idx[k:k + step, None] * w + cols).reshape(-1),
                  g[k:k + step].reshape(-1))
    return out


def _bincount(idx, g, shape):
    w = int(np.prod(shape[1:], dtype=np.int64))
    flat = (idx[:, None] * w + np.arange(w)).reshape(-1)
    return np.bincount(flat, weights=g.reshape(-1), minlength=shape[0] * w).reshape(shape)


def _reduceat(idx, g, shape):
    order = np.argsort(idx, kind="stable")
    s = idx[order]
    starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    out = np.zeros(shape)
    out[s[starts]] = np.add.reduceat(g[order], starts, axis=0)
    return out


def _sparse():
    try:
        import scipy.sparse
    except ImportError:
        return None

    def sparse(idx, g, shape):
        n = idx.size
        pick = scipy.sparse.csr_matrix((np.ones(n), idx, np.arange(n + 1)), shape=(n, shape[0]))
        return (pick.T @ g.reshape(n, -1)).reshape(shape)
    return sparse


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)

    def index_add(idx, g, shape):
        return torch.zeros(shape, dtype=torch.float64).index_add_(0, idx, g)
    return index_add


def _emitted(shape, n, has_scipy):
    """What the generated code runs at this size (the rule's choice, made when compiling)."""
    form = scatters.choose(n, shape, has_scipy)
    return _add_at if form is None else scatters.helper_function(form)


METHODS = {"np.add.at": _add_at, "flat add.at": _flat, "flat add.at, chunks": _flat_chunked,
           "bincount": _bincount, "sort + reduceat": _reduceat}


def _grid(quick):
    ns = (100, 10_000, 100_000) if quick else (30, 100, 1000, 10_000, 100_000)
    widths = (1, 32) if quick else (1, 4, 32, 128)
    rates = (0.1, 10) if quick else (0.01, 0.1, 1, 10, 100)   # n / m: how often a row repeats
    for n in ns:
        for w in widths:
            for rate in rates:
                m = max(1, int(round(n / rate)))
                if n * w <= 13_000_000 and m * w <= 20_000_000:
                    yield n, m, w, rate


def _time(f, *args, rounds, number):
    return min(timeit.repeat(lambda: f(*args), number=number, repeat=rounds)) / number


def _case(n, m, w, rate, methods, rounds, rng):
    idx = rng.integers(0, m, size=n)
    shape = (m, w) if w > 1 else (m,)
    g = rng.standard_normal((n, w) if w > 1 else n)
    ref = _add_at(idx, g, shape)
    args = (idx, g, shape)
    methods = {**methods, "emitted": _emitted(shape, n, "sparse product" in methods)}
    times = {name: [] for name in methods}
    number = max(1, int(3e4 // (n * w)))   # calls per repeat: about 30,000 values
    for name, f in methods.items():
        if name == "torch index_add_":
            import torch
            args_of = (torch.from_numpy(idx), torch.from_numpy(g), shape)
            assert np.allclose(f(*args_of).numpy(), ref)
        else:
            assert np.allclose(f(*args), ref, rtol=1e-12, atol=1e-12), name
    for _ in range(3):   # interleaved: each method once per round
        for name, f in methods.items():
            a = args_of if name == "torch index_add_" else args
            times[name].append(_time(f, *a, rounds=rounds, number=number))
    return {name: float(np.median(t)) for name, t in times.items()}


def _row(n, m, w, rate, t):
    peers = [k for k in t if k not in ("emitted", "torch index_add_")]
    best = min(peers, key=t.get)
    base = t["np.add.at"]
    cells = [f"{t[k] * 1e6:.1f} ({base / t[k]:.1f}x)" if k in t else "n/a" for k in COLUMNS]
    pick = scatters.choose(n, (m, w) if w > 1 else (m,), has_scipy=_sparse() is not None)
    return (f"| {n:,} | {m:,} | {w} | {rate:g} | " + " | ".join(cells)
            + f" | {best} | {pick or 'np.add.at'} | {base / t['emitted']:.1f}x"
            f" | {t['emitted'] / t[best]:.2f} |")


COLUMNS = list(METHODS) + ["sparse product", "torch index_add_"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes, fewer rounds")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    methods = dict(METHODS)
    for name, f in (("sparse product", _sparse()), ("torch index_add_", _torch())):
        if f is not None:
            methods[name] = f
    rng = np.random.default_rng(0)
    rows = []
    for n, m, w, rate in _grid(args.quick):
        t = _case(n, m, w, rate, methods, 3, rng)
        rows.append(_row(n, m, w, rate, t))
        print(rows[-1], flush=True)
    head = ("| n | m | w | n / m | " + " | ".join(COLUMNS)
            + " | fastest (NumPy/SciPy) | emitted | emitted's speed-up | emitted / fastest |")
    text = "\n".join([
        "# scatter-add probe", "",
        f"`python -m benchmarks.scatter_probe{' --quick' if args.quick else ''}` on "
        f"{platform.machine()}; numpy {np.__version__}, {_versions()}; Python "
        f"{sys.version.split()[0]}; one thread for PyTorch.", "",
        "`zeros((m, w))` with `np.add.at(out, idx, g)` for `n` random indices in `range(m)`: "
        "microseconds per call (median of 3 interleaved rounds, best of 3 repeats each) and "
        "the speed-up over `np.add.at`; `emitted` is what generated code runs at that size.", "",
        head, "|" + " --- |" * (head.count("|") - 1), *rows, "", *rule_text(), ""])
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


def rule_text() -> list:
    """What the table led to: the rule the emitter applies (from its constants)."""
    return [
        "The rule (`adcompiler/backends/scatters.py`, docs/performance.md): `np.add.at` stays "
        f"for 1-D targets (NumPy's own fast path: no replacement beat it), rows under "
        f"{scatters.MIN_WIDTH} wide, fewer than {scatters.MIN_ENTRIES:,} values (the helper's "
        f"few calls cost what they save) and targets of over {scatters.TARGET_RATIO} rows per "
        "index entry (the helper makes and adds the whole target); otherwise the sparse "
        f"product from {scatters.SPARSE_ENTRIES:,} values where SciPy is installed (its "
        "matrix costs about 70 us), flat indices in chunks below that and wherever SciPy is "
        "missing. `np.bincount` and sort + `np.add.reduceat` are never emitted: the first is "
        "at best level with flat indices, the second slower (the sort). On zeros both emitted "
        "forms add each row's values in `np.add.at`'s order (the same bits); `bincount` would "
        "agree only to rounding (about 1e-16 relative)."]


def _versions():
    out = []
    for mod in ("scipy", "torch"):
        try:
            out.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            out.append(f"no {mod}")
    return ", ".join(out)


if __name__ == "__main__":
    sys.exit(main())
