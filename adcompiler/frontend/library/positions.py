"""Positions in sorted arrays: ``np.searchsorted`` and ``np.digitize``, integer results that
carry no gradient (the gradient flows through the float values they index, ``x[i]``).

Invariants: NumPy's values and dtype (intp). ``searchsorted`` is one primitive; its
``sorter=`` is a gather first (``a[sorter]``, what NumPy searches). ``digitize`` is NumPy's
own definition in ``searchsorted`` (``side='right'`` unless ``right=True``, of the reversed
bins where they decrease): of bins known while compiling, their monotonicity is read then and
NumPy's ValueError is located; of traced bins both directions are computed and chosen by
``bins[0] <= bins[-1]`` when the code runs, with NumPy's ValueError where they are neither.
"""

from __future__ import annotations

import numpy as np

from ...ir import Value
from .binding import CallError, bind, static
from .compositions import BuilderOps, _array

_NOT_MONOTONIC = "bins must be monotonically increasing or decreasing"


def _side(side):
    side = static(side, "`side=`")
    if side not in ("left", "right"):
        raise CallError(f"takes side='left' or side='right', not {side!r}", "NumPy raises too")
    return side


def _sorted_array(b, a, what):
    a = _array(b, a)
    if b.ndim(a) != 1:
        raise CallError(f"needs a 1-D {what}, not one of {b.ndim(a)} dimensions",
                        "NumPy raises ValueError here too")
    return a


def _searchsorted(b, args, kwargs):
    """np.searchsorted(a, v, side='left', sorter=None)."""
    p = bind(args, kwargs, ("a", "v", "side", "sorter"), required=2)
    a, side = _sorted_array(b, p["a"], "array to search"), _side(p.get("side", "left"))
    if p.get("sorter") is not None:
        a = b.getitem(a, [_array(b, p["sorter"])], (("a", 0),))
    return b.emit("searchsorted", (a, p["v"]), {"side": side})


def _digitize(b, args, kwargs):
    """np.digitize(x, bins, right=False): the index of the bin of each value."""
    p = bind(args, kwargs, ("x", "bins", "right"), required=2)
    bins, x = _sorted_array(b, p["bins"], "array of bins"), p["x"]
    side = "left" if static(p.get("right", False), "`right=`") else "right"
    n = b.shape(bins)[0]
    known = b.graph.consts.get(bins)
    if known is not None:
        step = np.diff(np.asarray(known))
        if np.all(step >= 0):
            return b.emit("searchsorted", (bins, x), {"side": side})
        if not np.all(step <= 0):
            raise CallError(_NOT_MONOTONIC, "NumPy raises ValueError here too")
    ops = BuilderOps(b)
    reversed_bins = b.getitem(bins, (), (("s", None, None, -1),))
    decreasing = b.emit("subtract", (n, b.emit("searchsorted", (reversed_bins, x),
                                                {"side": side})))
    if known is not None:
        return decreasing
    up = b.emit("searchsorted", (bins, x), {"side": side})
    later, earlier = (b.getitem(bins, (), (("s", lo, hi, None),)) for lo, hi in
                      ((1, None), (None, -1)))
    rising = b.emit("all", (b.emit("greater_equal", (later, earlier)),))
    falling = b.emit("all", (b.emit("less_equal", (later, earlier)),))
    ops.fail_if(b.emit("logical_not", (b.emit("logical_or", (rising, falling)),)), ValueError,
                _NOT_MONOTONIC)
    return b.emit("where", (rising, up, decreasing))


FUNCTIONS = {np.searchsorted: _searchsorted, np.digitize: _digitize}
METHODS = {"searchsorted": lambda b, x, args, kwargs: _searchsorted(b, [x, *args], kwargs)}
