"""Cutting and padding arrays: ``np.split``/``array_split``/``hsplit``/``vsplit``/``dsplit``,
``np.tile``, ``np.repeat``, ``np.take`` and ``np.pad`` (constant mode), spelled in slices,
reshapes, broadcasts, gathers and concatenations.

Invariants: NumPy's values, shapes and dtypes; a view where NumPy returns one (the pieces of a
split), a new array where NumPy copies (``tile``, ``repeat``, ``take``, ``pad``); counts,
indices, repeats, pad widths and fill values are Python values or arrays (the caller reads them
while compiling); NumPy's errors (an unequal split, an index out of bounds) are NumPy's, with its
words. ``repeat`` with a count per entry, ``take`` and ``pad`` call ``ops.constant``: the
positions and the fill pieces are made here, with NumPy.
"""

from __future__ import annotations

import itertools

import numpy as np

from .axes import FULL, axis_in, slice_along

PAD_HINT = "write the other modes with slices and np.concatenate"   # the modes but constant


# ---- splits ---------------------------------------------------------------------------------
def split_bounds(n, sections, equal):
    """``[(start, stop)]`` of each piece of an axis of length ``n``, as NumPy's ``array_split``
    places them: ``sections`` pieces, the first ``n % sections`` one longer (``split``,
    ``equal``, wants no remainder), or the pieces between the given indices."""
    if np.ndim(sections) == 0:   # a count (NumPy takes int() of what has no len())
        count = int(sections)
        if count <= 0:
            raise ValueError("number sections must be larger than 0.")
        if equal and n % count:
            raise ValueError("array split does not result in an equal division")
        each, extra = divmod(n, count)
        points = list(itertools.accumulate([0] + [each + 1] * extra + [each] * (count - extra)))
    else:
        points = [0, *(int(i) for i in np.asarray(sections).ravel()), n]
    return list(zip(points[:-1], points[1:]))


def split(ops, x, sections, axis=0, equal=True):
    """``np.split`` (``equal``) and ``np.array_split``: a list of views of ``x`` along ``axis``."""
    shape = ops.shape(x)
    axis = axis_in(axis, len(shape))
    return [slice_along(ops, x, axis, start, stop)
            for start, stop in split_bounds(shape[axis], sections, equal)]


def split_along(name, least, axis):
    """``np.hsplit``/``vsplit``/``dsplit``: ``split`` along a fixed axis (``hsplit`` of a 1-D
    array along axis 0), with NumPy's error below ``least`` dimensions."""
    def fixed(ops, x, sections):
        ndim = len(ops.shape(x))
        if ndim < least:
            raise ValueError(f"{name} only works on arrays of {least} or more dimensions")
        return split(ops, x, sections, axis if ndim > 1 or name != "hsplit" else 0)
    return fixed


# ---- tile and repeat ------------------------------------------------------------------------
def _broadcast_merge(ops, x, source, target, copies):
    """``x`` reshaped to ``source`` (size-1 axes added), broadcast to ``target`` and merged to
    ``target``'s pairs of axes: a new array, as NumPy's tile and repeat give. The merge copies
    where a pair has both sizes above 1; elsewhere it would be a view of the (read-only)
    broadcast, so it is copied (``copies`` False)."""
    merged = tuple(target[k] * target[k + 1] for k in range(0, len(target), 2))
    spread = ops.broadcast_to(ops.reshape(x, shape=tuple(source)), shape=tuple(target))
    out = ops.reshape(spread, shape=merged)
    return out if copies else ops.copy(out)


def tile(ops, x, reps):
    """``np.tile(A, reps)``: NumPy's shape (``reps`` padded with 1s on the left, or ``A``'s
    shape), each axis ``A``'s repeated whole: ``A`` as (1, s0, 1, s1...), broadcast to
    (r0, s0, r1, s1...) and merged."""
    reps = tuple(int(r) for r in np.atleast_1d(np.asarray(reps)))
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    shape = tuple(ops.shape(x))
    d = max(len(reps), len(shape))
    shape, reps = (1,) * (d - len(shape)) + shape, (1,) * (d - len(reps)) + reps
    source = [n for s in shape for n in (1, s)]
    target = [n for s, r in zip(shape, reps) for n in (r, s)]
    return _broadcast_merge(ops, x, source, target, any(r > 1 and s > 1
                                                         for s, r in zip(shape, reps)))


def repeat(ops, x, repeats, axis=None):
    """``np.repeat(a, repeats, axis)``: each entry ``repeats`` times in place (of the
    flattened array for ``axis=None``): a broadcast for one count, a gather at positions
    made while compiling for a count per entry."""
    if axis is None:
        x, axis = ops.reshape(x, shape=(int(np.prod(ops.shape(x), dtype=np.int64)),)), 0
    shape = tuple(ops.shape(x))
    axis = axis_in(axis, len(shape))
    counts = np.asarray(repeats)
    if counts.dtype.kind not in "iu" or np.any(counts < 0):
        raise ValueError(f"repeats must be non-negative integers, not {repeats!r}")
    if counts.size == 1:
        r, n = int(counts.reshape(())), shape[axis]
        source = [m for k, s in enumerate(shape) for m in ((s, 1) if k == axis else (1, s))]
        target = [m for k, s in enumerate(shape) for m in ((s, r) if k == axis else (1, s))]
        return _broadcast_merge(ops, x, source, target, r > 1 and n > 1)
    positions = np.repeat(np.arange(shape[axis]), counts)   # NumPy raises on a wrong length
    index = (FULL,) * axis + (("a", 0),)
    return ops.getitem(x, (ops.constant(positions, "repeats"),), index)


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
    shape, dtype = tuple(ops.shape(x)), np.dtype(ops.dtype(x))
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
