"""Rotations and rolls of axes: ``np.rot90`` (flips and a transpose, :func:`shifts.rot90`) and
``np.rollaxis`` (a transpose, :func:`axes.rollaxis_order`), views as NumPy's.

Invariants: the arguments are read while compiling and checked as NumPy checks them (its
errors located at the call); the compositions are the tape's too, so both record the same
primitives and every derivative is a slice's or a transpose's rule.
"""

from __future__ import annotations

import numpy as np

from ...compositions import axes as shared_axes
from ...compositions import shifts
from .binding import CallError, bind, static
from .compositions import _array, _axis, _ndim


def _rot90(b, args, kwargs):
    """np.rot90(m, k=1, axes=(0, 1))."""
    p = bind(args, kwargs, ("m", "k", "axes"))
    x, k = _array(b, p["m"]), static(p.get("k", 1), "`k=`")
    axes = tuple(static(p.get("axes", (0, 1)), "`axes=`"))
    ndim = _ndim(b, x)
    if len(axes) != 2:
        raise CallError("len(axes) must be 2.", "NumPy raises ValueError here too")
    if ndim < 2 or axes[0] == axes[1] or abs(axes[0] - axes[1]) == ndim:
        raise CallError("Axes must be different.", "NumPy raises ValueError here too")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise CallError(f"takes an int k, not {k!r}", "pass an int")
    return shifts.rot90(b, x, k, tuple(_axis(a, ndim, "axes") for a in axes))


def _rollaxis(b, args, kwargs):
    """np.rollaxis(a, axis, start=0): the axis moved to before ``start``."""
    p = bind(args, kwargs, ("a", "axis", "start"), required=2)
    x = _array(b, p["a"])
    ndim = _ndim(b, x)
    axis, start = _axis(p["axis"], ndim), static(p.get("start", 0), "`start=`")
    if not isinstance(start, (int, np.integer)) or not -ndim <= start <= ndim:
        raise CallError(f"start {start!r} is out of bounds for an array of dimension {ndim}",
                        "NumPy raises AxisError here too")
    order = shared_axes.rollaxis_order(ndim, axis, int(start) + ndim if start < 0 else
                                       int(start))
    if order is None:
        return b.getitem(x, (), (("e",),))   # x[...]: a view of x as it is
    return b.emit("transpose", (x,), {"axes": order})


FUNCTIONS = {np.rot90: _rot90, np.rollaxis: _rollaxis}
