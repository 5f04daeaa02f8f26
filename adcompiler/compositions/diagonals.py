"""A matrix's diagonal as flat positions: the entries ``A[r, r + offset]`` of a rows x cols
matrix, numbered as in ``A.reshape(-1)``, for the gathers of ``np.diagonal``/``np.trace`` and
the stores of ``np.diag`` (the compiler's and the tape's), and the gather of the diagonals of
an n-D array along two of its axes (:func:`gather_diagonals`).

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


def gather_diagonals(ops, a, offset, axes):
    """NumPy's ``np.diagonal(a, offset, *axes)`` of an n-D ``a`` (``axes`` two distinct axes in
    ``range(ndim)``): those axes moved last (a transpose) and flattened into one, then a gather
    at :func:`diagonal_positions` along it; the diagonal is the result's last axis, the other
    axes in order before it. Needs ``ops.const``."""
    shape, (i, j) = tuple(ops.shape(a)), axes
    rest = [k for k in range(len(shape)) if k not in axes]
    moved = ops.transpose(a, axes=(*rest, i, j))
    rows, cols = shape[i], shape[j]
    flat = ops.reshape(moved, shape=(*(shape[k] for k in rest), rows * cols))
    positions = ops.const(diagonal_positions(rows, cols, offset), "diagonal")
    return ops.getitem(flat, [positions], (("s", None, None, None),) * len(rest) + (("u", 0),))
