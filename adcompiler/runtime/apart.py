"""Output arrays that do not start at the same offset within a 4 KiB page as the arrays a loop
reads (for the numba backend's kernels).

x86 cores first compare only the low 12 bits of a load's address with those of the stores still
in flight (4K aliasing). A loop that stores ``dx[j]`` and, a few iterations ahead, loads
``x[j + a]`` makes loads wait on stores they only seem to depend on when ``dx`` and ``x`` start
at the same offset in their pages, and NumPy's large arrays (mmap'd, page-aligned plus the same
header) usually do. Measured (the elementwise gradient's numba kernel at 10^7, one thread, CPU
time): 25.8 ms with ``dx`` at ``x``'s page offset, 21.4 ms at 64 bytes after it, 14.4 ms at 512
and 15.3 ms at 2,048 bytes (a copy of the same arrays: 12.6 ms). At 10^6 NumPy's ``np.empty``
came from the heap at another offset, and no offset changed the time.

Invariant: the result is a C-contiguous float64 array of the shape asked for, never sharing
memory with an input; where no offset fits every input, it starts where its buffer does.
"""

from __future__ import annotations

import math

import numpy as np

PAGE = 4096                   # bytes: the address bits the first comparison uses
_BAND = (1024, 3072)          # bytes: (out - input) mod PAGE wanted here, away from 0 both ways
_STEP = 256                   # bytes between the starts tried
_SLACK = PAGE // 8            # elements: enough to reach every start in a page


def empty_apart(shape: tuple, *inputs) -> np.ndarray:
    """``np.empty(shape)`` (float64) starting 1-3 KiB after each input's start, mod 4 KiB, where
    one start fits them all: a view of an array 4 KiB longer, allocated once (two allocations a
    call, one of them dropped, kept glibc from reusing the memory: Rosenbrock at 10^6 paid page
    faults on every call, 1.3 instead of 0.57 ms)."""
    n = math.prod(shape)
    buffer = np.empty(n + _SLACK, dtype=np.float64)
    starts = [_address(a) % PAGE for a in inputs if isinstance(a, np.ndarray)]
    base = _address(buffer)
    for skip in range(0, PAGE, _STEP):
        if _apart(base + skip, starts):
            break
    else:
        skip = 0
    k = skip // 8
    return buffer[k:k + n].reshape(shape)


def _address(a) -> int:
    return a.__array_interface__["data"][0]


def _apart(address: int, starts: list) -> bool:
    lo, hi = _BAND
    return all(lo <= (address - s) % PAGE <= hi for s in starts)
