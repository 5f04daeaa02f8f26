"""``np.cumsum``/``np.cumprod`` and the methods ``.cumsum()``/``.cumprod()``: one primitive
each, along one axis (``axis=None`` scans the flattened array, as NumPy does); ``dtype=``
converts first, which is what NumPy's accumulation in that dtype computes. The rules are in
``templates/scans.py`` (``cumprod``'s exact at zeros)."""

from __future__ import annotations

import numpy as np

from ...ir import Value
from .binding import CallError, bind, dtype_arg, static


def _scan(name):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("a", "axis", "dtype", "out"))
        if p.get("out") is not None:
            raise CallError("does not support `out=` here", "use the returned value")
        x, axis = p["a"], static(p.get("axis"), "`axis=`")
        if not isinstance(x, Value):
            x = b.constant(np.asarray(x))
        if p.get("dtype") is not None and dtype_arg(p["dtype"]) != x.aval.dtype:
            x = b.emit("astype", (x,), {"dtype": dtype_arg(p["dtype"])})
        if axis is None:
            x, axis = b.emit("reshape", (x,), {"shape": (-1,)}), 0
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
            raise CallError(f"takes one int axis or None, not {axis!r}", "scan one axis at a time")
        ndim = len(b.shape(x))
        if not -ndim <= axis < ndim:
            raise CallError(f"axis {axis} is out of bounds for an array of dimension {ndim}",
                            "NumPy raises AxisError here too")
        return b.emit(name, (x,), {"axis": int(axis) % ndim})
    return handler


FUNCTIONS = {np.cumsum: _scan("cumsum"), np.cumprod: _scan("cumprod")}
METHODS = {name: (lambda fn: lambda b, x, args, kwargs: fn(b, [x, *args], kwargs))(_scan(name))
           for name in ("cumsum", "cumprod")}
