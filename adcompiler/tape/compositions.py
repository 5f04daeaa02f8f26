"""The tape's side of the NumPy functions written once in :mod:`adcompiler.compositions`: the
ops they run on (:class:`TapeOps`), operands as tensors (:func:`tensor_of`), and ``np.var``/
``std``, ``np.diff``, ``np.flip``/``fliplr``/``flipud``, ``np.roll``, ``np.swapaxes``/
``moveaxis``, ``np.vstack``/``hstack``/``column_stack``, ``np.logaddexp`` and ``np.linalg.norm`` on
tensors.

Invariants: each runs the composition the compiler runs, so the tape records the primitives the
compiler emits, in the same order, its gradient is the compiler's (the choices at ``std``'s zero
variance and ``logaddexp``'s tie included) and every derivative is a ``templates`` rule; views
are made where NumPy makes them (``flip`` a reversed slice, never the operand itself,
``swapaxes`` a transpose) through :mod:`.views`. Arguments are read as NumPy reads them and
NumPy's errors are NumPy's; what the compiler refuses (``var(where=)``) is refused here too.

Layering: above :mod:`.numpy_api` and :mod:`.views`, into whose tables it registers its
functions; :mod:`.methods` (``var``, ``std``, ``swapaxes``) and the modules of other NumPy
functions (:mod:`.sorting`, :mod:`.splits`...) build on it.
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions import axes as shared_axes
from adcompiler.compositions import elementwise, norms, shifts, stacks, statistics
from adcompiler.compositions.axes import axis_in

from . import numpy_api, views
from .record import TensorOps
from .tensor import Tensor
from .xp import array_module


class TapeOps(TensorOps):
    """The templates' ops on tensors, with views where NumPy makes them (a basic index, a
    reshape, a broadcast, a transpose, a squeeze), index arrays handed to ``getitem`` as plain arrays,
    constants on the device of ``like`` (a tensor), and checks raised at once."""

    def __init__(self, like=None):
        self.like = like

    def getitem(self, x, arrays, index):
        if not arrays:
            return views.make("getitem", x, {"index": index})
        plain = [a._data if isinstance(a, Tensor) else a for a in arrays]
        return super().getitem(x, plain, index)

    def reshape(self, x, shape):
        return views.make("reshape", x, {"shape": tuple(shape)})

    def broadcast_to(self, x, shape):
        return views.make("broadcast_to", x, {"shape": tuple(shape)})

    def transpose(self, x, axes):
        return views.make("transpose", x, {"axes": tuple(axes)})

    def squeeze(self, x, axis):
        return views.make("squeeze", x, {"axis": axis})

    def constant(self, array, name="const"):
        return array_module(self.like._data).asarray(array) if self.like is not None else array

    const = constant

    def fail_if(self, flag, exception, message):
        if bool(np.asarray(getattr(flag, "_data", flag))):
            raise exception(message)


OPS = TapeOps()   # for the compositions that make no constants


def tensor_of(x):
    """``x`` as a tensor: a constant (a number, a list, an array) one that needs no grad."""
    return x if isinstance(x, Tensor) else Tensor._make(np.asarray(x))


def _given(value) -> bool:
    """Whether an optional argument was passed (NumPy's default is ``np._NoValue``)."""
    return value is not None and value is not np._NoValue


def _axes(axis, ndim):
    axes = shared_axes.axes_in(axis, ndim)
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    return axes


def _refuse(name, **given):
    extra = [f"{k}=" for k, v in given.items() if _given(v)]
    if extra:
        raise TypeError(f"np.{name}: {', '.join(extra)} not supported on tensors")


def unsupported(name, **given):
    """NotImplementedError for a keyword the compiler refuses with a located error (``out=``)."""
    for key, value in given.items():
        if _given(value):
            raise NotImplementedError(f"np.{name}: `{key}=` is not supported on the tape")


# ---- variance and standard deviation --------------------------------------------------------
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """:func:`statistics.variance`; ``ddof`` or NumPy 2's ``correction``."""
    _refuse("var", dtype=dtype, out=out, where=where, mean=mean)
    return statistics.variance(OPS, *_variance_args(a, axis, ddof, correction, keepdims))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """:func:`statistics.std`: sqrt's value, and a gradient of 0 where the variance is 0."""
    _refuse("std", dtype=dtype, out=out, where=where, mean=mean)
    return statistics.std(OPS, *_variance_args(a, axis, ddof, correction, keepdims))


def _variance_args(a, axis, ddof, correction, keepdims):
    if _given(correction):
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    axis = tuple(axis) if isinstance(axis, list) else axis
    return tensor_of(a), axis, ddof, bool(keepdims) and keepdims is not np._NoValue


# ---- differences, flips, rolls --------------------------------------------------------------
def diff(a, n=1, axis=-1, prepend=None, append=None):
    """:func:`shifts.diff`; 0-d ``prepend``/``append`` are broadcast to a slice."""
    x = tensor_of(a)
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = axis_in(axis, x.ndim)
    if n == 0:
        return x
    before, after = (shifts.edge(OPS, tensor_of(v), x, axis) if _given(v) else None
                     for v in (prepend, append))
    return shifts.diff(OPS, x, n, axis, before, after)


def _flipped(x, axes):
    out = shifts.flip(OPS, x, axes)
    return x[()] if out is x else out   # a view, never the operand itself


def flip(m, axis=None):
    x = tensor_of(m)
    return _flipped(x, tuple(range(x.ndim)) if axis is None else _axes(axis, x.ndim))


def _flip_one(axis, least):
    def flip_one(m):
        x = tensor_of(m)
        if x.ndim < least:
            raise ValueError(f"Input must be >= {least}-d.")
        return _flipped(x, (axis,))
    return flip_one


def roll(a, shift, axis=None):
    """:func:`shifts.roll`; ``axis=None`` rolls the flattened array and restores the shape."""
    x = tensor_of(a)
    if axis is None:
        return shifts.roll_flat(OPS, x, shift)
    pairs = np.broadcast(np.asarray(shift), np.asarray(axis))
    return shifts.roll(OPS, x, shifts.roll_offsets(pairs, x.ndim, axis_in))


# ---- axes -----------------------------------------------------------------------------------
def swapaxes(a, axis1, axis2):
    x = tensor_of(a)
    return shared_axes.swapaxes(OPS, x, axis_in(axis1, x.ndim), axis_in(axis2, x.ndim))


def moveaxis(a, source, destination):
    x = tensor_of(a)
    source, destination = _axes(source, x.ndim), _axes(destination, x.ndim)
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    return shared_axes.moveaxis(OPS, x, source, destination)


# ---- stacking -------------------------------------------------------------------------------
def _stack_args(name, dtype=None, casting="same_kind"):
    _refuse(name, dtype=dtype)
    if casting != "same_kind":
        raise TypeError(f"np.{name}: casting= not supported on tensors")


def vstack(tup, *, dtype=None, casting="same_kind"):
    _stack_args("vstack", dtype, casting)
    return stacks.vstack(OPS, [tensor_of(x) for x in tup])


def hstack(tup, *, dtype=None, casting="same_kind"):
    _stack_args("hstack", dtype, casting)
    return stacks.hstack(OPS, [tensor_of(x) for x in tup])


def column_stack(tup):
    return stacks.column_stack(OPS, [tensor_of(x) for x in tup])


# ---- elementwise ----------------------------------------------------------------------------
def logaddexp(x, y):
    """:func:`elementwise.logaddexp`. A Python number takes the other argument's dtype first,
    as NumPy's ufunc gives it (``where(tie, 0.0, 1.0)`` alone would be float64)."""
    dtype = np.result_type(*(v._data if isinstance(v, Tensor) else v for v in (x, y)))
    x, y = (v if isinstance(v, Tensor) else np.asarray(v, dtype) for v in (x, y))
    return elementwise.logaddexp(OPS, x, y)


# ---- norms ----------------------------------------------------------------------------------
def norm(x, ord=None, axis=None, keepdims=False):
    """:func:`norms.norm`: the norms that are sums and maxima over entries; the norms of
    singular values (a matrix's ``ord=2``) run on the values, and NumPy raises for what it
    refuses."""
    axes = tuple(range(np.ndim(x))) if axis is None else tuple(axis) if isinstance(
        axis, (tuple, list)) else (axis,)
    out = norms.norm(OPS, x, ord, axes, axis is None, bool(keepdims))
    if out is None:
        return numpy_api.run_plain("np.linalg.norm", np.linalg.norm, (x, ord, axis, keepdims), {})
    return out


numpy_api.FUNCTIONS.update({
    np.linalg.norm: norm, np.var: var, np.std: std, np.diff: diff, np.flip: flip, np.fliplr: _flip_one(1, 2),
    np.flipud: _flip_one(0, 1), np.roll: roll, np.swapaxes: swapaxes, np.moveaxis: moveaxis,
    np.vstack: vstack, np.hstack: hstack, np.column_stack: column_stack,
})
numpy_api.UFUNC_METHODS[np.logaddexp, "__call__"] = logaddexp
