"""Sorting of traced arrays: ``np.sort``, ``np.take_along_axis``, ``np.median``,
``np.quantile``/``np.percentile`` (method ``'linear'``), spelled in primitives that have rules.

Choices: ``np.sort(x, axis)`` is a gather of ``x`` at ``np.argsort(x, axis, kind='stable')``, so
its gradient routes each cotangent entry back to the position its value came from (as PyTorch's
and JAX's). The argsort is *stable* (NumPy's default quicksort is not): at a tie the earlier
entry comes first, so the compiler and the tape pick the same entry for each place (the values
are NumPy's either way). The gather reads the flattened array at ``base + order * stride`` (one
index array, not one per axis); its index is tagged ``("a", 0)``, a copy (a ``("u", k)`` gather
stands for a view to the in-place checks, which would then refuse an update of the sorted or
the original array), so the adjoint adds with ``np.add.at`` (as fast as ``dx[pos] = g`` in
NumPy 2). ``np.take_along_axis`` is NumPy's own fancy index (``arange`` along the other
axes), whose adjoint adds repeated indices up. ``np.median`` is NumPy's: the mean of the
middle entry, or of the middle two, of the sorted axis, and NaN where the axis holds a NaN
(NaNs sort last); its gradient goes to those entries (1/2 each for an even count). ``np.quantile``
interpolates between sorted entries at positions known while compiling (``q`` must be static),
with NumPy's ``_lerp``. ``x.sort()`` sorts an argument in place and is refused (use
``np.sort``). The composition is written once on the ``ops`` protocol
(:mod:`adcompiler.compositions.sorting`, run here on :class:`.compositions.BuilderOps`, on
tensors by ``adcompiler.tape.sorting``), so the tape records the same primitives; this module
binds the arguments and refuses, located, what it cannot compile.
"""

from __future__ import annotations

import numpy as np

from ...compositions.axes import flattened
from ...compositions.sorting import (KINDS, median_along, partition_along, quantile_along,
                                    sort_along, take_along)
from ...ir import Value
from .binding import CallError, axis_arg, bind, static
from .compositions import BuilderOps
from .creation import _stacked, contains_value


# ---- the calls ------------------------------------------------------------------------------
def _float(b, x):
    """``x`` as a float array (NumPy's median and quantile of integers are float64)."""
    return x if x.aval.is_float else b.emit("astype", (x,), {"dtype": "float64"})


def _one_axis(axis, ndim, what="one axis (an int) or None"):
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise CallError(f"takes {what}", "NumPy takes no tuple here")
    if not -ndim <= axis < ndim:
        raise CallError(f"got axis {axis} for an array of {ndim} dimensions",
                        "NumPy raises AxisError here")
    return int(axis) % ndim


def _sort(b, args, kwargs):
    """np.sort(a, axis=-1, kind=None, order=None, *, stable=None): see the module docstring."""
    p = bind(args, kwargs, ("a", "axis", "kind", "order"))
    kind, stable = static(p.get("kind"), "`kind=`"), static(kwargs.pop("stable", None), "`stable=`")
    if p.get("order") is not None:
        raise CallError("with `order=` (fields of a structured array) is not supported",
                        "sort plain arrays of numbers")
    if kind not in KINDS or stable not in (None, True, False):
        raise CallError(f"with kind={kind!r} is not NumPy's", "leave kind= out: the sorted "
                        "values are the same for every kind, and the sort here is stable")
    x, axis = _array(b, p["a"], "arr"), axis_arg(p.get("axis", -1))
    if axis is None:
        x, axis = flattened(b, x), 0
    return sort_along(BuilderOps(b), x, _one_axis(axis, b.ndim(x)))


def _partition_args(b, args, kwargs):
    """The operand, ``kth`` (an int or a tuple of ints, known while compiling) and one axis of
    np.partition / np.argpartition (a, kth, axis=-1, kind='introselect', order=None)."""
    p = bind(args, kwargs, ("a", "kth", "axis", "kind", "order"), required=2)
    if p.get("order") is not None or p.get("kind", "introselect") != "introselect":
        raise CallError("takes no `order=` and only kind='introselect' here",
                        "leave them out")
    kth = static(p["kth"], "`kth=`")
    ints = kth if isinstance(kth, (tuple, list)) else (kth,)
    if not ints or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool)
                           for k in ints):
        raise CallError(f"takes an int kth or a sequence of ints, not {kth!r}", "pass ints")
    x, axis = _array(b, p["a"], "arr"), axis_arg(p.get("axis", -1))
    if axis is None:
        x, axis = flattened(b, x), 0
    axis = _one_axis(axis, b.ndim(x))
    n = b.shape(x)[axis]
    if not all(-n <= k < n for k in ints):
        raise CallError(f"kth {kth!r} is out of bounds for an axis of {n}",
                        "NumPy raises ValueError here too")
    kth = tuple(int(k) for k in ints) if isinstance(kth, (tuple, list)) else int(kth)
    return x, kth, axis


def _partition(b, args, kwargs):
    """np.partition: a gather at np.argpartition's positions, so each value's gradient goes
    to the entry it came from (:func:`partition_along`)."""
    x, kth, axis = _partition_args(b, args, kwargs)
    return partition_along(BuilderOps(b), x, kth, axis)


