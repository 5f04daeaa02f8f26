"""Elementwise NumPy functions spelled in other ufuncs: ``np.logaddexp``, ``np.nan_to_num`` and
``np.round``.

Invariants: NumPy's values, in NumPy's own steps (``npy_logaddexp``, ``round``'s scaled
``rint``); ufuncs only, so a 0-d result is a NumPy scalar where the ufuncs give one. The
gradient of ``logaddexp`` is ``sigmoid(a - b)`` in ``a``, 1/2 to each at a tie; ``round``'s is
0, as PyTorch's. The caller converts the operands (a Python number takes the other operand's
dtype on the tape) and sends integers and ``out=`` elsewhere.
"""

from __future__ import annotations

import numpy as np


def logaddexp(ops, x, y):
    """``log(exp(x) + exp(y))`` as NumPy's npy_logaddexp computes it, without overflow:
    ``max(x, y) + log1p(exp(-|x - y|))``, with ``x - y`` taken as 0 at a tie (where it would
    be NaN, with a warning, for two infinities of one sign). At a tie the gradient is 1/2 to
    each, as PyTorch's (np.maximum's rule shares it; ``|x - y|`` has slope 0 there)."""
    top, tie = ops.maximum(x, y), ops.equal(x, y)
    apart = [ops.where(tie, 0.0, v) for v in (x, y)]   # no inf - inf at a tie
    gap = ops.abs(ops.subtract(*apart))
    return ops.add(top, ops.log1p(ops.exp(ops.negative(gap))))


def nan_to_num(ops, x, nan, posinf, neginf):
    """``np.nan_to_num`` of a float array: NaN, +inf and -inf replaced by the static ``nan``,
    ``posinf`` and ``neginf`` (None: the dtype's largest and most negative finite numbers, as
    NumPy's); the gradient is 1 where ``x`` is finite, 0 where it is replaced."""
    big = np.finfo(np.dtype(ops.dtype(x))).max
    high, low = (float(big) if posinf is None else posinf), (-float(big) if neginf is None
                                                             else neginf)
    out = ops.where(ops.isnan(x), nan, x)
    out = ops.where(ops.logical_and(ops.isinf(x), ops.greater(x, 0.0)), high, out)
    return ops.where(ops.logical_and(ops.isinf(x), ops.less(x, 0.0)), low, out)


def round_float(ops, x, decimals):
    """``np.round`` of a float array: ``rint``, and for other ``decimals`` NumPy's ``rint(x *
    10**d) / 10**d`` (``rint(x / 10**-d) * 10**-d`` for negative d)."""
    if decimals == 0:
        return ops.rint(x)
    scale = 10.0 ** abs(int(decimals))
    inner, outer = (ops.multiply, ops.divide) if decimals > 0 else (ops.divide, ops.multiply)
    return outer(ops.rint(inner(x, scale)), scale)
