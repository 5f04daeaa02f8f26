"""One-dimensional signals: ``np.polyval`` (Horner's loop), ``np.convolve`` and ``np.interp``,
spelled in ufuncs, gathers at positions made here and a matrix-vector product.

Invariants: NumPy's values, dtypes (``interp`` computes in float64) and errors, with NumPy's
words; ``convolve``'s lags are a constant gather of the zero-padded ``a`` (``ops.constant``),
so its gradient is the gather's and the product's; ``interp`` takes the segment of each ``x``
from comparisons with ``xp`` (assumed increasing, as NumPy assumes), so its gradient flows to
``x``, ``xp`` and ``fp`` through the line's ufuncs.
"""

from __future__ import annotations

import numpy as np


# ---- np.polyval -----------------------------------------------------------------------------
def polyval(ops, p, x):
    """NumPy's Horner loop: ``y = zeros_like(x)``, then ``y = y * x + p[k]`` for each
    coefficient, highest power first."""
    if len(ops.shape(p)) == 0:
        raise ValueError("np.polyval needs the coefficients `p` as a 1-D array or a list")
    y = ops.zeros_like(x)
    for k in range(ops.shape(p)[0]):
        y = ops.add(ops.multiply(y, x), ops.getitem(p, (), (("i", k),)))
    return y


# ---- np.convolve ---------------------------------------------------------------------------
CONVOLVE_MODES = ("full", "same", "valid")


def convolve(ops, a, v, mode="full"):
    """NumPy's 1-D ``convolve``: ``a`` with ``m - 1`` zeros on both sides, gathered at the
    constant ``(k - i + m - 1)`` positions of each output ``k`` and lag ``i``, times ``v``
    (a matrix-vector product), for the ``k`` the mode keeps."""
    if mode not in CONVOLVE_MODES:
        raise ValueError(f"mode must be one of {list(CONVOLVE_MODES)}, not {mode!r}")
    a, v = (x if ops.shape(x) else ops.reshape(x, shape=(1,)) for x in (a, v))
    if len(ops.shape(a)) != 1 or len(ops.shape(v)) != 1:
        raise ValueError("object too deep for desired array")
    if not ops.size(a) or not ops.size(v):
        raise ValueError(f"{'a' if not ops.size(a) else 'v'} cannot be empty")
    if ops.size(v) > ops.size(a):
        a, v = v, a
    n, m = ops.size(a), ops.size(v)
    zeros = ops.constant(np.zeros(m - 1, np.dtype(ops.dtype(a))), "zeros")
    padded = ops.concatenate([zeros, a, zeros], axis=0) if m > 1 else a
    first, stop = {"full": (0, n + m - 1), "same": ((m - 1) // 2, (m - 1) // 2 + n),
                   "valid": (m - 1, n)}[mode]
    positions = (np.arange(first, stop)[:, None] - np.arange(m)[None, :] + m - 1).astype(np.intp)
    taken = ops.getitem(padded, (ops.constant(positions, "lags"),), (("a", 0),))
    return ops.dot(taken, v)


# ---- np.interp ------------------------------------------------------------------------------
def _float64(ops, x):
    return x if np.dtype(ops.dtype(x)) == np.float64 else ops.astype(x, np.dtype(np.float64))


def _at_index(ops, x, k):
    return ops.getitem(x, (), (("i", k),))


def interp(ops, x, xp, fp, left=None, right=None):
    """NumPy's ``interp`` in float64: the segment ``j`` of each ``x`` (how many ``xp`` are <= it,
    less 1, clipped to the segments), then ``slope * (x - xp[j]) + fp[j]``; ``left``/``right``
    (``fp[0]``/``fp[-1]`` by default) outside ``xp``, ``fp[-1]`` at ``xp[-1]``."""
    x, xp, fp = (_float64(ops, t) for t in (x, xp, fp))
    left, right = (None if t is None else _float64(ops, t) for t in (left, right))
    if len(ops.shape(xp)) != 1 or len(ops.shape(fp)) != 1:
        raise ValueError("object too deep for desired array")
    n = ops.shape(xp)[0]
    if ops.shape(fp)[0] != n:
        raise ValueError("fp and xp are not of the same length.")
    if n == 0:
        raise ValueError("array of sample points is empty")
    first, last = _at_index(ops, fp, 0), _at_index(ops, fp, n - 1)
    out = ops.add(ops.multiply(x, 0.0), last)
    if n > 1:
        shape = tuple(ops.shape(x))
        above = ops.greater_equal(ops.reshape(x, shape=(*shape, 1)), xp)
        j = ops.clip(ops.subtract(ops.sum(above, axis=-1), 1), 0, n - 2)
        j1 = ops.add(j, 1)
        x0, x1 = (ops.getitem(xp, (k,), (("a", 0),)) for k in (j, j1))
        y0, y1 = (ops.getitem(fp, (k,), (("a", 0),)) for k in (j, j1))
        slope = ops.divide(ops.subtract(y1, y0), ops.subtract(x1, x0))
        line = ops.add(ops.multiply(slope, ops.subtract(x, x0)), y0)
        out = ops.where(ops.equal(x, _at_index(ops, xp, n - 1)), last, line)
    out = ops.where(ops.greater(x, _at_index(ops, xp, n - 1)),
                    last if right is None else right, out)
    return ops.where(ops.less(x, _at_index(ops, xp, 0)), first if left is None else left, out)
