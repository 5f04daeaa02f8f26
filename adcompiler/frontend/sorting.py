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
``np.sort``). The composition is written once on the ``ops`` protocol (:class:`_BuilderOps`
here, ``adcompiler.tape.sorting`` on tensors), so the tape records the same primitives.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..ir import Value
from .binding import CallError, axis_arg, bind, static
from .creation import _stacked, contains_value

_ALL = ("s", None, None, None)


# ---- the composition, on any ops namespace (IR values or tensors) ----------------------------
@lru_cache(maxsize=None)
def sort_positions(shape, axis):
    """The flat positions of the entries whose index along ``axis`` is 0, broadcast over
    ``shape`` (read-only; ``base + order * stride`` are those of the sorted entries)."""
    flat = np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)
    stride = int(np.prod(shape[axis + 1:]))
    out = flat - np.arange(shape[axis], dtype=np.intp).reshape(
        (-1,) + (1,) * (len(shape) - axis - 1)) * stride
    out.flags.writeable = False
    return out


def sort_along(ops, x, axis):
    """``x`` (at least 1-D) sorted along ``axis`` (in ``range(ndim)``), by a stable argsort."""
    shape = tuple(ops.shape(x))
    last = axis == len(shape) - 1
    order = ops.argsort(x, kind="stable") if last else ops.argsort(x, axis=axis, kind="stable")
    if len(shape) == 1:
        return ops.getitem(x, [order], (("a", 0),))
    stride = int(np.prod(shape[axis + 1:]))
    step = order if stride == 1 else ops.multiply(order, stride)
    positions = ops.add(ops.const(sort_positions(shape, axis), "sorted_base"), step)
    return ops.getitem(ops.flat(x), [positions], (("a", 0),))


def take_along(ops, x, indices, axis):
    """NumPy's ``take_along_axis``: ``x[arange(n0)[:, None], indices]`` and so on (the other
    axes' positions made while compiling), broadcast as NumPy's; negative indices wrap."""
    shape, ndim = tuple(ops.shape(x)), len(ops.shape(x))
    if ndim == 1:
        return ops.getitem(x, [indices], (("a", 0),))
    arrays = []
    for dim, n in enumerate(shape):
        if dim == axis:
            arrays.append(indices)
        else:
            arrays.append(ops.const(_grid(n, dim, ndim), f"along{dim}"))
    return ops.getitem(x, arrays, tuple(("a", k) for k in range(ndim)))


@lru_cache(maxsize=None)
def _grid(n, dim, ndim):
    """``arange(n)`` along axis ``dim`` of ``ndim`` (read-only, one per shape)."""
    out = np.arange(n, dtype=np.intp).reshape((1,) * dim + (-1,) + (1,) * (ndim - dim - 1))
    out.flags.writeable = False
    return out


def _at(ops, s, axis, k):
    return ops.getitem(s, (), (_ALL,) * axis + (("i", k),))


def _nan_last(ops, s, axis, n, value):
    """NumPy's NaN check: where the sorted axis ends with a NaN, that NaN."""
    last = _at(ops, s, axis, n - 1)
    return ops.where(ops.isnan(last), last, value)


