"""What the compiler and the tape share about ``np.linalg``'s solvers: ``slogdet``'s result and
the shapes for which ``np.linalg.solve`` is ambiguous between NumPy 1 and NumPy 2.

Invariants: :class:`SlogdetResult` unpacks and indexes as NumPy's named tuple (``sign,
logdet = np.linalg.slogdet(a)``, ``[1]``, ``.logabsdet``); :func:`ambiguous` depends on the
shapes only.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class SlogdetResult(NamedTuple):
    """``np.linalg.slogdet``'s result: the sign of the determinant and the log of its size."""

    sign: Any
    logabsdet: Any


def ambiguous(a_shape, b_shape) -> bool:
    """A stack of matrices and a ``b`` of one dimension fewer whose last axis is ``n``: NumPy 1
    solves for ``b``'s rows as vectors, NumPy 2 for ``b`` as one matrix (where that last axis
    is not ``n``, NumPy 1 raises, and NumPy 2's reading is the only one)."""
    return (len(a_shape) > 2 and len(b_shape) == len(a_shape) - 1
            and b_shape[-1] == a_shape[-1])
