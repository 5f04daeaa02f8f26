"""NumPy functions spelled in other primitives, as NumPy itself computes them: ``np.var``/``std``,
``np.diff``, ``np.flip``, ``np.roll``, ``np.swapaxes``/``moveaxis``, ``np.full_like``/
``empty_like``, ``np.vstack``/``hstack``/``column_stack``, ``np.logaddexp`` and ``np.round``.

Invariants: each gives NumPy's values (bit for bit, in NumPy's order of operations) and dtype,
and is a view where NumPy returns one (``flip`` a reversed slice, ``swapaxes`` a transpose) and
a new array where NumPy copies (``roll`` a concatenation); every derivative comes from the
primitives' rules, with the choices written at each function (``std`` at zero variance,
``logaddexp`` at a tie). Arguments that pick axes or shifts must be known while compiling.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import Value
from .binding import CallError, axis_arg, bind, dtype_arg, positional, shape_arg, static
from .creation import _stacked, contains_value, made
from .norms import sqrt_zero_slope

FULL = ("s", None, None, None)   # the index spec of `:`


def _array(b, x):
    """``x`` as a Value: a traced value as it is, a list holding traced values stacked, anything
    else (numbers, lists of numbers) a constant made while compiling."""
    if isinstance(x, Value):
        return x
    if contains_value(x):
        return _stacked(b, x)
    return b.constant(made(np.asarray(x)))


def _ndim(b, x) -> int:
    return len(b.shape(x))


def _axis(axis, ndim, what="axis"):
    """``axis`` in ``range(ndim)`` (negative ones counted from the end), as NumPy checks it."""
    axis = static(axis, f"`{what}=`")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise CallError(f"takes an int {what} here, not {axis!r}", "pass one int")
    if not -ndim <= axis < ndim:
        raise CallError(f"{what} {axis} is out of bounds for an array of dimension {ndim}",
                        "NumPy raises AxisError here too")
    return int(axis) % ndim


def _axes(axis, ndim, what="axis"):
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(_axis(a, ndim, what) for a in axes)
    if len(set(out)) != len(out):
        raise CallError(f"repeats an axis in {axis!r}", "NumPy raises ValueError here too")
    return out


# ---- variance and standard deviation ----------------------------------------------------------
_VAR_PARAMS = ("a", "axis", "dtype", "out", "ddof", "keepdims")


def _variance_args(args, kwargs):
    p = bind(args, kwargs, _VAR_PARAMS)
    for name in ("where", "mean"):
        if kwargs.pop(name, None) is not None:
            raise CallError(f"does not support `{name}=` here", "compute it from the "
                            "selected values, or pass no precomputed mean")
    if p.get("dtype") is not None or p.get("out") is not None:
        raise CallError("does not support `dtype=` or `out=` here",
                        "cast first with .astype(...), and use the returned value")
    correction = kwargs.pop("correction", None)
    if correction is not None and p.get("ddof", 0) != 0:
        raise CallError("got both `ddof=` and `correction=`", "NumPy refuses this too")
    ddof = static(p.get("ddof", 0) if correction is None else correction, "`ddof=`")
    keepdims = bool(static(p.get("keepdims", False), "`keepdims=`"))
    return p["a"], axis_arg(p.get("axis")), ddof, keepdims


def variance(b, x, axis, ddof, keepdims):
    """NumPy's ``_var``: ``sum((x - mean(x, keepdims))**2) / max(n - ddof, 0)``, the division
    by ``n`` being ``np.mean``'s when ``ddof`` is 0."""
    params = {} if axis is None else {"axis": axis}
    centred = b.emit("subtract", (x, b.emit("mean", (x,), {**params, "keepdims": True})))
    square = b.emit("multiply", (centred, centred))
    params = {**params, "keepdims": True} if keepdims else params
    if ddof == 0:
        return b.emit("mean", (square,), params)
    shape = b.shape(x)
    axes = range(len(shape)) if axis is None else _axes(axis, len(shape))
    count = math.prod(shape[a] for a in axes) if shape else 1
    return b.emit("divide", (b.emit("sum", (square,), params), max(count - ddof, 0)))


def _var(b, args, kwargs):
    x, axis, ddof, keepdims = _variance_args(args, kwargs)
    return variance(b, _array(b, x), axis, ddof, keepdims)


