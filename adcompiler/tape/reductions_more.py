"""``np.average``, ``np.nansum``, ``np.nanmean``, ``np.nanmax``/``np.nanmin``, ``np.take``,
``np.pad`` (constant mode), ``np.cross``, ``np.polyval``, ``np.convolve`` and ``np.interp`` on
tensors, as the compiler records
them (``adcompiler/frontend/reductions_more.py``).

Invariants: the compiler's own compositions run on :class:`~.splits.TapeOps`, so the tape
records the same primitives and its gradient is the compiler's; what the compiler refuses with
a located error (another pad mode, ``out=``) raises NotImplementedError here.
"""

from __future__ import annotations

import numpy as np

from adcompiler.frontend import reductions_more as more

from . import numpy_api
from .compositions import _tensor_of
from .splits import TapeOps


def _refuse(name, **given):
    for key, value in given.items():
        if value is not None and value is not np._NoValue:
            raise NotImplementedError(f"np.{name}: `{key}=` is not supported on the tape")


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    x = _tensor_of(a)
    w = None if weights is None else _tensor_of(weights)
    keepdims = False if keepdims is np._NoValue else keepdims
    return more.average(TapeOps(x), x, _axis(axis), w, returned, keepdims)


def _nan(name, fn):
    def reduce(a, axis=None, *args, keepdims=False, **kwargs):
        _refuse(name, positional=args or None, **kwargs)
        keepdims = False if keepdims is np._NoValue else keepdims
        return fn(TapeOps(), _tensor_of(a), _axis(axis), keepdims)
    reduce.__name__ = name
    return reduce


def take(a, indices, axis=None, out=None, mode="raise"):
    _refuse("take", out=out, mode=None if mode == "raise" else mode)
    x = _tensor_of(a)
    return more.take(TapeOps(x), x, indices, axis)


def pad(array, pad_width, mode="constant", **kwargs):
    if mode != "constant":
        raise NotImplementedError(f"np.pad supports mode='constant' only, not mode={mode!r}: "
                                  f"{more.PAD_HINT}")
    values = kwargs.pop("constant_values", 0)
    _refuse("pad", **kwargs)
    x = _tensor_of(array)
    return more.pad(TapeOps(x), x, pad_width, values)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if (axisa, axisb, axisc, axis) != (-1, -1, -1, None):
        raise NotImplementedError("np.cross: only the last axis is supported on the tape")
    return more.cross(TapeOps(), _tensor_of(a), _tensor_of(b))


def polyval(p, x):
    return more.polyval(TapeOps(), _tensor_of(p), _tensor_of(x))


def convolve(a, v, mode="full"):
    x = _tensor_of(a)
    return more.convolve(TapeOps(x), x, _tensor_of(v), mode)


def interp(x, xp, fp, left=None, right=None, period=None):
    _refuse("interp", period=period)
    ends = [None if e is None else _tensor_of(e) for e in (left, right)]
    return more.interp(TapeOps(), _tensor_of(x), _tensor_of(xp), _tensor_of(fp), *ends)


numpy_api.FUNCTIONS.update({
    np.average: average, np.nansum: _nan("nansum", more.nansum),
    np.nanmean: _nan("nanmean", more.nanmean),
    np.nanmax: _nan("nanmax", more.nan_extreme("max")),
    np.nanmin: _nan("nanmin", more.nan_extreme("min")),
    np.take: take, np.pad: pad, np.cross: cross, np.polyval: polyval,
    np.convolve: convolve, np.interp: interp,
})
