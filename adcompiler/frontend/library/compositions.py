"""The compiler's side of the NumPy functions written once in :mod:`adcompiler.compositions`:
the operands as Values (:func:`_array`), the Builder's extra ops (:class:`BuilderOps`), and the
handlers of ``np.var``/``std``, ``np.diff``, ``np.gradient``, ``np.flip``, ``np.roll``,
``np.swapaxes``/``moveaxis``, ``np.vstack``/``row_stack``/``hstack``/``column_stack``,
``np.logaddexp``, ``np.nan_to_num`` and ``np.round``, with ``np.full_like``/``empty_like``/
``empty`` (one primitive each).

Invariants: a handler binds its arguments as NumPy's signature does, reads the static ones
(axes, shifts, ``ddof``) while compiling and refuses what it cannot compile with a located
error in its own words, then calls the shared composition, so the compiler records what the
tape records; each gives NumPy's values and dtype, a view where NumPy returns one (``flip``,
``swapaxes``) and a new array where NumPy copies (``roll``).
"""

from __future__ import annotations

import numpy as np

from ...compositions import axes as shared_axes
from ...compositions import elementwise, shifts, stacks, statistics
from ...ir import Node, Value
from .binding import CallError, axis_arg, bind, dtype_arg, positional, shape_arg, static
from .creation import _stacked, contains_value, made


def _array(b, x):
    """``x`` as a Value: a traced value as it is, a list holding traced values stacked, anything
    else (numbers, lists of numbers) a constant made while compiling."""
    if isinstance(x, Value):
        return x
    if contains_value(x):
        return _stacked(b, x)
    return b.constant(made(np.asarray(x)))


class BuilderOps:
    """The Builder's ops plus what some compositions ask beyond the templates' protocol: one
    graph constant per array object (``const``) and a run-time check (``fail_if``)."""

    def __init__(self, b):
        self.b = b

    def __getattr__(self, name):
        return getattr(self.b, name)

    def const(self, array, name):
        for v, data in self.b.graph.consts.items():
            if data is array:
                return v
        return self.b.constant(array, name)

    def fail_if(self, flag, exception, message):
        """A ``raise_if`` node: ``exception(message)`` where the 0-d ``flag`` holds."""
        params = {"exception": exception.__name__, "args": (message,), "negate": False}
        self.b.target.append(Node("raise_if", (flag,), params, (), self.b.source, "forward"))


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


def _var(b, args, kwargs):
    x, axis, ddof, keepdims = _variance_args(args, kwargs)
    return statistics.variance(b, _array(b, x), axis, ddof, keepdims)


def _std(b, args, kwargs):
    """``sqrt(var)`` with derivative 0 where the variance is 0 (:func:`statistics.std`)."""
    x, axis, ddof, keepdims = _variance_args(args, kwargs)
    return statistics.std(b, _array(b, x), axis, ddof, keepdims)


# ---- differences, flips, rolls --------------------------------------------------------------
def _diff(b, args, kwargs):
    """np.diff(a, n=1, axis=-1, prepend, append): :func:`shifts.diff`."""
    p = bind(args, kwargs, ("a", "n", "axis", "prepend", "append"))
    x, n = _array(b, p["a"]), static(p.get("n", 1), "`n=`")
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise CallError(f"order must be a non-negative int, got {n!r}", "NumPy raises too")
    if _ndim(b, x) == 0:
        raise CallError("requires input that is at least one dimensional", "NumPy raises too")
    axis = _axis(p.get("axis", -1), _ndim(b, x))
    if n == 0:
        return x
    before, after = (None if p.get(k) is None else shifts.edge(b, _array(b, p[k]), x, axis)
                     for k in ("prepend", "append"))
    return shifts.diff(b, x, n, axis, before, after)