def median_along(ops, x, axis):
    """The median of float ``x`` along ``axis`` (a non-empty one), NumPy's formula: the mean of
    the middle entry (odd count) or two, so a -0.0 there gives 0.0 and a whole-array median is
    a NumPy scalar; NaN where the axis ends with a NaN (the NaN goes in before the mean)."""
    n = ops.shape(x)[axis]
    s = sort_along(ops, x, axis)
    middle = _slice(ops, s, axis, (n - 1) // 2, n // 2 + 1)
    last = _slice(ops, s, axis, n - 1, n)
    return ops.mean(ops.where(ops.isnan(last), last, middle), axis=axis)


def _slice(ops, s, axis, start, stop):
    return ops.getitem(s, (), (_ALL,) * axis + (("s", start, stop, None),))


def quantile_along(ops, x, q, axis, weak):
    """NumPy's ``'linear'`` quantiles of float ``x`` along ``axis`` at the static ``q`` (an
    array of floats in [0, 1]; ``weak``: it was a Python number), q's axes first. As NumPy's
    ``_quantile``: ``lo = floor((n - 1) * q)``, ``hi = lo + 1``, both the last entry (-1) at the
    top, ``t = (n - 1) * q - lo``, then ``_lerp(s[lo], s[hi], t)`` (so q = 1 at an inf is NaN,
    as NumPy's)."""
    n = ops.shape(x)[axis]
    s = sort_along(ops, x, axis)
    virtual = (n - 1) * q
    lo = np.floor(virtual)
    top = virtual >= n - 1
    lo, hi = np.where(top, -1, lo), np.where(top, -1, lo + 1)
    t = np.asarray(virtual - lo, dtype=virtual.dtype)
    lo, hi = lo.astype(np.intp) % n, hi.astype(np.intp) % n
    if weak:   # the NaN goes in first: the lerp's ufuncs give a NumPy scalar, as NumPy's
        a, b = (_nan_last(ops, s, axis, n, _at(ops, s, axis, int(k))) for k in (lo, hi))
        return _lerp(ops, a, b, float(t), bool(t >= 0.5))
    a, b = (_taken(ops, s, axis, idx) for idx in (lo, hi))
    t = t.reshape(t.shape + (1,) * (len(ops.shape(x)) - 1))
    out = _lerp(ops, a, b, ops.const(t, "gamma"), ops.const(t >= 0.5, "upper"))
    return _nan_last(ops, s, axis, n, out)


def _taken(ops, s, axis, idx):
    """``np.take(s, idx, axis)`` with idx's axes moved to the front (NumPy's quantile order)."""
    tag = "u" if np.unique(idx).size == idx.size else "a"  # distinct: a view of s (internal)
    taken = ops.getitem(s, [ops.const(idx, "rank")], (_ALL,) * axis + ((tag, 0),))
    k, ndim = idx.ndim, len(ops.shape(s))
    if axis == 0 or k == 0:
        return taken
    perm = tuple(range(axis, axis + k)) + tuple(range(axis)) + tuple(range(axis + k, ndim + k - 1))
    return ops.transpose(taken, axes=perm)


def _lerp(ops, a, b, t, upper):
    """NumPy's ``_lerp``: ``a + (b - a) * t``, or ``b - (b - a) * (1 - t)`` where ``t >= 0.5``."""
    diff = ops.subtract(b, a)
    if isinstance(upper, bool):
        return ops.subtract(b, ops.multiply(diff, 1.0 - t)) if upper else \
            ops.add(a, ops.multiply(diff, t))
    low = ops.add(a, ops.multiply(diff, t))
    high = ops.subtract(b, ops.multiply(diff, ops.subtract(1.0, t)))
    return ops.where(upper, high, low)


# ---- the calls ------------------------------------------------------------------------------
class _BuilderOps:
    """The builder's ops, plus graph constants (one per array made while compiling) and the
    flattening reshape (a view)."""

    def __init__(self, b):
        self.b = b

    def __getattr__(self, name):
        return getattr(self.b, name)

    def const(self, array, name):
        for v, data in self.b.graph.consts.items():
            if data is array:
                return v
        return self.b.constant(array, name)

    def flat(self, x):
        return _flattened(self.b, x)


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


def _flattened(b, x):
    """``x.reshape(-1)`` (a view), with its length written out."""
    return b.emit("reshape", (x,), {"shape": (b.size(x),)})


KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


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
        x, axis = _flattened(b, x), 0
    return sort_along(_BuilderOps(b), x, _one_axis(axis, b.ndim(x)))


def _take_along_axis(b, args, kwargs):
    """np.take_along_axis(arr, indices, axis=-1); ``axis=None`` takes from the flattened arr."""
    p = bind(args, kwargs, ("arr", "indices", "axis"), required=2)
    x, indices = _array(b, p["arr"], "arr"), _array(b, p["indices"], "indices")
    axis = axis_arg(p.get("axis", -1))
    if indices.aval.dtype == "object" or np.dtype(indices.aval.dtype).kind not in "iu":
        raise CallError(f"needs integer indices, not {indices.aval}", "use np.argsort's result")
    if axis is None:
        x, axis = _flattened(b, x), 0
    if b.ndim(indices) != b.ndim(x):
        raise CallError("needs `indices` with as many dimensions as `arr`",
                        "NumPy raises ValueError here too")
    return take_along(_BuilderOps(b), x, indices, _one_axis(axis, b.ndim(x)))


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
        x, axis = _flattened(b, x), 0
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
    return _kept(b, median_along(_BuilderOps(b), x, axis), keep)


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
        out = quantile_along(_BuilderOps(b), x, q, axis, weak)
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


FUNCTIONS = {np.sort: _sort, np.take_along_axis: _take_along_axis, np.median: _median,
             np.quantile: _quantile(1), np.percentile: _quantile(100)}
METHODS = {"sort": _method_sort}