def _std(b, args, kwargs):
    """``sqrt(var)``, whose derivative is 0 where the variance is 0 (a constant slice), as
    PyTorch's ``std`` gives (JAX gives NaN, sqrt's infinite slope times zero deviations):
    ``sqrt(var + (var == 0)) * (var != 0)`` has sqrt's value everywhere, exactly, and never
    differentiates sqrt at 0. Ufuncs only, so a 0-d result stays a NumPy scalar."""
    x, axis, ddof, keepdims = _variance_args(args, kwargs)
    return sqrt_zero_slope(b, variance(b, _array(b, x), axis, ddof, keepdims))


# ---- differences, flips, rolls --------------------------------------------------------------
def _slice_along(b, x, axis, start, stop, step=None):
    return b.getitem(x, (), (FULL,) * axis + (("s", start, stop, step),))


def _diff(b, args, kwargs):
    """np.diff(a, n=1, axis=-1, prepend, append): ``a[1:] - a[:-1]`` along ``axis``, n times
    (``!=`` for booleans, as NumPy); ``prepend``/``append`` are concatenated first."""
    p = bind(args, kwargs, ("a", "n", "axis", "prepend", "append"))
    x, n = _array(b, p["a"]), static(p.get("n", 1), "`n=`")
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise CallError(f"order must be a non-negative int, got {n!r}", "NumPy raises too")
    if _ndim(b, x) == 0:
        raise CallError("requires input that is at least one dimensional", "NumPy raises too")
    axis = _axis(p.get("axis", -1), _ndim(b, x))
    if n == 0:
        return x
    parts = [_edge(b, p[k], x, axis) for k in ("prepend",) if p.get(k) is not None]
    parts += [x] + [_edge(b, p[k], x, axis) for k in ("append",) if p.get(k) is not None]
    if len(parts) > 1:
        x = b.concatenate(parts, axis=axis)
    op = "not_equal" if x.aval.dtype == "bool" else "subtract"
    for _ in range(int(n)):
        x = b.emit(op, (_slice_along(b, x, axis, 1, None), _slice_along(b, x, axis, None, -1)))
    return x


def _edge(b, value, x, axis):
    """A ``prepend``/``append`` value: a 0-d one broadcast to one slice of ``x`` along axis."""
    value = _array(b, value)
    if _ndim(b, value) == 0:
        shape = list(b.shape(x))
        shape[axis] = 1
        value = b.emit("broadcast_to", (value,), {"shape": tuple(shape)})
    return value


def _flip_axes(b, x, axes):
    """``x`` reversed along ``axes`` (a slice with step -1 each): a view, as NumPy's."""
    if not axes:
        return b.emit("copy", (x,)) if _ndim(b, x) == 0 else x
    index = tuple(("s", None, None, -1) if a in axes else FULL for a in range(max(axes) + 1))
    return b.getitem(x, (), index)


def _flip(b, args, kwargs):
    p = bind(args, kwargs, ("m", "axis"))
    x = _array(b, p["m"])
    axis = static(p.get("axis"), "`axis=`")
    axes = tuple(range(_ndim(b, x))) if axis is None else _axes(axis, _ndim(b, x))
    return _flip_axes(b, x, axes)


def _flip_one(axis, least):
    def handler(b, args, kwargs):
        (x,) = positional(args, 1)
        x = _array(b, x)
        if _ndim(b, x) < least:
            raise CallError(f"needs an array of at least {least} dimension"
                            f"{'s' * (least > 1)}", "NumPy raises ValueError here too")
        return _flip_axes(b, x, (axis,))
    return handler


def _roll(b, args, kwargs):
    """np.roll(a, shift, axis=None) with shifts known while compiling: along each axis, the
    last ``shift`` entries moved to the front (a concatenation of two slices, a new array);
    ``axis=None`` rolls the flattened array and restores the shape, as NumPy does."""
    p = bind(args, kwargs, ("a", "shift", "axis"), required=2)
    x, shift, axis = _array(b, p["a"]), static(p["shift"], "`shift=`"), p.get("axis")
    if axis is None:
        flat = _roll_axes(b, b.emit("reshape", (x,), {"shape": (-1,)}), {0: shift})
        return b.emit("reshape", (flat,), {"shape": tuple(b.shape(x))})
    axes, shifts = static(axis, "`axis=`"), shift
    try:
        pairs = np.broadcast(np.asarray(shifts), np.asarray(axes))
    except ValueError:
        raise CallError("'shift' and 'axis' should be scalars or 1D sequences of the same "
                        "length", "NumPy raises ValueError here too") from None
    offsets = {}
    for sh, ax in pairs:
        ax = _axis(int(ax), _ndim(b, x))
        offsets[ax] = offsets.get(ax, 0) + int(sh)
    return _roll_axes(b, x, offsets)