def _gradient(b, args, kwargs):
    """np.gradient(f, *varargs, axis=None, edge_order=1) with uniform spacings (Python
    numbers, one for all axes or one per axis): :func:`shifts.gradient_along` per axis, a tuple
    of arrays for more than one axis, as NumPy's."""
    if not args:
        raise CallError("takes the array first", "np.gradient(f)")
    f, spacings = _array(b, args[0]), list(args[1:])
    ndim = _ndim(b, f)
    axis = static(kwargs.pop("axis", None), "`axis=`")
    axes = tuple(range(ndim)) if axis is None else _axes(axis, ndim)
    edge_order = static(kwargs.pop("edge_order", 1), "`edge_order=`")
    if edge_order not in (1, 2):
        raise CallError("'edge_order' greater than 2 not supported", "NumPy raises too")
    if any(isinstance(h, Value) or np.ndim(h) != 0 for h in spacings):
        raise CallError("takes uniform spacings (Python numbers) here, not coordinate arrays "
                        "or traced spacings", "pass one number per axis, or differentiate "
                        "with np.diff(f) / np.diff(x)")
    if len(spacings) not in (0, 1, len(axes)):
        raise CallError("invalid number of arguments", "NumPy raises TypeError here too")
    steps = [float(spacings[0] if len(spacings) == 1 else spacings[k] if spacings else 1.0)
             for k in range(len(axes))]
    if not f.aval.is_float:
        f = b.emit("astype", (f,), {"dtype": "float64"})
    out = []
    for a, dx in zip(axes, steps):
        if b.shape(f)[a] < edge_order + 1:
            raise CallError("Shape of array too small to calculate a numerical gradient, at "
                            "least (edge_order + 1) elements are required.",
                            "NumPy raises ValueError here too")
        out.append(shifts.gradient_along(b, f, a, dx, edge_order))
    return out[0] if len(out) == 1 else tuple(out)


def _flip(b, args, kwargs):
    p = bind(args, kwargs, ("m", "axis"))
    x = _array(b, p["m"])
    axis = static(p.get("axis"), "`axis=`")
    axes = tuple(range(_ndim(b, x))) if axis is None else _axes(axis, _ndim(b, x))
    return shifts.flip(b, x, axes)


def _flip_one(axis, least):
    def handler(b, args, kwargs):
        (x,) = positional(args, 1)
        x = _array(b, x)
        if _ndim(b, x) < least:
            raise CallError(f"needs an array of at least {least} dimension"
                            f"{'s' * (least > 1)}", "NumPy raises ValueError here too")
        return shifts.flip(b, x, (axis,))
    return handler


def _roll(b, args, kwargs):
    """np.roll(a, shift, axis=None) with shifts known while compiling (:func:`shifts.roll`)."""
    p = bind(args, kwargs, ("a", "shift", "axis"), required=2)
    x, shift, axis = _array(b, p["a"]), static(p["shift"], "`shift=`"), p.get("axis")
    if axis is None:
        _integer_shifts({0: shift})
        return shifts.roll_flat(b, x, shift)
    axes = static(axis, "`axis=`")
    try:
        pairs = np.broadcast(np.asarray(shift), np.asarray(axes))
    except ValueError:
        raise CallError("'shift' and 'axis' should be scalars or 1D sequences of the same "
                        "length", "NumPy raises ValueError here too") from None
    offsets = shifts.roll_offsets(pairs, _ndim(b, x), _axis)
    _integer_shifts(offsets)
    return shifts.roll(b, x, offsets)


def _integer_shifts(offsets):
    for sh in offsets.values():
        if not isinstance(sh, (int, np.integer)) or isinstance(sh, bool):
            raise CallError(f"takes integer shifts, not {sh!r}", "pass ints")


# ---- axes ---------------------------------------------------------------------------------
def _swapaxes(b, args, kwargs):
    p = bind(args, kwargs, ("a", "axis1", "axis2"), required=3)
    x = _array(b, p["a"])
    i, j = _axis(p["axis1"], _ndim(b, x), "axis1"), _axis(p["axis2"], _ndim(b, x), "axis2")
    return shared_axes.swapaxes(b, x, i, j)


def _moveaxis(b, args, kwargs):
    """np.moveaxis(a, source, destination): a transpose (a view), axes placed as NumPy does."""
    p = bind(args, kwargs, ("a", "source", "destination"), required=3)
    x = _array(b, p["a"])
    source = _axes(p["source"], _ndim(b, x), "source")
    destination = _axes(p["destination"], _ndim(b, x), "destination")
    if len(source) != len(destination):
        raise CallError("`source` and `destination` arguments must have the same number of "
                        "elements", "NumPy raises ValueError here too")
    return shared_axes.moveaxis(b, x, source, destination)


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


def _empty(b, args, kwargs):
    """np.empty(shape, dtype=float): zeros, as :func:`_empty_like` (code that writes every
    entry before reading it, NumPy's contract, gets NumPy's values)."""
    p = bind(args, kwargs, ("shape", "dtype", "order"))
    if p.get("order", "C") != "C":
        raise CallError("supports only order='C'", "leave order= out")
    dtype = dtype_arg(p["dtype"]) if p.get("dtype") is not None else "float64"
    return b.emit("zeros", (), {"shape": shape_arg(p["shape"]), "dtype": dtype})


