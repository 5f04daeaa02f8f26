"""More NumPy functions spelled in existing primitives: ``np.average``, ``np.nansum``,
``np.nanmean``, ``np.nanmax``/``np.nanmin``, ``np.take``, ``np.pad`` (constant mode),
``np.cross`` and ``np.polyval``.

Each is written once over ``ops`` (the Builder here, tensors on the tape:
:mod:`adcompiler.tape.reductions_more`), so both record the same primitives and every
derivative is a primitive's rule. Invariants: NumPy's values, shapes and dtypes; NaN entries
get a zero gradient in the ``nan*`` reductions (``np.where`` picks around them, as JAX's);
indices, pad widths, fill values and axes are known while compiling (a traced one is a located
error); ``np.take`` is a gather at positions made while compiling (NumPy's IndexError for one
out of bounds), ``np.pad`` a concatenation with constant pieces cut from NumPy's own
``np.pad`` of zeros (so the fill values, corners included, are NumPy's).
"""

from __future__ import annotations

import numpy as np

from ..ir import Node, Value
from .binding import CallError, bind, static
from .compositions import _array
from .creation import made_while_compiling
from .splits import FULL, axis_in

PAD_HINT = "write the other modes with slices and np.concatenate"


def _axes(axis, ndim):
    """``axis`` (None, an int or a tuple) as a tuple of axes in ``range(ndim)``."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(axis_in(a, ndim) for a in (axis if isinstance(axis, tuple) else (axis,)))


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
    axes = _axes(axis, len(shape))
    if tuple(ops.shape(w)) != tuple(shape[k] for k in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along specified "
                         "axis.")
    order = tuple(int(k) for k in np.argsort(axes))
    if order != tuple(range(len(axes))):
        w = ops.transpose(w, axes=order)
    return ops.reshape(w, shape=tuple(s if k in axes else 1 for k, s in enumerate(shape)))


ZERO_WEIGHTS = "Weights sum to zero, can't be normalized"


def _check_weights(ops, total):
    """NumPy's ZeroDivisionError where a sum of weights is 0: a run-time check (a ``raise_if``
    node) when compiling, raised at once on the tape."""
    zero = ops.any(ops.equal(total, 0.0))
    if isinstance(zero, Value):
        params = {"exception": "ZeroDivisionError", "args": (ZERO_WEIGHTS,), "negate": False}
        ops.target.append(Node("raise_if", (zero,), params, (), ops.source, "forward"))
    elif bool(np.asarray(getattr(zero, "_data", zero))):
        raise ZeroDivisionError(ZERO_WEIGHTS)


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


# ---- np.take --------------------------------------------------------------------------------
def take(ops, x, indices, axis=None):
    """``np.take``: a gather at positions made while compiling (negative ones wrapped, NumPy's
    IndexError out of bounds), of the flattened array for ``axis=None``."""
    if axis is None:
        x, axis = ops.reshape(x, shape=(ops.size(x),)), 0
    axis = axis_in(axis, len(ops.shape(x)))
    positions = np.take(np.arange(ops.shape(x)[axis], dtype=np.intp), indices)
    return ops.getitem(x, (ops.constant(positions, "taken"),), (FULL,) * axis + (("a", 0),))


# ---- np.pad ---------------------------------------------------------------------------------
def pad(ops, x, pad_width, constant_values=0):
    """``np.pad(x, pad_width, constant_values=...)``: along each axis in turn a concatenation
    of the constant before, ``x`` and the constant after (a new array, as NumPy's), the
    constants cut from NumPy's ``np.pad`` of zeros, which also checks the arguments."""
    shape, dtype = tuple(ops.shape(x)), _dtype(ops, x)
    fill = np.pad(np.zeros(shape, dtype), pad_width, mode="constant",
                  constant_values=constant_values)
    widths = np.broadcast_to(np.round(np.asarray(pad_width)).astype(np.intp), (len(shape), 2))
    inner = [slice(int(lo), int(lo) + n) for (lo, _), n in zip(widths, shape)]
    out = x
    for axis, (lo, hi) in enumerate(widths.tolist()):
        before = [slice(None)] * axis
        after = inner[axis + 1:]
        parts = [out]
        if lo:
            piece = fill[tuple(before + [slice(0, lo)] + after)]
            parts.insert(0, ops.constant(np.ascontiguousarray(piece), "pad_before"))
        if hi:
            end = fill.shape[axis]
            piece = fill[tuple(before + [slice(end - hi, end)] + after)]
            parts.append(ops.constant(np.ascontiguousarray(piece), "pad_after"))
        if len(parts) > 1:
            out = ops.concatenate(parts, axis=axis)
    return ops.copy(out) if out is x else out


# ---- np.cross -------------------------------------------------------------------------------
def _component(ops, v, k):
    return ops.getitem(v, (), (("e",), ("i", k)))


def cross(ops, a, b):
    """``np.cross`` along the last axis, NumPy's own steps: 3-vectors (a stack of them, broadcast),
    2-vectors (the z component alone) and one of each (the 2-vector's z taken as 0)."""
    na, nb = (ops.shape(v)[-1] if ops.shape(v) else 0 for v in (a, b))
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n"
                         "(dimension must be 2 or 3)")
    a_, b_ = [_component(ops, a, k) for k in range(na)], [_component(ops, b, k) for k in range(nb)]
    mul, sub = ops.multiply, ops.subtract
    z = sub(mul(a_[0], b_[1]), mul(a_[1], b_[0]))
    if na == nb == 2:
        return z
    if na == 2:
        parts = [mul(a_[1], b_[2]), ops.negative(mul(a_[0], b_[2])), z]
    elif nb == 2:
        parts = [ops.negative(mul(a_[2], b_[1])), mul(a_[2], b_[0]), z]
    else:
        parts = [sub(mul(a_[1], b_[2]), mul(a_[2], b_[1])),
                 sub(mul(a_[2], b_[0]), mul(a_[0], b_[2])), z]
    return ops.stack(parts, axis=-1)


