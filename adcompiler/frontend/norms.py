"""``np.linalg.norm`` of traced arrays: the norms that are sums and maxima over entries, spelled
in the primitives NumPy's definition uses.

Choices: the 2-norm and the Frobenius norm are ``sqrt(sum(x * x))`` whose derivative at the zero
vector is 0, as PyTorch's ``linalg.norm`` and as ``hypot`` here (JAX gives NaN there: sqrt's
infinite slope times zero entries); ``ord=1``/``inf`` norms take ``abs``'s and ``max``'s rules
(``sign(0) = 0``; ties at the maximum share the gradient). The norms that need singular values
(a matrix's ``ord=2``, ``-2`` and ``'nuc'``) are refused with a hint (``custom_vjp``).
"""

from __future__ import annotations

import numpy as np

from ..compositions.statistics import sqrt_zero_slope
from ..ir import Value
from .binding import CallError, axis_arg, bind, static

_PARAMS = ("x", "ord", "axis", "keepdims")


def _norm(b, args, kwargs):
    p = bind(args, kwargs, _PARAMS)
    x, ord_ = p["x"], static(p.get("ord"), "`ord=`")
    axis, keepdims = axis_arg(p.get("axis")), bool(static(p.get("keepdims", False), "`keepdims=`"))
    if not isinstance(x, Value):
        return np.linalg.norm(x, ord_, axis, keepdims)
    if not x.aval.is_float:
        x = b.emit("astype", (x,), {"dtype": "float64"})   # NumPy's norm of ints is float
    ndim = len(b.shape(x))
    axes = tuple(range(ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    params = {"axis": axes if axis is not None else None, "keepdims": keepdims}
    if ord_ is None or (ord_ == "fro" and len(axes) == 2) or (ord_ == 2 and len(axes) == 1):
        return sqrt_zero_slope(b, b.emit("sum", (b.emit("multiply", (x, x)),), params))
    if len(axes) == 1:
        return _vector(b, x, ord_, params)
    if len(axes) == 2:
        return _matrix(b, x, ord_, axes, keepdims)
    raise CallError(f"with ord={ord_!r} needs a 1-D or 2-D array, or `axis=`",
                    "NumPy raises ValueError here too")


def _vector(b, x, ord_, params):
    size = b.emit("abs", (x,))
    if ord_ == 1:
        return b.emit("sum", (size,), params)
    if ord_ in (np.inf, -np.inf):
        return b.emit("max" if ord_ > 0 else "min", (size,), params)
    if isinstance(ord_, (int, float, np.integer, np.floating)) and ord_ != 0 \
            and not isinstance(ord_, bool):
        total = b.emit("sum", (b.emit("power", (size, float(ord_))),), params)
        return b.emit("power", (total, 1.0 / float(ord_)))
    raise CallError(f"with ord={ord_!r} of a vector has no derivative here",
                    "use ord=None, 1, 2, np.inf, -np.inf or a nonzero number")


def _matrix(b, x, ord_, axes, keepdims):
    """``ord=1``/``-1``: the largest/smallest column sum of ``abs``; ``inf``/``-inf``: rows."""
    if ord_ not in (1, -1, np.inf, -np.inf):
        raise CallError(f"with ord={ord_!r} of a matrix needs its singular values, which have "
                        "no rule here", "write it in a function decorated with "
                        "@adcompiler.custom_vjp (e.g. with np.linalg.svd in its fwd and bwd)")
    rows, cols = axes
    first, second = (rows, cols) if ord_ in (1, -1) else (cols, rows)
    sums = b.emit("sum", (b.emit("abs", (x,)),), {"axis": first, "keepdims": True})
    pick = b.emit("max" if ord_ > 0 else "min", (sums,), {"axis": second, "keepdims": True})
    if keepdims:
        return pick
    return b.emit("squeeze", (pick,), {"axis": tuple(sorted((rows, cols)))})


FUNCTIONS = {np.linalg.norm: _norm}
