"""NumPy functions the compiler spells in other primitives (``adcompiler/frontend/
compositions.py`` and ``diagonal.py``), spelled the same way on tensors: ``np.var``/``std``,
``np.diff``, ``np.flip``, ``np.roll``, ``np.swapaxes``/``moveaxis``, ``np.vstack``/``hstack``/
``column_stack``, ``np.logaddexp``, ``np.diagonal``/``trace``/``diag``, ``np.tril``/``triu``,
``np.full_like``/``empty_like`` and ``np.add.at``.

Invariants: each records the primitives the compiler emits for it, in the same order, so the
tape's gradient is the compiler's (the choices at ``std``'s zero variance and ``logaddexp``'s
tie included) and every derivative is a ``templates`` rule; views are made where NumPy makes
them (``flip`` a reversed slice, ``swapaxes`` a transpose) through :mod:`.views`. What the
compiler refuses (a diagonal of other axes, ``var(where=)``) runs on the values and is refused
only where a gradient would be lost (:func:`.numpy_api.run_plain`).
"""

from __future__ import annotations

import numpy as np

from . import numpy_api, views
from . import tensor as _tensor
from .record import apply



def _given(value) -> bool:
    """Whether an optional argument was passed (NumPy's default is ``np._NoValue``)."""
    return value is not None and value is not np._NoValue


def _tensor_of(x):
    """``x`` as a tensor: a constant (a number, a list, an array) one that needs no grad."""
    return x if isinstance(x, _tensor.Tensor) else _tensor.Tensor._make(np.asarray(x))


def _axis(axis, ndim):
    """``axis`` in ``range(ndim)``, as NumPy normalises it (AxisError outside)."""
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return int(axis) % ndim