# ---- np.polyval -----------------------------------------------------------------------------
def polyval(ops, p, x):
    """NumPy's Horner loop: ``y = zeros_like(x)``, then ``y = y * x + p[k]`` for each
    coefficient, highest power first."""
    if len(ops.shape(p)) == 0:
        raise CallError("needs the coefficients `p` as a 1-D array or a list",
                        "np.polyval([a, b, c], x)")
    y = ops.zeros_like(x)
    for k in range(ops.shape(p)[0]):
        y = ops.add(ops.multiply(y, x), ops.getitem(p, (), (("i", k),)))
    return y


# ---- np.convolve ---------------------------------------------------------------------------
CONVOLVE_MODES = ("full", "same", "valid")


def convolve(ops, a, v, mode="full"):
    """NumPy's 1-D ``convolve``: ``a`` with ``m - 1`` zeros on both sides, gathered at the
    constant ``(k - i + m - 1)`` positions of each output ``k`` and lag ``i``, times ``v``
    (a matrix-vector product), for the ``k`` the mode keeps."""
    if mode not in CONVOLVE_MODES:
        raise ValueError(f"mode must be one of {list(CONVOLVE_MODES)}, not {mode!r}")
    a, v = (x if ops.shape(x) else ops.reshape(x, shape=(1,)) for x in (a, v))
    if len(ops.shape(a)) != 1 or len(ops.shape(v)) != 1:
        raise ValueError("object too deep for desired array")
    if not ops.size(a) or not ops.size(v):
        raise ValueError(f"{'a' if not ops.size(a) else 'v'} cannot be empty")
    if ops.size(v) > ops.size(a):
        a, v = v, a
    n, m = ops.size(a), ops.size(v)
    zeros = ops.constant(np.zeros(m - 1, _dtype(ops, a)), "zeros")
    padded = ops.concatenate([zeros, a, zeros], axis=0) if m > 1 else a
    first, stop = {"full": (0, n + m - 1), "same": ((m - 1) // 2, (m - 1) // 2 + n),
                   "valid": (m - 1, n)}[mode]
    positions = (np.arange(first, stop)[:, None] - np.arange(m)[None, :] + m - 1).astype(np.intp)
    taken = ops.getitem(padded, (ops.constant(positions, "lags"),), (("a", 0),))
    return ops.dot(taken, v)


# ---- np.interp ------------------------------------------------------------------------------
def _at_index(ops, x, k):
    return ops.getitem(x, (), (("i", k),))


def interp(ops, x, xp, fp, left=None, right=None):
    """NumPy's ``interp`` in float64: the segment ``j`` of each ``x`` (how many ``xp`` are <= it,
    less 1, clipped to the segments), then ``slope * (x - xp[j]) + fp[j]``; ``left``/``right``
    (``fp[0]``/``fp[-1]`` by default) outside ``xp``, ``fp[-1]`` at ``xp[-1]``."""
    f64 = np.dtype(np.float64)
    x, xp, fp = (_as(ops, t, f64) for t in (x, xp, fp))
    left, right = (None if t is None else _as(ops, t, f64) for t in (left, right))
    if len(ops.shape(xp)) != 1 or len(ops.shape(fp)) != 1:
        raise ValueError("object too deep for desired array")
    n = ops.shape(xp)[0]
    if ops.shape(fp)[0] != n:
        raise ValueError("fp and xp are not of the same length.")
    if n == 0:
        raise ValueError("array of sample points is empty")
    first, last = _at_index(ops, fp, 0), _at_index(ops, fp, n - 1)
    out = ops.add(ops.multiply(x, 0.0), last)
    if n > 1:
        shape = tuple(ops.shape(x))
        above = ops.greater_equal(ops.reshape(x, shape=(*shape, 1)), xp)
        j = ops.clip(ops.subtract(ops.sum(above, axis=-1), 1), 0, n - 2)
        j1 = ops.add(j, 1)
        x0, x1 = (ops.getitem(xp, (k,), (("a", 0),)) for k in (j, j1))
        y0, y1 = (ops.getitem(fp, (k,), (("a", 0),)) for k in (j, j1))
        slope = ops.divide(ops.subtract(y1, y0), ops.subtract(x1, x0))
        line = ops.add(ops.multiply(slope, ops.subtract(x, x0)), y0)
        out = ops.where(ops.equal(x, _at_index(ops, xp, n - 1)), last, line)
    out = ops.where(ops.greater(x, _at_index(ops, xp, n - 1)),
                    last if right is None else right, out)
    return ops.where(ops.less(x, _at_index(ops, xp, 0)), first if left is None else left, out)


# ---- the calls ------------------------------------------------------------------------------
def _axis_param(p):
    axis = static(p.get("axis"), "`axis=`")
    return tuple(axis) if isinstance(axis, list) else axis


def _known(b, x, what):
    """``x`` known while compiling: Python values, or an array the function made from literals
    (``np.array([0, 2])``); a module-level array could change in place after compiling."""
    if isinstance(x, Value) and x in b.graph.consts:
        if made_while_compiling(b.graph.consts[x]):
            return b.graph.consts[x]
        raise CallError(f"needs {what} made in the function while compiling, not an array "
                        "from outside it, which could change in place after compiling",
                        "write the indices as a list or np.array([...]) in the function")
    return static(x, what)


def _no_out(kwargs, name):
    for key in ("out", "dtype", "where", "initial"):
        if key in kwargs:
            raise CallError(f"does not take `{key}=` here",
                            f"call np.{name}(a, axis, keepdims=...) and convert the result")


def _average(b, args, kwargs):
    p = bind(args, kwargs, ("a", "axis", "weights", "returned", "keepdims"))
    weights = None if p.get("weights") is None else _array(b, p["weights"])
    returned = static(p.get("returned", False), "`returned=`")
    keepdims = static(p.get("keepdims", False), "`keepdims=`")
    return average(b, _array(b, p["a"]), _axis_param(p), weights, returned, keepdims)


def _nan_call(name, fn):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("a", "axis"))
        _no_out(kwargs, name)
        keepdims = static(kwargs.pop("keepdims", False), "`keepdims=`")
        return fn(b, _array(b, p["a"]), _axis_param(p), keepdims)
    return handler


