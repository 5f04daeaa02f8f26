"""Why a NumPy function that adcompiler does not compile is refused, in words that fit it.

"has no derivative rule" is the reason only for a function whose result carries a gradient. A
function whose result's shape depends on the values (``np.unique``, ``np.nonzero``) cannot be
compiled to code of fixed shapes at all; one that returns integers or booleans
(``np.bincount``, ``np.isin``) needs no derivative, and is simply not compiled yet. Each entry
gives the reason and what to write instead; :func:`reason` answers None for the others, which
keep the generic message.
"""

from __future__ import annotations

import numpy as np

_MASK_HINT = ("compute it outside the function and pass the result in, or keep the shape "
              "fixed with a mask: np.where(mask, x, 0.0), np.sum(np.where(mask, x, 0.0))")

# result shapes that depend on the values
_DATA_SHAPED = {
    "unique": _MASK_HINT, "unique_values": _MASK_HINT, "unique_counts": _MASK_HINT,
    "unique_inverse": _MASK_HINT, "unique_all": _MASK_HINT, "nonzero": _MASK_HINT,
    "argwhere": _MASK_HINT, "flatnonzero": _MASK_HINT, "extract": _MASK_HINT,
    "compress": "index with a mask known while compiling, or use np.where(mask, x, 0.0)",
    "trim_zeros": _MASK_HINT, "union1d": _MASK_HINT, "intersect1d": _MASK_HINT,
    "setdiff1d": _MASK_HINT, "setxor1d": _MASK_HINT,
    "bincount": "compute the counts outside the function, or compare with each bin: "
                "np.sum(idx[:, None] == np.arange(n), axis=0) (minlength= does not fix the "
                "length: a larger value lengthens it)",
}
# integer or boolean results: no derivative needed, not compiled yet
_INTEGER_RESULTS = {
    "array_equiv": "compare the values: np.all(a == b)",
    "signbit": "write x < 0 (or np.copysign(1.0, x) < 0 where -0.0 matters)",
    "lexsort": "sort by one key with np.argsort, or compute the order outside the function",
    "unravel_index": "compute the positions with // and %: i // n, i % n",
    "ravel_multi_index": "compute the flat position: i * n + j",
    "histogram": "compute the counts outside the function, or with np.digitize and sums",
    "packbits": "compute it outside the function", "unpackbits": "compute it outside the function",
    "nanargmax": "np.argmax(np.where(np.isnan(x), -np.inf, x))",
    "nanargmin": "np.argmin(np.where(np.isnan(x), np.inf, x))",
}


def reason(func):
    """``(message after the function's name, hint)`` for a refused NumPy function, or None."""
    name = getattr(func, "__name__", None)
    if name is None or getattr(np, name, None) is not func:
        return None
    if name in _DATA_SHAPED:
        return ("is not supported in a compiled function: its result's shape depends on the "
                "values, and compiled code has shapes fixed while compiling", _DATA_SHAPED[name])
    if name in _INTEGER_RESULTS:
        return ("is not supported in a compiled function yet: it returns integers or "
                "booleans, which need no derivative, but adcompiler does not compile it",
                _INTEGER_RESULTS[name])
    return None