def _roll_axes(b, x, offsets):
    for sh in offsets.values():
        if not isinstance(sh, (int, np.integer)) or isinstance(sh, bool):
            raise CallError(f"takes integer shifts, not {sh!r}", "pass ints")
    shape, out = b.shape(x), x
    for axis, sh in sorted(offsets.items()):
        n = shape[axis]
        k = int(sh) % n if n else 0
        if k:
            out = b.concatenate([_slice_along(b, out, axis, n - k, None),
                                 _slice_along(b, out, axis, None, n - k)], axis=axis)
    return b.emit("copy", (out,)) if out is x else out


# ---- axes ---------------------------------------------------------------------------------
def _swapaxes(b, args, kwargs):
    p = bind(args, kwargs, ("a", "axis1", "axis2"), required=3)
    x = _array(b, p["a"])
    i, j = _axis(p["axis1"], _ndim(b, x), "axis1"), _axis(p["axis2"], _ndim(b, x), "axis2")
    perm = list(range(_ndim(b, x)))
    perm[i], perm[j] = j, i
    return b.emit("transpose", (x,), {"axes": tuple(perm)})


def _moveaxis(b, args, kwargs):
    """np.moveaxis(a, source, destination): a transpose (a view), axes placed as NumPy does."""
    p = bind(args, kwargs, ("a", "source", "destination"), required=3)
    x = _array(b, p["a"])
    source = _axes(p["source"], _ndim(b, x), "source")
    destination = _axes(p["destination"], _ndim(b, x), "destination")
    if len(source) != len(destination):
        raise CallError("`source` and `destination` arguments must have the same number of "
                        "elements", "NumPy raises ValueError here too")
    order = [n for n in range(_ndim(b, x)) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return b.emit("transpose", (x,), {"axes": tuple(order)})


def _method_swapaxes(b, x, args, kwargs):
    return _swapaxes(b, [x, *args], kwargs)


# ---- creation -----------------------------------------------------------------------------
def _like_shape_dtype(b, p, name):
    a = p["a"]
    if p.get("order", "K") not in ("K", "C", "A") or p.get("subok", True) is not True:
        raise CallError("supports only C-ordered arrays here", f"call np.{name}(a) or add dtype=")
    dtype = dtype_arg(p["dtype"]) if p.get("dtype") is not None else (
        a.aval.dtype if isinstance(a, Value) else np.asarray(a).dtype.name)
    if p.get("shape") is not None:
        return shape_arg(p["shape"]), dtype
    return (tuple(b.shape(a)) if isinstance(a, Value) else np.shape(a)), dtype


def _full_like(b, args, kwargs):
    """np.full_like(a, fill_value, dtype=None): ``np.full`` of ``a``'s shape and dtype (the
    fill value cast to it, as NumPy's copy does); a traced fill value gets its gradient."""
    p = bind(args, kwargs, ("a", "fill_value", "dtype", "order", "subok", "shape"), required=2)
    shape, dtype = _like_shape_dtype(b, p, "full_like")
    return b.emit("full", (p["fill_value"],), {"shape": shape, "dtype": dtype})


def _empty_like(b, args, kwargs):
    """np.empty_like(a, dtype=None): zeros of ``a``'s shape and dtype. NumPy leaves the memory
    uninitialised; zeros make every run give the same values, and code that reads them before
    writing (a bug in NumPy) reads 0 here."""
    p = bind(args, kwargs, ("a", "dtype", "order", "subok", "shape"))
    shape, dtype = _like_shape_dtype(b, p, "empty_like")
    return b.emit("zeros", (), {"shape": shape, "dtype": dtype})


# ---- stacking -----------------------------------------------------------------------------
def _items(b, p, name):
    items = p["tup"]
    if not isinstance(items, (tuple, list)) or not items:
        raise CallError("takes a non-empty list or tuple of arrays here",
                        f"write np.{name}([a, b, ...])")
    return [_array(b, item) for item in items]


def _at_least(b, x, shape):
    return x if tuple(b.shape(x)) == shape else b.emit("reshape", (x,), {"shape": shape})


def _at_least_2d(b, x, row):
    """A 0-d ``x`` as (1, 1), a 1-D one as a row (1, n) or a column (n, 1), others as they are."""
    shape = tuple(b.shape(x))
    if len(shape) < 2:
        shape = (1, 1) if not shape else (1, *shape) if row else (*shape, 1)
    return _at_least(b, x, shape)


def _vstack(b, args, kwargs):
    """np.vstack: rows (1-D arrays as (1, n), as np.atleast_2d) joined along axis 0."""
    items = _items(b, bind(args, kwargs, ("tup",)), "vstack")
    return b.concatenate([_at_least_2d(b, x, row=True) for x in items], axis=0)


def _hstack(b, args, kwargs):
    """np.hstack: 1-D arrays joined end to end (0-d ones as length 1), others along axis 1."""
    items = _items(b, bind(args, kwargs, ("tup",)), "hstack")
    items = [_at_least(b, x, (1,)) if _ndim(b, x) == 0 else x for x in items]
    return b.concatenate(items, axis=0 if _ndim(b, items[0]) == 1 else 1)


def _column_stack(b, args, kwargs):
    """np.column_stack: 1-D arrays as columns ((n,) as (n, 1)), 2-D ones as they are."""
    items = _items(b, bind(args, kwargs, ("tup",)), "column_stack")
    return b.concatenate([_at_least_2d(b, x, row=False) for x in items], axis=1)


# ---- elementwise compositions ---------------------------------------------------------------
def _logaddexp(b, args, kwargs):
    """``log(exp(a) + exp(b))`` as NumPy's npy_logaddexp computes it, without overflow:
    ``max(a, b) + log1p(exp(-|a - b|))``, and ``a + log(2)`` at a tie (where ``a - b`` would
    be NaN, with a warning, for two infinities of one sign). The gradient, ``sigmoid(a - b)``
    in ``a``, is 1/2 to each at a tie, as PyTorch's (np.maximum's rule shares it; ``|a - b|``
    has slope 0 there)."""
    x, y = positional(args, 2)
    top, tie = b.emit("maximum", (x, y)), b.emit("equal", (x, y))
    apart = [b.emit("where", (tie, 0.0, v)) for v in (x, y)]   # no inf - inf at a tie
    gap = b.emit("abs", (b.emit("subtract", tuple(apart)),))
    tail = b.emit("log1p", (b.emit("exp", (b.emit("negative", (gap,)),)),))
    out = b.emit("add", (top, tail))
    return b.emit("asarray", (out,)) if isinstance(out, Value) and out.aval.is_scalar else out


def _round(b, args, kwargs):
    """np.round(a, decimals=0) (np.around, a.round()): ``rint``, and for other ``decimals``
    NumPy's ``rint(a * 10**d) / 10**d`` (``rint(a / 10**-d) * 10**-d`` for negative d). Its
    derivative is 0, as PyTorch's."""
    p = bind(args, kwargs, ("a", "decimals", "out"))
    if p.get("out") is not None:
        raise CallError("does not support `out=` here", "use the returned value")
    x, d = p["a"], static(p.get("decimals", 0), "`decimals=`")
    if not isinstance(d, (int, np.integer)):
        raise CallError(f"takes int decimals, not {d!r}", "pass an int")
    if not isinstance(x, Value):
        return np.round(x, d)
    if np.dtype(x.aval.dtype).kind in "iub":   # NumPy returns integers as they are
        if d < 0:
            raise CallError("of integers to negative decimals is not supported",
                            "convert to float first (x.astype(float))")
        return b.emit("asarray" if x.aval.is_scalar else "copy", (x,))
    if d == 0:
        return b.emit("rint", (x,))
    scale = 10.0 ** abs(int(d))
    inner, outer = ("multiply", "divide") if d > 0 else ("divide", "multiply")
    return b.emit(outer, (b.emit("rint", (b.emit(inner, (x, scale)),)), scale))


FUNCTIONS = {
    np.var: _var, np.std: _std, np.diff: _diff,
    np.flip: _flip, np.fliplr: _flip_one(1, 2), np.flipud: _flip_one(0, 1),
    np.roll: _roll, np.swapaxes: _swapaxes, np.moveaxis: _moveaxis,
    np.full_like: _full_like, np.empty_like: _empty_like,
    np.vstack: _vstack, np.hstack: _hstack, np.column_stack: _column_stack,
    np.logaddexp: _logaddexp, np.round: _round, np.around: _round,
}
METHODS = {
    "var": lambda b, x, args, kwargs: _var(b, [x, *args], kwargs),
    "std": lambda b, x, args, kwargs: _std(b, [x, *args], kwargs),
    "swapaxes": _method_swapaxes,
    "round": lambda b, x, args, kwargs: _round(b, [x, *args], kwargs),
}