def _argpartition(b, args, kwargs):
    """np.argpartition: integer positions, no gradient."""
    x, kth, axis = _partition_args(b, args, kwargs)
    return b.emit("argpartition", (x,), {"kth": kth, "axis": axis})


def _take_along_axis(b, args, kwargs):
    """np.take_along_axis(arr, indices, axis=-1); ``axis=None`` takes from the flattened arr."""
    p = bind(args, kwargs, ("arr", "indices", "axis"), required=2)
    x, indices = _array(b, p["arr"], "arr"), _array(b, p["indices"], "indices")
    axis = axis_arg(p.get("axis", -1))
    if indices.aval.dtype == "object" or np.dtype(indices.aval.dtype).kind not in "iu":
        raise CallError(f"needs integer indices, not {indices.aval}", "use np.argsort's result")
    if axis is None:
        x, axis = flattened(b, x), 0
    if b.ndim(indices) != b.ndim(x):
        raise CallError("needs `indices` with as many dimensions as `arr`",
                        "NumPy raises ValueError here too")
    return take_along(BuilderOps(b), x, indices, _one_axis(axis, b.ndim(x)))


def _reduce_params(b, args, kwargs, names, what):
    """The array (float), its axis (an int, the flattened array's 0 for None) and keepdims."""
    p = bind(args, kwargs, names, required=2 if names[1] == "q" else 1)
    for extra in ("out", "overwrite_input", "weights"):
        if static(p.get(extra, kwargs.pop(extra, None)), f"`{extra}=`") not in (None, False):
            raise CallError(f"with `{extra}=` is not supported", "use the returned value")
    x, axis = _array(b, p["a"], "arr"), axis_arg(p.get("axis"))
    keepdims = bool(static(p.get("keepdims", False), "`keepdims=`"))
    shape = b.shape(x)
    if axis is None:
        x, axis = flattened(b, x), 0
    axis = _one_axis(axis, b.ndim(x), "one axis (an int) or None; NumPy's tuple of axes "
                     "is not supported here (move them last and reshape)")
    if b.shape(x)[axis] == 0:
        raise CallError("of an empty axis is NaN in NumPy, with no gradient", what)
    return p, _float(b, x), axis, (keepdims, shape, p.get("axis"))


def _kept(b, out, keep):
    """keepdims: the reduced axis kept as 1 (all of them for axis=None)."""
    keepdims, shape, axis = keep
    if not keepdims:
        return out
    if axis is None:  # q's axes, then a 1 for each of the array's
        return b.emit("reshape", (out,), {"shape": tuple(b.shape(out)) + (1,) * len(shape)})
    axis = _one_axis(axis, len(shape))
    return b.emit("expand_dims", (out,), {"axis": axis + b.ndim(out) - len(shape) + 1})


def _median(b, args, kwargs):
    """np.median(a, axis=None, out=None, overwrite_input=False, keepdims=False)."""
    names = ("a", "axis", "out", "overwrite_input", "keepdims")
    _, x, axis, keep = _reduce_params(b, args, kwargs, names, "take the median of a non-empty axis")
    return _kept(b, median_along(BuilderOps(b), x, axis), keep)


def _quantile(scale):
    """np.quantile(a, q, ...) (scale 1) and np.percentile (scale 100), method='linear'."""
    def handler(b, args, kwargs):
        names = ("a", "q", "axis", "out", "overwrite_input", "method", "keepdims")
        p, x, axis, keep = _reduce_params(b, args, kwargs, names, "use a non-empty axis")
        method = static(p.get("method", kwargs.pop("interpolation", "linear")), "`method=`")
        if method != "linear":
            raise CallError(f"with method={method!r} is not supported",
                            "only the default method='linear' has a rule here")
        q = p.get("q")
        if contains_value(q):
            raise CallError("needs `q` as Python numbers: the interpolation weights are made "
                            "while compiling", "write the quantiles in the call, e.g. "
                            "np.quantile(x, [0.1, 0.9])")
        weak = type(q) in (int, float)
        q = np.asarray(q, dtype=None if np.asarray(q).dtype.kind == "f" else np.float64)
        q = np.true_divide(q, scale) if scale != 1 else q
        if not np.all((q >= 0) & (q <= 1)):
            raise CallError(f"needs q in [0, {scale}], got {p['q']!r}", "NumPy raises ValueError")
        out = quantile_along(BuilderOps(b), x, q, axis, weak)
        return _kept(b, out, keep)
    return handler


def _array(b, x, name):
    """``x`` as a Value: a list of traced values is their ``np.stack``; a list or number the
    function spells is a graph constant (sorted where the code runs, as a module's array is)."""
    if isinstance(x, (list, tuple)) and contains_value(x):
        return _stacked(b, x)
    return x if isinstance(x, Value) else b.constant(np.asarray(x), name)


def _method_sort(b, x, args, kwargs):
    """``y = x.sort()``: in place (and None); a bare ``x.sort()`` is refused by the fence."""
    raise CallError("sorts the array in place, which is not supported",
                    "write `x = np.sort(x)` (np.sort returns a sorted copy)")


FUNCTIONS = {np.sort: _sort, np.partition: _partition, np.argpartition: _argpartition,
             np.take_along_axis: _take_along_axis, np.median: _median,
             np.quantile: _quantile(1), np.percentile: _quantile(100)}
METHODS = {"sort": _method_sort}