def _take(b, args, kwargs):
    p = bind(args, kwargs, ("a", "indices", "axis", "out", "mode"), required=2)
    if p.get("out") is not None or p.get("mode", "raise") != "raise":
        raise CallError("takes only `a`, `indices` and `axis` here (mode='raise')",
                        "np.take(a, indices, axis)")
    indices = _known(b, p["indices"], "the indices (a list or an array made while compiling)")
    return take(b, _array(b, p["a"]), indices, _axis_param(p))


def _pad(b, args, kwargs):
    p = bind(args, kwargs, ("array", "pad_width", "mode"), required=2)
    mode = static(p.get("mode", "constant"), "`mode=`")
    if mode != "constant":
        raise CallError(f"supports mode='constant' only, not mode={mode!r}", PAD_HINT)
    values = static(kwargs.pop("constant_values", 0), "`constant_values=`")
    return pad(b, _array(b, p["array"]), _known(b, p["pad_width"], "`pad_width`"), values)


def _cross(b, args, kwargs):
    p = bind(args, kwargs, ("a", "b"), required=2)
    return cross(b, _array(b, p["a"]), _array(b, p["b"]))


def _polyval(b, args, kwargs):
    p = bind(args, kwargs, ("p", "x"), required=2)
    return polyval(b, _array(b, p["p"]), _array(b, p["x"]))


def _convolve(b, args, kwargs):
    p = bind(args, kwargs, ("a", "v", "mode"), required=2)
    mode = static(p.get("mode", "full"), "`mode=`")
    if mode not in CONVOLVE_MODES:
        raise CallError(f"takes mode='full', 'same' or 'valid', not mode={mode!r}",
                        "np.convolve(a, v, mode='same')")
    return convolve(b, _array(b, p["a"]), _array(b, p["v"]), mode)


def _interp(b, args, kwargs):
    p = bind(args, kwargs, ("x", "xp", "fp", "left", "right", "period"), required=3)
    if p.get("period") is not None:
        raise CallError("does not take `period=` here", "wrap x with np.remainder first")
    ends = [None if p.get(k) is None else _array(b, p[k]) for k in ("left", "right")]
    if _dtype(b, _array(b, p["fp"])).kind == "c":
        raise CallError("takes real `fp` only here", "interpolate the real and imaginary parts")
    return interp(b, *(_array(b, p[k]) for k in ("x", "xp", "fp")), *ends)


FUNCTIONS = {
    np.average: _average, np.nansum: _nan_call("nansum", nansum),
    np.nanmean: _nan_call("nanmean", nanmean),
    np.nanmax: _nan_call("nanmax", nan_extreme("max")),
    np.nanmin: _nan_call("nanmin", nan_extreme("min")),
    np.take: _take, np.pad: _pad, np.cross: _cross, np.polyval: _polyval,
    np.convolve: _convolve, np.interp: _interp,
}
