"""``np.average``, ``np.nansum``, ``np.nanmean`` and ``np.nanmax``/``np.nanmin`` on tensors, as
the compiler records them.

Invariants: the compiler's compositions (:mod:`adcompiler.compositions.statistics`) run on
:class:`~.compositions.TapeOps`, so the tape records the same primitives and its gradient is the
compiler's (a NaN entry gets none); a sum of weights of 0 raises NumPy's ZeroDivisionError at
once; what the compiler refuses with a located error (``out=``, ``dtype=``) raises
NotImplementedError here.
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions import statistics

from . import numpy_api
from .compositions import OPS, TapeOps, tensor_of, unsupported


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    x = tensor_of(a)
    w = None if weights is None else tensor_of(weights)
    keepdims = False if keepdims is np._NoValue else keepdims
    return statistics.average(TapeOps(x), x, _axis(axis), w, returned, keepdims)


def _nan(name, fn):
    def reduce(a, axis=None, *args, keepdims=False, **kwargs):
        unsupported(name, positional=args or None, **kwargs)
        keepdims = False if keepdims is np._NoValue else keepdims
        return fn(OPS, tensor_of(a), _axis(axis), keepdims)
    reduce.__name__ = name
    return reduce


numpy_api.FUNCTIONS.update({
    np.average: average, np.nansum: _nan("nansum", statistics.nansum),
    np.nanmean: _nan("nanmean", statistics.nanmean),
    np.nanmax: _nan("nanmax", statistics.nan_extreme("max")),
    np.nanmin: _nan("nanmin", statistics.nan_extreme("min")),
})
