"""A matrix's diagonal as flat positions: the entries ``A[r, r + offset]`` of a rows x cols
matrix, numbered as in ``A.reshape(-1)``, for the gathers of ``np.diagonal``/``np.trace`` and
the stores of ``np.diag`` (the compiler's and the tape's).

Invariants: the positions are distinct and in order of ``r`` (so a gather at them is a
``("u", 0)`` index, whose adjoint adds without ``np.add.at``), int64, read-only, and cached by
``(rows, cols, offset)``: one array object per diagonal, which the compiler finds again among
its graph constants.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=None)
def diagonal_positions(rows, cols, offset):
    """The flat positions of ``A[r, r + offset]`` in a rows x cols matrix (read-only)."""
    r = np.arange(max(0, -offset), min(rows, cols - offset), dtype=np.int64)
    out = r * cols + r + offset
    out.flags.writeable = False
    return out
