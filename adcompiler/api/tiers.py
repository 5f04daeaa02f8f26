"""Tiered compilation: a NumPy gradient that moves to numba loops once they are compiled.

The default backend answers the first call with NumPy code (tens of milliseconds to compile).
Where numba is installed and the gradient is one straight elementwise loop over float64 arrays
(:mod:`adcompiler.backends.loop_plan`: the ``tanh``/``exp`` chains, Rosenbrock's shifted
slices), the same gradient is compiled for ``backend="numba"`` on a background thread, and the
calls after it is ready run the loop: 4-10x faster per call at every size from 10^3 elements
on (measured: docs/performance.md, Tiered compilation), while numba's own first compile (0.3-1.5 s) costs the
caller nothing but the thread's CPU.

Which gradients tier up, and why only those (docs/performance.md says the same):

- ``tiered=None`` (the default): grad and value_and_grad on the NumPy backend, every argument a
  NumPy array, at least :data:`ELEMENTS` array elements in the call, numba installed, and the
  plan a whole elementwise loop. Loop programs and loop nests (step plans, gathers, broadcast
  reductions) stay NumPy code: there numba gains 0-50% while numba's 120-140 MB of resident
  memory (its import, LLVM, the threading layer) would take the small ones (the heat stencil)
  past PyTorch's peak.
- ``tiered=True``: any plan numba takes, at any size; ``tiered=False`` (or the environment's
  ``ADCOMPILER_TIERED=0``): NumPy code always.

Never a different gradient, and no memory kept for the check: once the loop is compiled
(``.tier == "checking"``), the next call runs the NumPy code, frees its pooled work arrays, runs
the loop on the same arguments and compares (every output's dtype and shape, values to 1e-9 of
its largest magnitude, in chunks; numba's exp/tanh differ from libm's by ~1e-11 relative). That
call answers with the NumPy code's result; the calls after it run the loop where they agreed,
else the NumPy code stays, with a RuntimeWarning naming the difference. The worker compiles
the loop by calling it on zeros (fresh pages that take no memory while only read), so nothing
of the user's call (no copy of an argument or result) is kept while it compiles.

One worker thread compiles, one gradient at a time, holding :data:`COMPILING` (which the
foreground pipeline holds too: the compiler is never run by two threads at once). It is not a
daemon: a program that exits while a kernel compiles waits for the current step (at most numba's
compile), never killing numba mid-write of its disk cache.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import sys
import threading
import warnings
from functools import lru_cache

import numpy as np

# the default tiers up calls with at least this many array elements: below, numba's 120-140 MB
# of resident memory would be most of the process's peak (10^5 elements: 145 MB, PyTorch's 30)
ELEMENTS = 10 ** 6
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
    """One compiled body's tier-up. ``state``: ``"compiling"`` (the loop compiles on the
    worker), ``"checking"`` (compiled: the next call runs both and compares), ``"numba"`` (the
    loop runs), or ``"numpy"`` with ``reason`` saying why the NumPy code stays."""

    def __init__(self, arrays):
        self.state, self.reason, self.loop = "compiling", "", None
        self.numpy_code = None          # the function the loop replaces, once it is compiled
        self.arrays = arrays            # (shape, dtype, order) of each argument, for the compile
        self.compiled = threading.Event()   # the worker is done: checking, or decided

    def stay(self, reason: str):
        self.state, self.reason = "numpy", reason
        self.compiled.set()


def start(gradient, compiled, avals, values: tuple):
    """Queue the numba compile of ``compiled``'s gradient (for ``avals``) for arguments like
    ``values``: their shapes, dtypes and layouts only, nothing of the call is kept."""
    tier = compiled.tier = Tier(tuple((v.shape, v.dtype, _order(v)) for v in values))
    _ensure_worker()
    _jobs.put((gradient, compiled, avals, tier))
    return tier


def _order(array) -> str:
    return "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"


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


def _tier_up(gradient, compiled, avals, tier):
    from ..pipeline import compile_gradient   # (the pipeline imports api modules' users)
    with COMPILING:
        loop = compile_gradient(gradient.primal, avals, gradient.wrt, gradient.mode,
                                backend="numba", checkpoint=gradient.checkpoint)
    from ..backends import loop_plan, numba_plan
    plan = numba_plan.plan(loop.graph)   # (numba's fallback is NumPy code, labelled "numba")
    if not plan:
        return tier.stay("numba takes no loop here: " + _why_not(loop))
    if gradient.tiered is not True and not isinstance(plan, loop_plan.Plan):
        return tier.stay("the numba plan is a loop program or loop nest, which tiers up only "
                         "with tiered=True")
    if _closing.is_set():
        return tier.stay("the interpreter exited before the numba loop was compiled")
    # numba compiles at the first call: here, on zeros (calloc'd pages read as the shared zero
    # page, so they take no memory); the result is dropped at once
    loop.function(*(np.zeros(shape, dtype, order) for shape, dtype, order in tier.arrays))
    tier.loop, tier.numpy_code, tier.state = loop, compiled.function, "checking"
    gradient._tier_up(compiled, _checking(gradient, compiled, tier))
    tier.compiled.set()


def _checking(gradient, compiled, tier):
    """The function calls of ``compiled`` run while ``tier`` is checked: the first runs the
    NumPy code, frees its buffers, runs the loop on the same arguments and compares; the loop
    then takes the calls, or (on any difference) the NumPy code keeps them, with a warning.
    That call's answer is the NumPy code's either way. Calls from other threads meanwhile run
    the NumPy code."""
    busy, numpy_code = threading.Lock(), tier.numpy_code

    def first_call(*args):
        if not busy.acquire(blocking=False):
            return numpy_code(*args)
        try:
            if tier.state != "checking":   # decided by a call that just finished
                return (tier.loop.function if tier.state == "numba" else numpy_code)(*args)
            expected = numpy_code(*args)
            _release_buffers(numpy_code)   # the loop's result in their place
            try:
                difference = _difference(tier.loop.function(*args), expected)
            except Exception as exc:  # noqa: BLE001 - the loop failed: the NumPy code stays
                difference = f"an error: {type(exc).__name__}: {exc}"
            if difference:
                warnings.warn(f"adcompiler: the numba loop of {gradient.primal.__qualname__} "
                              f"gave {difference}; the NumPy code stays (please report this)",
                              RuntimeWarning, stacklevel=_user_level())
                tier.stay("the numba loop's first result differed: " + difference)
                gradient._tier_up(compiled, numpy_code)
            else:
                tier.state = "numba"
                gradient._tier_up(compiled, tier.loop.function)
            return expected
        finally:
            busy.release()
    return first_call


def _user_level() -> int:
    """``stacklevel`` for a warning issued by this module's caller's caller...: the first frame
    outside adcompiler (its files and its fast paths' ``<adcompiler ...>`` code), the user's
    call of the gradient."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(_OURS):
        frame, level = frame.f_back, level + 1
    return level


_OURS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep, "<adcompiler")


