"""What poisoned code (:func:`adcompiler.backends.check_modes.poisoned`) fills a buffer with
when it takes, releases or gives back the buffer: a value no correct plan ever reads.

Floating and complex buffers get NaN; integer and boolean ones, which have no NaN, get a
pattern that changes every call (a count that grows, a truth value that flips), so a stale
read cannot pass for the value it replaced twice in a row. Invariant: only buffers the plan
has released (or not yet written) are filled.
"""

from __future__ import annotations

import itertools

import numpy as np

_calls = itertools.count(1)


def poison(*buffers):
    """Fill each buffer with NaN, or with this call's pattern where its dtype has no NaN."""
    k = next(_calls)
    for b in buffers:
        if b.dtype.kind in "fc":
            b.fill(np.nan)
        elif b.dtype.kind == "b":
            b.fill(k % 2 == 0)
        else:
            b.fill(np.iinfo(b.dtype).max - k % 1000)
