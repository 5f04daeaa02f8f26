"""Products and integrals spelled in existing primitives: ``np.add.outer``/``np.multiply.outer``
(and the other binary ufuncs' ``.outer``), ``np.inner``, ``np.vdot``, ``np.tensordot`` and
``np.trapezoid``.

``ufunc.outer(a, b)`` is ``ufunc(a reshaped to a.shape + (1,) * b.ndim, b)`` (for 1-D operands
``a[:, None] * b[None, :]``); ``inner``, ``vdot`` and ``tensordot`` are einsums whose subscripts
are made here (:func:`inner_subscripts`, :func:`tensordot_subscripts`) and lowered by
:mod:`.einsum`; ``trapezoid`` is NumPy's own ``(d * (y[1:] + y[:-1]) / 2.0).sum(axis)``.
Each is written once over ``ops`` (the Builder here, tensors on the tape:
:mod:`adcompiler.tape.products`), so both record the same primitives and every derivative is a
primitive's rule. Axes and ``axes=`` are known while compiling.
"""

from __future__ import annotations

import string

import numpy as np

from ..ir import Value
from . import einsum
from .binding import CallError, bind, positional, static
from .compositions import _array
from .splits import axis_in, slice_along

OUTER_UFUNCS = ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
                "hypot", "arctan2", "greater", "greater_equal", "less", "less_equal", "equal",
                "not_equal", "logical_and", "logical_or")


def outer(ops, prim, x, y):
    """``np.<prim>.outer(x, y)``: ``x``'s axes first, then ``y``'s, by broadcasting."""
    ny = len(ops.shape(y))
    spread = ops.reshape(x, shape=(*ops.shape(x), *(1,) * ny)) if ny else x
    return getattr(ops, prim)(spread, y)


def inner_subscripts(na, nb) -> str:
    """``np.inner``'s einsum for operands of ``na`` and ``nb`` (>= 1) dimensions: the last axes
    summed, the others kept, ``x``'s first (``"az,bz->ab"``)."""
    letters = string.ascii_letters.replace("z", "")
    a, b = letters[:na - 1], letters[na - 1:na + nb - 2]
    return f"{a}z,{b}z->{a}{b}"


def tensordot_subscripts(na, nb, axes) -> str:
    """``np.tensordot``'s einsum: ``axes`` an int N (the last N of ``x`` with the first N of
    ``y``) or a pair of axis lists; the free axes of ``x``, then of ``y``."""
    if isinstance(axes, (int, np.integer)):
        pairs = (list(range(-int(axes), 0)), list(range(int(axes))))
    else:
        pairs = tuple([a] if isinstance(a, (int, np.integer)) else list(a) for a in axes)
    if len(pairs) != 2 or len(pairs[0]) != len(pairs[1]):
        raise ValueError("shape-mismatch for sum")
    xa, ya = ([axis_in(a, n) for a in p] for p, n in zip(pairs, (na, nb)))
    letters = iter(string.ascii_letters)
    x = [next(letters) for _ in range(na)]
    y = [x[xa[ya.index(k)]] if k in ya else next(letters) for k in range(nb)]
    free = [c for k, c in enumerate(x) if k not in xa] + [c for k, c in enumerate(y)
                                                            if k not in ya]
    return f"{''.join(x)},{''.join(y)}->{''.join(free)}"


def trapezoid(ops, y, x=None, dx=1.0, axis=-1):
    """NumPy's ``trapezoid``: spacings ``d`` (``dx``, or ``np.diff(x)``, a 1-D ``x`` shaped to
    lie along ``axis``), then ``(d * (y[1:] + y[:-1]) / 2.0).sum(axis)``."""
    ndim = len(ops.shape(y))
    axis = axis_in(axis, ndim)
    d = dx
    if x is not None:
        along = len(ops.shape(x)) - 1 if len(ops.shape(x)) == 1 else axis
        d = ops.subtract(slice_along(ops, x, along, 1, None), slice_along(ops, x, along, None, -1))
        if len(ops.shape(x)) == 1:
            d = ops.reshape(d, shape=tuple(ops.shape(d)[0] if k == axis else 1
                                           for k in range(ndim)))
    pairs = ops.add(slice_along(ops, y, axis, 1, None), slice_along(ops, y, axis, None, -1))
    return ops.sum(ops.divide(ops.multiply(d, pairs), 2.0), axis=axis)


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


FUNCTIONS = {getattr(np, n).outer: _outer_call(n) for n in OUTER_UFUNCS}
FUNCTIONS.update({np.inner: _inner, np.vdot: _vdot, np.tensordot: _tensordot,
                  np.trapezoid: _trapezoid})
