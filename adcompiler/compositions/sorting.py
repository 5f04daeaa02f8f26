"""Sorting: ``np.sort``, ``np.take_along_axis``, ``np.median`` and ``np.quantile``/``percentile``
(method ``'linear'``), spelled in a stable argsort, gathers and NumPy's interpolation.

Invariants: ``sort`` is a gather of ``x`` at ``argsort(x, kind='stable')`` (from the flattened
array at ``base + order * stride``, one index array tagged ``("a", 0)``, a copy), so the
gradient routes each cotangent entry back to where its value came from and, the argsort being
stable, the compiler and the tape pick the same entry at a tie; ``median`` and ``quantile`` are
NumPy's formulas (the middle entries' mean, ``_lerp``), NaN where the sorted axis ends with a
NaN; the positions made here are read-only, cached by shape, and reach the graph through
``ops.const`` (one constant per array). The caller reads the arguments: one axis in
``range(ndim)``, ``q`` a float array in [0, 1], float ``x`` for ``median`` and ``quantile``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .axes import flattened, slice_along

_ALL = ("s", None, None, None)
KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")   # np.sort's kind=, all stable here


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
    last = axis == len(ops.shape(x)) - 1
    order = ops.argsort(x, kind="stable") if last else ops.argsort(x, axis=axis, kind="stable")
    return gather_along(ops, x, order, axis)


def partition_along(ops, x, kth, axis):
    """NumPy's ``partition``: a gather of ``x`` at ``np.argpartition(x, kth, axis)`` (the
    same selection algorithm, so NumPy's order); ``kth`` an int or a tuple of ints."""
    return gather_along(ops, x, ops.argpartition(x, kth=kth, axis=axis), axis)


def gather_along(ops, x, order, axis):
    """``np.take_along_axis(x, order, axis)`` for a permutation ``order`` of each line along
    ``axis``, read from the flattened array at ``base + order * stride`` (one index array)."""
    shape = tuple(ops.shape(x))
    if len(shape) == 1:
        return ops.getitem(x, [order], (("a", 0),))
    stride = int(np.prod(shape[axis + 1:]))
    step = order if stride == 1 else ops.multiply(order, stride)
    positions = ops.add(ops.const(sort_positions(shape, axis), "sorted_base"), step)
    return ops.getitem(flattened(ops, x), [positions], (("a", 0),))


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
            arrays.append(ops.const(grid(n, dim, ndim), f"along{dim}"))
    return ops.getitem(x, arrays, tuple(("a", k) for k in range(ndim)))


@lru_cache(maxsize=None)
def grid(n, dim, ndim):
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
    middle = slice_along(ops, s, axis, (n - 1) // 2, n // 2 + 1)
    last = slice_along(ops, s, axis, n - 1, n)
    return ops.mean(ops.where(ops.isnan(last), last, middle), axis=axis)


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