def _axes(axis, ndim):
    axes = tuple(_axis(a, ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    return axes


def _refuse(name, **given):
    extra = [f"{k}=" for k, v in given.items() if _given(v)]
    if extra:
        raise TypeError(f"np.{name}: {', '.join(extra)} not supported on tensors")


# ---- variance and standard deviation --------------------------------------------------------
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """The compiler's ``variance``: ``mean((x - mean(x))**2)``, or for ``ddof`` (NumPy 2's
    ``correction``) the sum over ``max(n - ddof, 0)``."""
    _refuse("var", dtype=dtype, out=out, where=where, mean=mean)
    return _variance(a, axis, _ddof(ddof, correction), keepdims)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """``sqrt(var + (var == 0)) * (var != 0)``: sqrt's value, and a gradient of 0 where the
    variance is 0, as the compiler (and PyTorch) give."""
    _refuse("std", dtype=dtype, out=out, where=where, mean=mean)
    v = _variance(a, axis, _ddof(ddof, correction), keepdims)
    return np.sqrt(v + (v == 0)) * (v != 0)


def _ddof(ddof, correction):
    if _given(correction):
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        return correction
    return ddof


def _variance(a, axis, ddof, keepdims):
    x = _tensor_of(a)
    axis = tuple(axis) if isinstance(axis, list) else axis
    centred = x - apply("mean", (x,), {"axis": axis, "keepdims": True})
    square = centred * centred
    keepdims = bool(keepdims) and keepdims is not np._NoValue
    if ddof == 0:
        return apply("mean", (square,), {"axis": axis, "keepdims": keepdims})
    axes = range(x.ndim) if axis is None else _axes(axis, x.ndim)
    count = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    total = apply("sum", (square,), {"axis": axis, "keepdims": keepdims})
    return total / max(count - ddof, 0)


# ---- differences, flips, rolls --------------------------------------------------------------
def _slice_along(x, axis, start, stop, step=None):
    return x[(slice(None),) * axis + (slice(start, stop, step),)]


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """``a[1:] - a[:-1]`` along ``axis``, ``n`` times (``!=`` for booleans, as NumPy);
    ``prepend``/``append`` (0-d ones broadcast to a slice) are concatenated first."""
    x = _tensor_of(a)
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = _axis(axis, x.ndim)
    if n == 0:
        return x
    parts = [_edge(prepend, x, axis)] if _given(prepend) else []
    parts += [x] + ([_edge(append, x, axis)] if _given(append) else [])
    if len(parts) > 1:
        x = apply("concatenate", tuple(parts), {"axis": axis})
    prim = "not_equal" if x.dtype == np.bool_ else "subtract"
    for _ in range(int(n)):
        x = apply(prim, (_slice_along(x, axis, 1, None), _slice_along(x, axis, None, -1)))
    return x


def _edge(value, x, axis):
    value = _tensor_of(value)
    if value.ndim == 0:
        shape = list(x.shape)
        shape[axis] = 1
        value = views.make("broadcast_to", value, {"shape": tuple(shape)})
    return value


def _flip_axes(x, axes):
    if not axes:
        return apply("copy", (x,)) if x.ndim == 0 else x[()]
    return x[tuple(slice(None, None, -1) if i in axes else slice(None)
                   for i in range(max(axes) + 1))]


def flip(m, axis=None):
    x = _tensor_of(m)
    return _flip_axes(x, tuple(range(x.ndim)) if axis is None else _axes(axis, x.ndim))


def _flip_one(axis, least):
    def flip_one(m):
        x = _tensor_of(m)
        if x.ndim < least:
            raise ValueError(f"Input must be >= {least}-d.")
        return _flip_axes(x, (axis,))
    return flip_one


def roll(a, shift, axis=None):
    """The last ``shift`` entries moved to the front along each axis: a concatenation of two
    slices (a new array); ``axis=None`` rolls the flattened array and restores the shape."""
    x = _tensor_of(a)
    if axis is None:
        flat = _roll_axes(views.make("reshape", x, {"shape": (-1,)}), {0: shift})
        return views.make("reshape", flat, {"shape": x.shape})
    offsets = {}
    for sh, ax in np.broadcast(np.asarray(shift), np.asarray(axis)):
        ax = _axis(int(ax), x.ndim)
        offsets[ax] = offsets.get(ax, 0) + int(sh)
    return _roll_axes(x, offsets)


def _roll_axes(x, offsets):
    out = x
    for axis, sh in sorted(offsets.items()):
        n = x.shape[axis]
        k = int(sh) % n if n else 0
        if k:
            out = apply("concatenate", (_slice_along(out, axis, n - k, None),
                                        _slice_along(out, axis, None, n - k)), {"axis": axis})
    return apply("copy", (out,)) if out is x else out


# ---- axes -----------------------------------------------------------------------------------
def swapaxes(a, axis1, axis2):
    x = _tensor_of(a)
    perm = list(range(x.ndim))
    i, j = _axis(axis1, x.ndim), _axis(axis2, x.ndim)
    perm[i], perm[j] = j, i
    return views.make("transpose", x, {"axes": tuple(perm)})


def moveaxis(a, source, destination):
    x = _tensor_of(a)
    source, destination = _axes(source, x.ndim), _axes(destination, x.ndim)
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    order = [n for n in range(x.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return views.make("transpose", x, {"axes": tuple(order)})


# ---- stacking -------------------------------------------------------------------------------
def _at_least_2d(x, row):
    """A 0-d ``x`` as (1, 1), a 1-D one as a row (1, n) or a column (n, 1)."""
    x = _tensor_of(x)
    if x.ndim >= 2:
        return x
    shape = (1, 1) if x.ndim == 0 else (1, *x.shape) if row else (*x.shape, 1)
    return views.make("reshape", x, {"shape": shape})


def _joined(name, items, axis, dtype=None, casting="same_kind"):
    _refuse(name, dtype=dtype)
    if casting != "same_kind":
        raise TypeError(f"np.{name}: casting= not supported on tensors")
    return apply("concatenate", tuple(items), {"axis": axis})


def vstack(tup, *, dtype=None, casting="same_kind"):
    return _joined("vstack", [_at_least_2d(x, True) for x in tup], 0, dtype, casting)


def hstack(tup, *, dtype=None, casting="same_kind"):
    items = [views.make("reshape", x, {"shape": (1,)}) if x.ndim == 0 else x
             for x in map(_tensor_of, tup)]
    return _joined("hstack", items, 0 if items[0].ndim == 1 else 1, dtype, casting)


def column_stack(tup):
    return _joined("column_stack", [_at_least_2d(x, False) for x in tup], 1)


# ---- elementwise ----------------------------------------------------------------------------
def logaddexp(x, y):
    """``max(x, y) + log1p(exp(-|x - y|))``, with ``x - y`` taken as 0 at a tie (no inf - inf):
    the compiler's spelling, whose gradient is 1/2 to each argument at a tie. A Python number
    takes the other argument's dtype first, as NumPy's ufunc gives it (``where(tie, 0.0, 1.0)``
    alone would be float64)."""
    dtype = np.result_type(*(v._data if isinstance(v, _tensor.Tensor) else v for v in (x, y)))
    x, y = (v if isinstance(v, _tensor.Tensor) else np.asarray(v, dtype) for v in (x, y))
    top, tie = apply("maximum", (x, y)), apply("equal", (x, y))
    apart = [apply("where", (tie, 0.0, v)) for v in (x, y)]
    gap = apply("abs", (apply("subtract", tuple(apart)),))
    return apply("add", (top, apply("log1p", (apply("exp", (apply("negative", (gap,)),)),))))


numpy_api.FUNCTIONS.update({
    np.var: var, np.std: std, np.diff: diff, np.flip: flip, np.fliplr: _flip_one(1, 2),
    np.flipud: _flip_one(0, 1), np.roll: roll, np.swapaxes: swapaxes, np.moveaxis: moveaxis,
    np.vstack: vstack, np.hstack: hstack, np.column_stack: column_stack,
})
numpy_api.UFUNC_METHODS[np.logaddexp, "__call__"] = logaddexp
