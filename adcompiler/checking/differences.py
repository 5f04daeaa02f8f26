"""Finite differences of a scalar function, shared by ``ad.check_grad`` and ``adcompiler check``.

One stencil: the five-point central difference ``(f(-2h) - 8 f(-h) + 8 f(h) - f(2h)) / 12h``,
truncation error O(h^4), in float64. The step is relative to the entry (``eps * max(|x|, 1)``),
so large entries are not differenced below their rounding and small ones not above their scale.
"""

from __future__ import annotations

import numpy as np


def difference(scalar, args: list, i: int, k, eps: float) -> float:
    """d scalar / d args[i] (at flat entry ``k`` of an array; ``k=None`` for a float)."""
    x = args[i] if k is None else args[i].reshape(-1)[k]
    h = eps * max(abs(float(x)), 1.0)

    def at(step):
        xs = list(args)
        if k is None:
            xs[i] = args[i] + step
        else:
            xs[i] = args[i].copy()
            xs[i].reshape(-1)[k] += step
        return scalar(*xs)
    return (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h)


def gradient(scalar, args: list, i: int, eps: float, entries=None):
    """The numerical gradient of ``scalar`` in argument ``i`` (a float64 array shaped like it,
    a float for a float); ``entries``: only these flat entries (a sample of a large input)."""
    x = args[i]
    if isinstance(x, float):
        return difference(scalar, args, i, None, eps)
    entries = range(np.size(x)) if entries is None else entries
    values = np.array([difference(scalar, args, i, k, eps) for k in entries], dtype=np.float64)
    return values if len(values) != np.size(x) else values.reshape(np.shape(x))


def as_float64(value):
    """Floating arrays in float64 (differences in float32 drown in rounding); others as they are."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    return value
