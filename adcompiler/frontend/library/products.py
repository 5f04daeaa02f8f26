"""The compiler's handlers of the products and integrals written once in
:mod:`adcompiler.compositions.products`: ``np.add.outer``/``np.multiply.outer`` (and the other
binary ufuncs' ``.outer``), ``np.inner``, ``np.vdot``, ``np.tensordot``, ``np.trapezoid`` and
``np.cross``.

Invariants: ``inner``, ``vdot`` and ``tensordot`` are einsums, lowered by :mod:`.einsum` (so
their subscripts meet the primitive's normal form); axes and ``axes=`` are known while
compiling; the compositions are the tape's too, so both record the same primitives and every
derivative is a primitive's rule.
"""

from __future__ import annotations

import numpy as np

from ...compositions.products import (OUTER_UFUNCS, cross, inner_subscripts, outer,
                                     tensordot_subscripts, trapezoid)
from ...ir import Value
from . import einsum
from .binding import CallError, bind, positional, static
from .compositions import _array


# ---- the calls ------------------------------------------------------------------------------
def _outer_call(prim):
    def handler(b, args, kwargs):
        x, y = positional(args, 2)
        return outer(b, prim, _array(b, x), _array(b, y))
    return handler


def _einsum(b, subscripts, x, y):
    return einsum.FUNCTIONS[np.einsum](b, [subscripts, x, y], {})


def _inner(b, args, kwargs):
    x, y = (_array(b, v) for v in positional(args, 2))
    na, nb = b.ndim(x), b.ndim(y)
    if na == 0 or nb == 0:
        return b.emit("multiply", (x, y))
    return _einsum(b, inner_subscripts(na, nb), x, y)


def _vdot(b, args, kwargs):
    """``np.vdot`` of real arrays: the flattened arrays' dot product."""
    x, y = (_array(b, v) for v in positional(args, 2))
    flat = [b.reshape(v, shape=(b.size(v),)) for v in (x, y)]
    return _einsum(b, "i,i->", *flat)


def _tensordot(b, args, kwargs):
    p = bind(args, kwargs, ("a", "b", "axes"), required=2)
    x, y = _array(b, p["a"]), _array(b, p["b"])
    axes = static(p.get("axes", 2), "`axes=`")
    return _einsum(b, tensordot_subscripts(b.ndim(x), b.ndim(y), axes), x, y)


def _trapezoid(b, args, kwargs):
    p = bind(args, kwargs, ("y", "x", "dx", "axis"))
    axis = static(p.get("axis", -1), "`axis=`")
    x = None if p.get("x") is None else _array(b, p["x"])
    dx = p.get("dx", 1.0)
    if isinstance(dx, Value) and dx.aval.known_shape != () or isinstance(dx, (list, tuple)):
        raise CallError("takes one spacing `dx=` (a number) here", "pass sample points as x=")
    return trapezoid(b, _array(b, p["y"]), x, dx, axis)


def _cross(b, args, kwargs):
    p = bind(args, kwargs, ("a", "b"), required=2)
    return cross(b, _array(b, p["a"]), _array(b, p["b"]))


FUNCTIONS = {getattr(np, n).outer: _outer_call(n) for n in OUTER_UFUNCS}
FUNCTIONS.update({np.inner: _inner, np.vdot: _vdot, np.tensordot: _tensordot,
                  np.trapezoid: _trapezoid, np.cross: _cross})
