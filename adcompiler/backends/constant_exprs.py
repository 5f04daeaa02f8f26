"""Constant arrays spelled as the NumPy call that makes them, for bodies that serve every size.

A function's ``np.eye(n)``, or the flat positions ``np.diag`` reads (``arange(0, n * n, n +
1)``), is computed while compiling and read by the generated code as a module-level constant
(:mod:`.constants`). Ahead of time (:func:`adcompiler.ir.sizing.is_symbolic`) one body serves
every size, and such a constant changes with the sizes; so where :func:`spelled` recognises it
(an identity matrix, an evenly stepped integer range, an array of one value), the body makes it
at its top instead (``const = np.eye(300)``), a line whose numbers the merge of several sizes'
code reads (:mod:`adcompiler.aot.antiunify`). Invariant: the call returns an array equal to the
constant, element for element, of the same dtype and shape.
"""

from __future__ import annotations

import numpy as np

def spelled(value, xp_name: str = "np"):
    """The call making ``value`` (``"np.eye(300)"``), or None."""
    if not isinstance(value, np.ndarray) or value.size == 0 or value.dtype.kind not in "biuf":
        return None
    for recognise in (_eye, _range, _full):
        text = recognise(value, xp_name)
        if text is not None:
            return text
    return None


def _dtype(value, default) -> str:
    return "" if value.dtype == np.dtype(default) else f", dtype={value.dtype.name!r}"


def _eye(a, xp):
    if a.ndim == 2 and a.shape[0] == a.shape[1] and np.array_equal(a, np.eye(len(a))):
        return f"{xp}.eye({len(a)}{_dtype(a, np.float64)})"
    return None


def _range(a, xp):
    if a.ndim != 1 or a.dtype.kind not in "iu":
        return None
    step = int(a[1]) - int(a[0])
    if step == 0 or not np.array_equal(np.diff(a), np.full(len(a) - 1, step)):
        return None
    start, stop = int(a[0]), int(a[-1]) + (1 if step > 0 else -1)   # n * n, not n * n + n
    text = f"{xp}.arange({start}, {stop}" + (f", {step}" if step != 1 else "")
    return text + _dtype(a, np.int64) + ")"


def _full(a, xp):
    first = a.flat[0].item()
    if not np.all(a == first) or (isinstance(first, float) and not np.isfinite(first)):
        return None
    shape = repr(a.shape)
    return f"{xp}.full({shape}, {first!r}{_dtype(a, np.float64 if a.dtype.kind == 'f' else a.dtype)})"