def _release_buffers(function):
    """Empty the planned code's pools: its work arrays (``_grad_f_buffers``,
    backends/planner.py) and the arrays it returned, kept for reuse (``_grad_f_returned``,
    backends/recycled.py). A later call of it allocates them again."""
    for name, value in function.__globals__.items():
        if name.endswith(("_buffers", "_returned")) and isinstance(value, list):
            value.clear()


def _why_not(loop) -> str:
    """The reason the NumPy code numba's backend fell back to carries as its docstring
    (backends/numba_reasons.py)."""
    return " ".join((loop.function.__doc__ or "").split()) or "no plan"


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
    got, expected = np.ravel(got), np.ravel(expected)
    scale = max((_largest(expected[i:i + CHUNK]) for i in range(0, expected.size, CHUNK)),
                default=0.0)
    for i in range(0, expected.size, CHUNK):   # in chunks: temporaries of CHUNK values
        problem = _chunk_difference(got[i:i + CHUNK], expected[i:i + CHUNK], scale)
        if problem:
            return problem
    return ""


CHUNK = 1 << 16   # values compared at once (not a size threshold: any size is compared whole)


def _largest(values) -> float:
    finite = np.isfinite(values)
    return float(np.max(np.abs(values[finite]), initial=0.0))


def _chunk_difference(got, expected, scale) -> str:
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    finite = np.isfinite(expected)
    if not np.array_equal(np.isfinite(got), finite):
        return "non-finite values where the NumPy code's are finite (or the reverse)"
    if not np.array_equal(got[~finite], expected[~finite], equal_nan=True):
        return "other infinities"
    error = float(np.max(np.abs(got[finite] - expected[finite]), initial=0.0))
    if error > TOLERANCE * scale + 1e-300:
        return f"values {error:.3g} apart (of at most {scale:.3g})"
    return ""


def wait(tier, timeout=None) -> bool:
    """Block until ``tier``'s compile is over (``True``: checking or decided) or ``timeout``
    seconds pass (``False``)."""
    return tier is None or tier.compiled.wait(timeout)