# ---- stacking -----------------------------------------------------------------------------
def _items(b, p, name):
    items = p["tup"]
    if isinstance(items, Value) and _ndim(b, items) >= 1 and b.shape(items)[0] > 0:
        return items   # one array: its rows are the items (the callers' *_of_rows)
    if not isinstance(items, (tuple, list)) or not items:
        raise CallError("takes a non-empty list or tuple of arrays here",
                        f"write np.{name}([a, b, ...])")
    return [_array(b, item) for item in items]


def _vstack(b, args, kwargs):
    """np.vstack (np.row_stack): rows (1-D arrays as (1, n), as np.atleast_2d) joined along
    axis 0; of one array, its rows."""
    items = _items(b, bind(args, kwargs, ("tup",)), "vstack")
    return stacks.vstack_of_rows(b, items) if isinstance(items, Value) else \
        stacks.vstack(b, items)


def _hstack(b, args, kwargs):
    """np.hstack: 1-D arrays joined end to end (0-d ones as length 1), others along axis 1;
    of one array, its rows."""
    items = _items(b, bind(args, kwargs, ("tup",)), "hstack")
    return stacks.hstack_of_rows(b, items) if isinstance(items, Value) else \
        stacks.hstack(b, items)


def _column_stack(b, args, kwargs):
    """np.column_stack: 1-D arrays as columns ((n,) as (n, 1)), 2-D ones as they are."""
    items = _items(b, bind(args, kwargs, ("tup",)), "column_stack")
    if isinstance(items, Value):
        raise CallError("of one array is not supported", "pass a list: np.column_stack([a, b])")
    return stacks.column_stack(b, items)


# ---- elementwise compositions ---------------------------------------------------------------
def _logaddexp(b, args, kwargs):
    """``log(exp(a) + exp(b))`` without overflow (:func:`elementwise.logaddexp`), a NumPy
    scalar for numbers as the ufunc gives."""
    out = elementwise.logaddexp(b, *positional(args, 2))
    return b.emit("asarray", (out,)) if isinstance(out, Value) and out.aval.is_scalar else out


def _nan_to_num(b, args, kwargs):
    """np.nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None): a new array (copy=False
    would write into ``x``, refused); integers and booleans as they are (a copy)."""
    p = bind(args, kwargs, ("x", "copy", "nan", "posinf", "neginf"))
    if not static(p.get("copy", True), "`copy=`"):
        raise CallError("with copy=False writes into its argument, which is not supported",
                        "use the returned value of np.nan_to_num(x)")
    x = _array(b, p["x"])
    values = [static(p.get(k, d), f"`{k}=`") for k, d in (("nan", 0.0), ("posinf", None),
                                                          ("neginf", None))]
    if any(isinstance(v, Value) or (v is not None and np.ndim(v) != 0) for v in values):
        raise CallError("takes Python numbers for nan=, posinf= and neginf= here",
                        "use np.where(np.isnan(x), value, x) for traced values")
    if not x.aval.is_float:
        return b.emit("copy", (x,))
    return elementwise.nan_to_num(b, x, *values)


def _round(b, args, kwargs):
    """np.round(a, decimals=0) (np.around, a.round()): :func:`elementwise.round_float`;
    integers as they are, as NumPy returns them."""
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
    return elementwise.round_float(b, x, d)


FUNCTIONS = {
    np.var: _var, np.std: _std, np.diff: _diff,
    np.flip: _flip, np.fliplr: _flip_one(1, 2), np.flipud: _flip_one(0, 1),
    np.roll: _roll, np.swapaxes: _swapaxes, np.moveaxis: _moveaxis,
    np.full_like: _full_like, np.empty_like: _empty_like, np.empty: _empty,
    np.vstack: _vstack, np.hstack: _hstack, np.column_stack: _column_stack,
    np.logaddexp: _logaddexp, np.round: _round, np.around: _round,
    np.gradient: _gradient, np.nan_to_num: _nan_to_num,
}
if hasattr(np, "row_stack"):   # NumPy's deprecated name of vstack (gone in NumPy 2.5)
    FUNCTIONS[np.row_stack] = _vstack
METHODS = {
    "var": lambda b, x, args, kwargs: _var(b, [x, *args], kwargs),
    "std": lambda b, x, args, kwargs: _std(b, [x, *args], kwargs),
    "swapaxes": _method_swapaxes,
    "round": lambda b, x, args, kwargs: _round(b, [x, *args], kwargs),
}
