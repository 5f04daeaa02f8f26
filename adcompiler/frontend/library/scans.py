"""``np.cumsum``/``np.cumprod`` and the methods ``.cumsum()``/``.cumprod()``: one primitive
each, along one axis (``axis=None`` scans the flattened array, as NumPy does); ``dtype=``
converts first, which is what NumPy's accumulation in that dtype computes. The rules are in
``templates/scans.py`` (``cumprod``'s exact at zeros). ``np.maximum.accumulate`` and
``np.minimum.accumulate`` (axis 0 by default, as a ufunc's) are a gather at the running
arg-extreme (:mod:`adcompiler.compositions.scans`), the tape's too."""

from __future__ import annotations

import numpy as np

from ...compositions import scans
from ...ir import Value
from .binding import CallError, bind, dtype_arg, static
from .compositions import BuilderOps


def _scanned(b, p):
    """The operand (converted to ``dtype=``) and the one axis in ``range(ndim)`` it is scanned
    along; ``axis=None`` flattens it."""
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
    if ndim == 0:
        raise CallError("of a 0-d array is not defined", "NumPy raises ValueError here too")
    if not -ndim <= axis < ndim:
        raise CallError(f"axis {axis} is out of bounds for an array of dimension {ndim}",
                        "NumPy raises AxisError here too")
    return x, int(axis) % ndim


def _scan(name):
    def handler(b, args, kwargs):
        x, axis = _scanned(b, bind(args, kwargs, ("a", "axis", "dtype", "out")))
        return b.emit(name, (x,), {"axis": axis})
    return handler


def _accumulate(name):
    """``np.maximum.accumulate(a, axis=0, dtype=None)`` (and minimum's): the running extreme,
    whose gradient is a gather at the running arg-extreme (:func:`scans.running_extreme`)."""
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("a", "axis", "dtype", "out"))
        p.setdefault("axis", 0)
        x, axis = _scanned(b, p)
        if not x.aval.is_float:   # integers and booleans: no gradient, the primitive alone
            return b.emit(f"{name}_accumulate", (x,), {"axis": axis})
        return scans.running_extreme(BuilderOps(b), name, x, axis)
    return handler


FUNCTIONS = {np.cumsum: _scan("cumsum"), np.cumprod: _scan("cumprod"),
             np.maximum.accumulate: _accumulate("maximum"),
             np.minimum.accumulate: _accumulate("minimum")}
METHODS = {name: (lambda fn: lambda b, x, args, kwargs: fn(b, [x, *args], kwargs))(_scan(name))
           for name in ("cumsum", "cumprod")}
