"""Statistics spelled in reductions and ufuncs: ``np.var``/``np.std``, ``np.average``,
``np.nansum``, ``np.nanmean`` and ``np.nanmax``/``np.nanmin``.

Invariants: NumPy's values (in NumPy's order of operations: ``_var``'s ``mean((x -
mean(x))**2)``) and dtypes (``average`` of integers is float64); ``std``'s derivative is 0 where
the variance is 0 and a NaN entry gets a zero gradient in the ``nan*`` reductions (``np.where``
picks around it, as JAX's); ``axis`` is None, an int or a tuple (the caller turns a list into a
tuple); a sum of weights of 0 raises NumPy's ZeroDivisionError when the code runs
(``ops.fail_if``), and a mean without weights has its count as ``ops.constant``.
"""

from __future__ import annotations

import math

import numpy as np

from .axes import axes_in


# ---- variance and standard deviation --------------------------------------------------------
def variance(ops, x, axis, ddof, keepdims):
    """NumPy's ``_var``: ``sum((x - mean(x, keepdims))**2) / max(n - ddof, 0)``, the division
    by ``n`` being ``np.mean``'s when ``ddof`` is 0."""
    params = {} if axis is None else {"axis": axis}
    centred = ops.subtract(x, ops.mean(x, **params, keepdims=True))
    square = ops.multiply(centred, centred)
    params = {**params, "keepdims": True} if keepdims else params
    if ddof == 0:
        return ops.mean(square, **params)
    shape = tuple(ops.shape(x))
    count = math.prod(shape[a] for a in axes_in(axis, len(shape)))
    return ops.divide(ops.sum(square, **params), max(count - ddof, 0))


def std(ops, x, axis, ddof, keepdims):
    """``sqrt(var)``, whose derivative is 0 where the variance is 0 (a constant slice), as
    PyTorch's ``std`` gives (JAX gives NaN, sqrt's infinite slope times zero deviations).
    Ufuncs only, so a 0-d result stays a NumPy scalar."""
    return sqrt_zero_slope(ops, variance(ops, x, axis, ddof, keepdims))


def sqrt_zero_slope(ops, s):
    """``sqrt(s)`` for ``s >= 0`` whose derivative is 0 where ``s`` is 0: ``sqrt(s + (s == 0))
    * (s != 0)`` has sqrt's value everywhere, exactly, and never differentiates sqrt at 0."""
    safe = ops.add(s, ops.equal(s, 0.0))
    return ops.multiply(ops.sqrt(safe), ops.not_equal(s, 0.0))


def _dtype(ops, x) -> np.dtype:
    return np.dtype(ops.dtype(x))


def _as(ops, x, dtype):
    return x if _dtype(ops, x) == dtype else ops.astype(x, dtype)


# ---- np.average -----------------------------------------------------------------------------
def _weights_along(ops, a, w, axis):
    """``w`` shaped to broadcast against ``a`` (NumPy's rule where their shapes differ)."""
    shape = tuple(ops.shape(a))
    if tuple(ops.shape(w)) == shape:
        return w
    if axis is None:
        raise TypeError("Axis must be specified when shapes of a and weights differ.")
    axes = axes_in(axis, len(shape))
    if tuple(ops.shape(w)) != tuple(shape[k] for k in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along specified "
                         "axis.")
    order = tuple(int(k) for k in np.argsort(axes))
    if order != tuple(range(len(axes))):
        w = ops.transpose(w, axes=order)
    return ops.reshape(w, shape=tuple(s if k in axes else 1 for k, s in enumerate(shape)))


ZERO_WEIGHTS = "Weights sum to zero, can't be normalized"


def _check_weights(ops, total):
    """NumPy's ZeroDivisionError where a sum of weights is 0: a run-time check when compiling
    (a ``raise_if`` node), raised at once on the tape (``ops.fail_if``)."""
    ops.fail_if(ops.any(ops.equal(total, 0.0)), ZeroDivisionError, ZERO_WEIGHTS)


def average(ops, a, axis=None, weights=None, returned=False, keepdims=False):
    """NumPy's ``average``: the mean, or ``sum(a * w) / sum(w)`` in NumPy's result dtype
    (float64 for integer ``a``); with ``returned`` the pair ``(avg, sum of weights)``."""
    if weights is None:
        avg = ops.mean(a, axis=axis, keepdims=keepdims)
        scale = np.asarray(ops.size(a) / ops.size(avg), dtype=_dtype(ops, avg))
        return (avg, ops.constant(scale, "weights_sum")) if returned else avg
    w = _weights_along(ops, a, weights, axis)
    kind = _dtype(ops, a).kind
    dtype = np.result_type(_dtype(ops, a), _dtype(ops, w), *(("f8",) if kind in "biu" else ()))
    total = ops.sum(_as(ops, w, dtype), axis=axis, keepdims=keepdims)
    _check_weights(ops, total)
    products = ops.multiply(_as(ops, a, dtype), _as(ops, w, dtype))
    avg = ops.divide(ops.sum(products, axis=axis, keepdims=keepdims), total)
    if not returned:
        return avg
    if tuple(ops.shape(total)) != tuple(ops.shape(avg)):
        total = ops.copy(ops.broadcast_to(total, shape=tuple(ops.shape(avg))))
    return avg, total


# ---- NaN-ignoring reductions ----------------------------------------------------------------
def _floating(ops, a) -> bool:
    return _dtype(ops, a).kind in "fc"


def nansum(ops, a, axis=None, keepdims=False):
    """``sum(where(isnan(a), 0, a))``: a NaN entry adds nothing and gets gradient 0."""
    if _floating(ops, a):
        a = ops.where(ops.isnan(a), 0, a)
    return ops.sum(a, axis=axis, keepdims=keepdims)


def nanmean(ops, a, axis=None, keepdims=False):
    """NumPy's ``nanmean``: the sum of the other entries over their count (NaN, with NumPy's
    'invalid value' warning, where a slice is all NaN); the mean of an integer array."""
    if not _floating(ops, a):
        return ops.mean(a, axis=axis, keepdims=keepdims)
    nan = ops.isnan(a)
    total = ops.sum(ops.where(nan, 0, a), axis=axis, keepdims=keepdims)
    count = ops.sum(ops.logical_not(nan), axis=axis, keepdims=keepdims)
    return ops.divide(total, ops.astype(count, _dtype(ops, total)))


def nan_extreme(prim):
    """``np.nanmax``/``np.nanmin``: the extreme of the entries that are not NaN (NaN is
    replaced by the identity, -inf or inf), NaN where the slice is all NaN."""
    fill = -np.inf if prim == "max" else np.inf

    def extreme(ops, a, axis=None, keepdims=False):
        if not _floating(ops, a):
            return getattr(ops, prim)(a, axis=axis, keepdims=keepdims)
        nan = ops.isnan(a)
        out = getattr(ops, prim)(ops.where(nan, fill, a), axis=axis, keepdims=keepdims)
        return ops.where(ops.all(nan, axis=axis, keepdims=keepdims), np.nan, out)
    return extreme
