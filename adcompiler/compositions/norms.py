"""``np.linalg.norm``'s norms that are sums and maxima over entries, spelled in the primitives
NumPy's definition uses: the 2- and Frobenius norms, a vector's 1, inf, -inf and p norms, a
matrix's 1, -1, inf and -inf norms; a matrix's 2, -2 and nuclear norms are its singular values'
largest, smallest and sum (:func:`.factorizations.singular_norm`).

Invariants: NumPy's values; the 2- and Frobenius norms are ``sqrt(sum(x * x))`` with derivative
0 at the zero vector, as PyTorch's (:func:`~.statistics.sqrt_zero_slope`); ``abs``'s and
``max``'s rules give the others (``sign(0) = 0``; ties at a maximum share the gradient). The
caller reads ``axes`` (a tuple in range) and converts integer arrays to float; :func:`norm`
gives None for what has no composition here (``ord=0``, more than two axes), and the caller
refuses it or runs it on the values.
"""

from __future__ import annotations

import numpy as np

from .factorizations import singular_norm
from .statistics import sqrt_zero_slope


def norm(ops, x, ord, axes, all_axes, keepdims):
    """``np.linalg.norm(x, ord, axis, keepdims)`` over ``axes`` (``all_axes``: ``axis=None``,
    whose reductions take no axis), or None."""
    params = {"axis": None if all_axes else axes, "keepdims": keepdims}
    if ord is None or (ord == "fro" and len(axes) == 2) or (ord == 2 and len(axes) == 1):
        return sqrt_zero_slope(ops, ops.sum(ops.multiply(x, x), **params))
    if len(axes) == 1:
        return _vector(ops, x, ord, params)
    if len(axes) == 2 and ord in (1, -1, np.inf, -np.inf):
        return _matrix(ops, x, ord, axes, keepdims)
    if len(axes) == 2 and (ord == "nuc" or (ord in (2, -2) and not isinstance(ord, bool))):
        return singular_norm(ops, x, ord, axes, ops.shape(x), keepdims)
    return None


def _vector(ops, x, ord, params):
    size = ops.abs(x)
    if ord == 1:
        return ops.sum(size, **params)
    if ord in (np.inf, -np.inf):
        return (ops.max if ord > 0 else ops.min)(size, **params)
    if isinstance(ord, (int, float, np.integer, np.floating)) and ord != 0 \
            and not isinstance(ord, bool):
        total = ops.sum(ops.power(size, float(ord)), **params)
        return ops.power(total, 1.0 / float(ord))
    return None


def _matrix(ops, x, ord, axes, keepdims):
    """``ord=1``/``-1``: the largest/smallest column sum of ``abs``; ``inf``/``-inf``: rows."""
    rows, cols = axes
    first, second = (rows, cols) if ord in (1, -1) else (cols, rows)
    sums = ops.sum(ops.abs(x), axis=first, keepdims=True)
    pick = (ops.max if ord > 0 else ops.min)(sums, axis=second, keepdims=True)
    if keepdims:
        return pick
    return ops.squeeze(pick, axis=tuple(sorted((rows, cols))))


def vector_norm(ops, x, shape, axis, keepdims, ord):
    """``np.linalg.vector_norm(x, axis, keepdims, ord)`` (NumPy 2) by NumPy's steps: the axes
    moved first and merged into one (all of them for ``axis=None``), then a vector norm; None
    where :func:`norm` has none."""
    nd = len(shape)
    if axis is None:
        x, axes = ops.reshape(x, (-1,)), tuple(range(nd))
    elif isinstance(axis, tuple):
        axes = tuple(a % nd for a in axis)
        rest = tuple(i for i in range(nd) if i not in axes)
        merged = int(np.prod([shape[i] for i in axes], dtype=np.int64))
        x = ops.reshape(ops.transpose(x, axes=axes + rest),
                        (merged,) + tuple(shape[i] for i in rest))
    else:
        axes = (axis % nd,)
    out = norm(ops, x, ord, (0,) if axis is None or isinstance(axis, tuple) else axes,
               False, False)
    if out is None or not keepdims:
        return out
    return ops.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))
