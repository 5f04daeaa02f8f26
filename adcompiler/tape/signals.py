"""``np.polyval``, ``np.convolve`` and ``np.interp`` on tensors, as the compiler records them.

Invariants: the compiler's compositions (:mod:`adcompiler.compositions.signals`) run on
:class:`~.compositions.TapeOps`, so the tape records the same primitives and its gradient is the
compiler's; NumPy's errors are NumPy's, and ``period=``, which the compiler refuses, raises
NotImplementedError here.
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions import signals

from . import numpy_api
from .compositions import OPS, TapeOps, tensor_of, unsupported


def polyval(p, x):
    return signals.polyval(OPS, tensor_of(p), tensor_of(x))


def convolve(a, v, mode="full"):
    x = tensor_of(a)
    return signals.convolve(TapeOps(x), x, tensor_of(v), mode)


def interp(x, xp, fp, left=None, right=None, period=None):
    unsupported("interp", period=period)
    ends = [None if e is None else tensor_of(e) for e in (left, right)]
    return signals.interp(OPS, tensor_of(x), tensor_of(xp), tensor_of(fp), *ends)


numpy_api.FUNCTIONS.update({np.polyval: polyval, np.convolve: convolve, np.interp: interp})
