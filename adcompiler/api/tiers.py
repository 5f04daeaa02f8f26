"""Tiered compilation: a NumPy gradient that moves to numba loops once they are compiled.

The default backend answers the first call with NumPy code (tens of milliseconds to compile).
Where numba is installed and the gradient is one straight elementwise loop over float64 arrays
(:mod:`adcompiler.backends.loop_plan`: the ``tanh``/``exp`` chains, Rosenbrock's shifted
slices), the same gradient is compiled for ``backend="numba"`` on a background thread, and the
calls after it is ready run the loop: 4-10x faster per call at every size from 10^3 elements
on (measured: ``benchmarks/TIERS.md``), while numba's own first compile (0.3-1.5 s) costs the
caller nothing but the thread's CPU.

Which gradients tier up, and why only those (docs/performance.md says the same):

- ``tiered=None`` (the default): grad and value_and_grad on the NumPy backend, every argument a
  NumPy array, at least :data:`ELEMENTS` array elements in the call, numba installed, and the
  plan a whole elementwise loop. Loop programs and loop nests (step plans, gathers, broadcast
  reductions) stay NumPy code: there numba gains 0-50% while its compiler's ~50 MB of resident
  memory would take the small ones (the heat stencil) past PyTorch's peak.
- ``tiered=True``: any plan numba takes, at any size; ``tiered=False`` (or the environment's
  ``ADCOMPILER_TIERED=0``): NumPy code always.

Never a different gradient: the loop's first result, on copies of the arguments of the call
that started it, must equal that call's NumPy result (every output's dtype and shape, values to
1e-9 of its largest magnitude; numba's exp/tanh differ from libm's by ~1e-11 relative) before
any call runs it. Otherwise the NumPy code stays, with a RuntimeWarning naming the difference.

One worker thread compiles, one gradient at a time, holding :data:`COMPILING` (which the
foreground pipeline holds too: the compiler is never run by two threads at once). It is not a
daemon: a program that exits while a kernel compiles waits for the current step (at most numba's
compile), never killing numba mid-write of its disk cache.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import threading
import warnings
from functools import lru_cache

import numpy as np

ELEMENTS = 2 ** 16   # the default tiers up calls with at least this many array elements
TOLERANCE = 1e-9     # the loop's first result, against the NumPy code's, of the largest value
COMPILING = threading.RLock()   # the pipeline: the foreground's compiles and the worker's

_jobs: queue.Queue = queue.Queue()
_worker: threading.Thread | None = None
_start_lock = threading.Lock()
_closing = threading.Event()


@lru_cache(maxsize=1)
def numba_installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def enabled(tiered) -> bool:
    """Whether this gradient's setting (``tiered=``) and the environment allow tiering."""
    if tiered is False or os.environ.get("ADCOMPILER_TIERED", "1") == "0":
        return False
    return numba_installed()


def wanted(gradient, values: tuple) -> bool:
    """Whether a call with these argument values starts a tier-up (before any compiling)."""
    if not enabled(gradient.tiered) or gradient.backend != "numpy" or \
            gradient.mode not in ("grad", "value_and_grad"):
        return False
    if not values or any(type(v) is not np.ndarray for v in values):
        return False
    return gradient.tiered is True or sum(v.size for v in values) >= ELEMENTS


class Tier:
    """One compiled body's tier-up: ``state`` is ``"compiling"``, ``"numba"`` (the loop runs),
    or ``"numpy"`` with ``reason`` saying why it stays."""

    def __init__(self):
        self.state, self.reason, self.loop = "compiling", "", None
        self.done = threading.Event()

    def stay(self, reason: str):
        self.state, self.reason = "numpy", reason
        self.done.set()


def start(gradient, compiled, avals, values: tuple, result):
    """Queue the numba compile of ``compiled``'s gradient; ``values``/``result``: the call that
    started it (copied here, so later in-place updates of the caller's arrays do not matter)."""
    tier = compiled.tier = Tier()
    copies = tuple(v.copy() for v in values)
    expected = _copy(result)
    _ensure_worker()
    _jobs.put((gradient, compiled, avals, copies, expected, tier))
    return tier


def _copy(result):
    if isinstance(result, tuple):
        return tuple(_copy(r) for r in result)
    return result.copy() if isinstance(result, np.ndarray) else result


