"""``np.linalg.norm`` (and NumPy 2's ``matrix_norm`` and ``vector_norm``) of traced arrays: the
norms written once in :mod:`adcompiler.compositions.norms` (the tape runs them too); this
module binds the arguments and refuses, located, the norms that have no composition.

Choices: the 2-norm and the Frobenius norm are ``sqrt(sum(x * x))`` whose derivative at the zero
vector is 0, as PyTorch's ``linalg.norm`` and as ``hypot`` here (JAX gives NaN there: sqrt's
infinite slope times zero entries); ``ord=1``/``inf`` norms take ``abs``'s and ``max``'s rules
(``sign(0) = 0``; ties at the maximum share the gradient). A matrix's ``ord=2``, ``-2`` and
``'nuc'`` are its singular values' maximum, minimum and sum (``svd``'s rules: the gradient of
``ord=2`` at a repeated largest singular value is one of its subgradients, as JAX's).
"""

from __future__ import annotations

import numpy as np

from ...compositions.norms import norm, vector_norm
from ...ir import Value
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
    out = norm(b, x, ord_, axes, axis is None, keepdims)
    if out is None:
        raise _refused(ord_, len(axes))
    return out


def _refused(ord_, count):
    """Why ``ord_`` over ``count`` axes has no composition (:func:`norms.norm` gave None)."""
    if count == 1:
        return CallError(f"with ord={ord_!r} of a vector has no derivative here",
                         "use ord=None, 1, 2, np.inf, -np.inf or a nonzero number")
    if count == 2:
        return CallError(f"with ord={ord_!r} of a matrix is not one of NumPy's matrix norms",
                         "use ord=None, 'fro', 'nuc', 1, -1, 2, -2, np.inf or -np.inf "
                         "(NumPy raises ValueError here too)")
    return CallError(f"with ord={ord_!r} needs a 1-D or 2-D array, or `axis=`",
                     "NumPy raises ValueError here too")


def _matrix_norm(b, args, kwargs):
    """NumPy 2's ``matrix_norm(x, keepdims, ord='fro')``: ``norm`` over the last two axes."""
    p = bind(args, kwargs, ("x", "keepdims", "ord"))
    return _norm(b, [p["x"]], {"ord": p.get("ord", "fro"), "axis": (-2, -1),
                               "keepdims": p.get("keepdims", False)})


def _vector_norm(b, args, kwargs):
    """NumPy 2's ``vector_norm(x, axis, keepdims, ord=2)``: a vector norm over ``axis`` (all
    of them, or a tuple of them, merged into one)."""
    p = bind(args, kwargs, ("x", "axis", "keepdims", "ord"))
    x, ord_ = p["x"], static(p.get("ord", 2), "`ord=`")
    axis, keepdims = axis_arg(p.get("axis")), bool(static(p.get("keepdims", False), "`keepdims=`"))
    if not isinstance(x, Value):
        return np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord_)
    if not x.aval.is_float:
        x = b.emit("astype", (x,), {"dtype": "float64"})
    out = vector_norm(b, x, b.shape(x), axis, keepdims, ord_)
    if out is None:
        raise _refused(ord_, 1)
    return out


FUNCTIONS = {np.linalg.norm: _norm}
if hasattr(np.linalg, "vector_norm"):   # NumPy 2
    FUNCTIONS.update({np.linalg.matrix_norm: _matrix_norm, np.linalg.vector_norm: _vector_norm})
