"""``np.sort``, ``np.partition``, ``np.take_along_axis``, ``np.median``, ``np.quantile``/
``np.percentile`` on tensors, as the compiler records them
(``adcompiler/frontend/library/sorting.py``).

Invariants: the composition is the compiler's own (:mod:`adcompiler.compositions.sorting`, run
on :class:`~.compositions.TapeOps`), so the tape records the same primitives: a
stable argsort, a gather of the flattened tensor (a view) at those positions, NumPy's median
and ``'linear'`` quantile formulas; the gradient at a tie is the compiler's. What the compiler
refuses (``kind=``/``stable=False``, ``order=``, ``out=``, ``overwrite_input=``, a tuple of axes,
another quantile method) runs on the values, refused where a gradient would be lost
(:func:`.numpy_api.run_plain`).

Layering: above :mod:`.compositions` and :mod:`.numpy_api`, into whose ``FUNCTIONS`` it
registers (it is loaded by :mod:`.assembly`).
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions.axes import flattened
from adcompiler.compositions.sorting import (KINDS, median_along, partition_along,
                                             quantile_along, sort_along, take_along)

from . import numpy_api, views
from .compositions import OPS, TapeOps
from .numpy_api import run_plain
from .tensor import Tensor


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def _axis(axis, ndim):
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError("an integer axis is required here (a tuple of axes is not supported "
                        "on tensors)")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return int(axis) % ndim


def _flat(x):
    return flattened(OPS, x)


def _float(x):
    return x if x.dtype.kind in "fc" else OPS.astype(x, np.float64)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if not _is_tensor(a) or order is not None or kind not in KINDS:
        return run_plain("np.sort", np.sort, (a, axis, kind, order), {"stable": stable})
    if axis is None:
        a, axis = _flat(a), 0
    return sort_along(TapeOps(a), a, _axis(axis, a.ndim))


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's ``partition``: the compiler's gather at ``np.argpartition``'s positions."""
    if not _is_tensor(a) or order is not None or kind != "introselect":
        return run_plain("np.partition", np.partition, (a, kth, axis, kind, order), {})
    if axis is None:
        a, axis = _flat(a), 0
    kth = tuple(int(k) for k in kth) if isinstance(kth, (tuple, list)) else int(kth)
    return partition_along(TapeOps(a), a, kth, _axis(axis, a.ndim))


def take_along_axis(arr, indices, axis=-1):
    if not _is_tensor(arr):
        return run_plain("np.take_along_axis", np.take_along_axis, (arr, indices, axis), {})
    if axis is None:
        arr, axis = _flat(arr), 0
    index = indices._data if _is_tensor(indices) else np.asarray(indices)
    if index.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    return take_along(TapeOps(arr), arr, index, _axis(axis, arr.ndim))


def _reduced(a, axis):
    """The float tensor and its axis (the flattened tensor's 0 for None)."""
    a = _float(a)
    if axis is None:
        return _flat(a), 0
    return a, _axis(axis, a.ndim)


def _kept(out, ndim, axis, keepdims):
    if not keepdims:
        return out
    if axis is None:
        return views.make("reshape", out, {"shape": tuple(out.shape) + (1,) * ndim})
    return views.make("expand_dims", out, {"axis": _axis(axis, ndim) + out.ndim - ndim + 1})


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if not _is_tensor(a) or out is not None or overwrite_input or isinstance(axis, (tuple, list)):
        return run_plain("np.median", np.median, (a, axis, out, overwrite_input, keepdims), {})
    x, ax = _reduced(a, axis)
    return _kept(median_along(TapeOps(x), x, ax), a.ndim, axis, keepdims)


def _quantile(fn, scale):
    def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                 keepdims=False, *, weights=None, interpolation=None):
        plain = (not _is_tensor(a) or _is_tensor(q) or out is not None or overwrite_input
                 or method != "linear" or weights is not None or interpolation is not None
                 or isinstance(axis, (tuple, list)))
        if plain:
            return run_plain(f"np.{fn.__name__}", fn, (a, q, axis, out, overwrite_input,
                                                      method, keepdims), {"weights": weights})
        weak = type(q) in (int, float)
        qs = np.asarray(q, dtype=None if np.asarray(q).dtype.kind == "f" else np.float64)
        qs = np.true_divide(qs, scale) if scale != 1 else qs
        if not np.all((qs >= 0) & (qs <= 1)):
            raise ValueError("Quantiles must be in the range [0, 1]" if scale == 1
                             else "Percentiles must be in the range [0, 100]")
        x, ax = _reduced(a, axis)
        return _kept(quantile_along(TapeOps(x), x, qs, ax, weak), a.ndim, axis, keepdims)
    return quantile


numpy_api.FUNCTIONS.update({
    np.sort: sort, np.partition: partition, np.take_along_axis: take_along_axis,
    np.median: median,
    np.quantile: _quantile(np.quantile, 1), np.percentile: _quantile(np.percentile, 100),
})