def _ensure_worker():
    global _worker
    with _start_lock:
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_work, name="adcompiler-tiers")
            _worker.start()
            _at_exit(_closing.set)


def _at_exit(callback):
    """Run ``callback`` when the interpreter starts to exit, before non-daemon threads are
    joined (``threading._register_atexit``, which concurrent.futures uses), so the worker
    stops after its current step instead of compiling what is still queued."""
    register = getattr(threading, "_register_atexit", None)
    try:
        register(callback)
    except (TypeError, RuntimeError):   # no such hook, or already shutting down
        callback()


def _work():
    while True:
        try:
            job = _jobs.get(timeout=1.0)
        except queue.Empty:
            if _closing.is_set():
                return
            continue
        if _closing.is_set():
            job[-1].stay("the interpreter exited before the numba loop was compiled")
            continue
        try:
            _tier_up(*job)
        except Exception as exc:  # noqa: BLE001 - any failure: the NumPy code stays, said why
            job[-1].stay(f"the numba compile failed: {type(exc).__name__}: {exc}")
        finally:
            _jobs.task_done()


def _tier_up(gradient, compiled, avals, copies, expected, tier):
    from ..pipeline import compile_gradient   # (the pipeline imports api modules' users)
    with COMPILING:
        loop = compile_gradient(gradient.primal, avals, gradient.wrt, gradient.mode,
                                backend="numba", checkpoint=gradient.checkpoint)
    if loop.backend != "numba":
        return tier.stay("numba takes no loop here: " + _why_not(loop))
    if not _kind_allowed(gradient, loop):
        return tier.stay("the numba plan is a loop program or loop nest, which tiers up only "
                         "with tiered=True")
    if _closing.is_set():
        return tier.stay("the interpreter exited before the numba loop was compiled")
    got = loop.function(*copies)   # numba compiles here, on this thread
    difference = _difference(got, expected)
    if difference:
        warnings.warn(f"adcompiler: the numba loop of {gradient.primal.__qualname__} gave "
                      f"{difference}; the NumPy code stays (please report this)",
                      RuntimeWarning, stacklevel=1)
        return tier.stay("the numba loop's first result differed: " + difference)
    tier.loop, tier.state = loop, "numba"
    gradient._tier_up(compiled, loop.function)
    tier.done.set()


def _kind_allowed(gradient, loop) -> bool:
    """The default takes whole elementwise loops only; ``tiered=True`` any plan."""
    if gradient.tiered is True:
        return True
    from ..backends import loop_plan, numba_plan
    return isinstance(numba_plan.plan(loop.graph), loop_plan.Plan)


def _why_not(loop) -> str:
    doc = loop.source.split('"""')[1] if '"""' in loop.source else ""
    return " ".join(doc.split()) or "no plan"


def _difference(got, expected) -> str:
    """'' where ``got`` matches ``expected`` (structure, dtypes, shapes, values), else what
    differs."""
    got_t, want_t = isinstance(got, tuple), isinstance(expected, tuple)
    if got_t != want_t or (got_t and len(got) != len(expected)):
        return "a result of another structure"
    if got_t:
        return next((d for d in map(_difference, got, expected) if d), "")
    if np.shape(got) != np.shape(expected) or np.result_type(got) != np.result_type(expected):
        return (f"{np.result_type(got)}{list(np.shape(got))} where the NumPy code gives "
                f"{np.result_type(expected)}{list(np.shape(expected))}")
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    if not np.array_equal(np.isfinite(got), np.isfinite(expected)):
        return "non-finite values where the NumPy code's are finite (or the reverse)"
    finite = np.isfinite(expected)
    if not np.array_equal(got[~finite], expected[~finite], equal_nan=True):
        return "other infinities"
    scale = float(np.max(np.abs(expected[finite]), initial=0.0))
    error = float(np.max(np.abs(got[finite] - expected[finite]), initial=0.0))
    if error > TOLERANCE * scale + 1e-300:
        return f"values {error:.3g} apart (of at most {scale:.3g})"
    return ""


def wait(tier, timeout=None) -> bool:
    """Block until ``tier`` is decided (``True``) or ``timeout`` seconds pass (``False``)."""
    return tier is None or tier.done.wait(timeout)
