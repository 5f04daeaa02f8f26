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
from ...compositions.axes import moveaxis
from .compositions import _array, _axis


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


def dot_nd(b, x, y):
    """``np.dot`` where an operand has more than 2 dimensions: the sum over the last axis of
    ``x`` and the second-to-last of ``y`` (its only axis for a 1-D ``y``), as
    ``np.tensordot(x, y, ([-1], [-2]))``; the free axes of ``x``, then of ``y``."""
    x, y = _array(b, x), _array(b, y)
    na, nb = b.ndim(x), b.ndim(y)
    if b.shape(x)[-1] != b.shape(y)[-2 if nb > 1 else 0]:
        raise CallError(f"shapes {b.shape(x)} and {b.shape(y)} not aligned",
                        "NumPy raises ValueError here too")
    return _einsum(b, tensordot_subscripts(na, nb, ([na - 1], [max(nb - 2, 0)])), x, y)


def _trapezoid(b, args, kwargs):
    p = bind(args, kwargs, ("y", "x", "dx", "axis"))
    axis = static(p.get("axis", -1), "`axis=`")
    x = None if p.get("x") is None else _array(b, p["x"])
    dx = p.get("dx", 1.0)
    if isinstance(dx, Value) and dx.aval.known_shape != () or isinstance(dx, (list, tuple)):
        raise CallError("takes one spacing `dx=` (a number) here", "pass sample points as x=")
    return trapezoid(b, _array(b, p["y"]), x, dx, axis)


def _cross(b, args, kwargs):
    """np.cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None), as NumPy's: the vectors' axes
    moved last (transposes), the product, its axis moved to ``axisc`` (not for two 2-vectors,
    whose product is the z component alone); ``axis=`` sets all three."""
    p = bind(args, kwargs, ("a", "b", "axisa", "axisb", "axisc", "axis"), required=2)
    axis = static(p.get("axis"), "`axis=`")
    axisa, axisb, axisc = (static(p.get(k, -1), f"`{k}=`") if axis is None else axis
                           for k in ("axisa", "axisb", "axisc"))
    x, y = _array(b, p["a"]), _array(b, p["b"])
    x, y = (_axis_last(b, v, ax, what) for v, ax, what in ((x, axisa, "axisa"),
                                                          (y, axisb, "axisb")))
    out = cross(b, x, y)
    if b.shape(x)[-1] == b.shape(y)[-1] == 2 or b.ndim(out) == 1:
        return out
    return moveaxis(b, out, (b.ndim(out) - 1,), (_axis(axisc, b.ndim(out), "axisc"),))


def _axis_last(b, x, axis, what):
    """``np.moveaxis(x, axis, -1)``: the vectors' axis last (``x`` itself where it is)."""
    if b.ndim(x) == 0:
        raise CallError("takes arrays of vectors, not a 0-d value", "NumPy raises too")
    axis = _axis(axis, b.ndim(x), what)
    return x if axis == b.ndim(x) - 1 else moveaxis(b, x, (axis,), (b.ndim(x) - 1,))


FUNCTIONS = {getattr(np, n).outer: _outer_call(n) for n in OUTER_UFUNCS}
FUNCTIONS.update({np.inner: _inner, np.vdot: _vdot, np.tensordot: _tensordot,
                  np.trapezoid: _trapezoid, np.cross: _cross})
