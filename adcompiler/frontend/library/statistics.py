"""The compiler's handlers of the statistics written once in
:mod:`adcompiler.compositions.statistics` beyond ``var``/``std`` (whose handlers are in
:mod:`.compositions`): ``np.average``, ``np.nansum``, ``np.nanmean`` and ``np.nanmax``/
``np.nanmin``.

Invariants: axes, ``returned=`` and ``keepdims=`` are known while compiling (a list of axes is a
tuple); ``out=``, ``dtype=``, ``where=`` and ``initial=`` are refused, located; a sum of weights
of 0 is NumPy's ZeroDivisionError when the code runs (a ``raise_if`` node, through
:class:`.compositions.BuilderOps`); the compositions are the tape's too.
"""

from __future__ import annotations

import numpy as np

from ...compositions.statistics import average, nan_extreme, nanmean, nansum
from .binding import CallError, bind, static
from .compositions import BuilderOps, _array


def _axis_param(p):
    axis = static(p.get("axis"), "`axis=`")
    return tuple(axis) if isinstance(axis, list) else axis


def _no_out(kwargs, name):
    for key in ("out", "dtype", "where", "initial"):
        if key in kwargs:
            raise CallError(f"does not take `{key}=` here",
                            f"call np.{name}(a, axis, keepdims=...) and convert the result")


def _average(b, args, kwargs):
    p = bind(args, kwargs, ("a", "axis", "weights", "returned", "keepdims"))
    weights = None if p.get("weights") is None else _array(b, p["weights"])
    returned = static(p.get("returned", False), "`returned=`")
    keepdims = static(p.get("keepdims", False), "`keepdims=`")
    return average(BuilderOps(b), _array(b, p["a"]), _axis_param(p), weights, returned,
                   keepdims)


def _nan_call(name, fn):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("a", "axis"))
        _no_out(kwargs, name)
        keepdims = static(kwargs.pop("keepdims", False), "`keepdims=`")
        return fn(b, _array(b, p["a"]), _axis_param(p), keepdims)
    return handler


FUNCTIONS = {
    np.average: _average, np.nansum: _nan_call("nansum", nansum),
    np.nanmean: _nan_call("nanmean", nanmean),
    np.nanmax: _nan_call("nanmax", nan_extreme("max")),
    np.nanmin: _nan_call("nanmin", nan_extreme("min")),
}
