"""One large ufunc call cut into parts that run at once: ``threaded(np.tanh, x, out=_buf0)``.

NumPy lets go of the GIL inside a ufunc's loop, so the parts of one call can run on several
cores; a million-element ``np.tanh`` takes 0.63x its time on two (docs/performance.md). Generated
code calls this only on the numexpr path (the same ``NUMEXPR_NUM_THREADS``/``OMP_NUM_THREADS``
decide how many parts), for ufuncs whose array arguments all have the result's shape.

Invariants: the result is exactly ``ufunc(*args, out=out)`` (elementwise, so the parts are
independent); the caller's ``np.errstate`` holds in every part; the pool is rebuilt in a forked
child (its threads do not survive a fork).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

_lock = threading.Lock()
_pool = None


def _workers(n):
    global _pool
    with _lock:
        if _pool is None or _pool._max_workers < n:
            _pool = ThreadPoolExecutor(n, thread_name_prefix="adcompiler")
        return _pool


def _forget_pool():
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool)


def parts() -> int:
    """How many parts a call is cut into: numexpr's thread count (its environment variables)."""
    import numexpr
    return numexpr.get_num_threads()


def threaded(ufunc, *args, out):
    """``ufunc(*args, out=out)``, the leading axis cut into :func:`parts` pieces run at once."""
    k = min(parts(), out.shape[0]) if out.ndim else 1
    if k < 2:
        return ufunc(*args, out=out)
    cuts = [out.shape[0] * i // k for i in range(k + 1)]
    errors = np.geterr()

    def part(lo, hi):
        with np.errstate(**errors):
            ufunc(*(a[lo:hi] if isinstance(a, np.ndarray) and a.ndim else a for a in args),
                  out=out[lo:hi])

    futures = [_workers(k - 1).submit(part, lo, hi) for lo, hi in zip(cuts[1:-1], cuts[2:])]
    part(cuts[0], cuts[1])
    for f in futures:
        f.result()
    return out
