"""NumPy functions that cut, pad and repeat arrays, spelled in slices, reshapes, broadcasts and
concatenations: ``np.split``/``array_split``/``hsplit``/``vsplit``/``dsplit``,
``np.atleast_1d``/``2d``/``3d``, ``np.tile``, ``np.repeat`` and ``np.append``.

Each is written once over ``ops``: the Builder when compiling (the handlers at the bottom), the
tape's ops on tensors (:mod:`adcompiler.tape.splits`), so both record the same primitives and
every derivative comes from their rules. Invariants: NumPy's values, shapes and dtypes; a view
where NumPy returns one (the pieces of a split, ``atleast_2d``'s reshape), a new array where
NumPy copies (``tile``, ``repeat``, ``append``); counts, indices, repeats and axes are known
while compiling (a traced one is a located error); NumPy's ValueErrors (an unequal split, too
few dimensions) are raised with NumPy's words.
"""

from __future__ import annotations

import itertools

import numpy as np

from .binding import CallError, bind, static
from .compositions import _array

FULL = ("s", None, None, None)   # the index spec of `:`


def axis_in(axis, ndim) -> int:
    """``axis`` in ``range(ndim)`` (negative ones from the end), NumPy's AxisError outside."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"an integer is required for the axis, not {axis!r}")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(int(axis), ndim)
    return int(axis) % ndim


def slice_along(ops, x, axis, start, stop):
    """``x[:, ..., start:stop]`` with the slice on ``axis``: a view."""
    return ops.getitem(x, (), (FULL,) * axis + (("s", start, stop, None),))


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


# ---- at least N dimensions ------------------------------------------------------------------
def at_least(ops, x, ndim):
    """``np.atleast_{ndim}d`` of one array: ``x`` itself where it has the dimensions, else a
    reshape (a view) placing its axes as NumPy does ((n,) as (1, n) and as (1, n, 1))."""
    shape = tuple(ops.shape(x))
    if len(shape) >= ndim:
        return x
    new = {1: {0: (1,)}, 2: {0: (1, 1), 1: (1, *shape)},
           3: {0: (1, 1, 1), 1: (1, *shape, 1), 2: (*shape, 1)}}[ndim][len(shape)]
    return ops.reshape(x, shape=new)


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


def append(ops, x, values, axis=None):
    """``np.append``: both flattened and joined (``axis=None``), else joined along ``axis``."""
    if axis is None:
        flat = [v if len(ops.shape(v)) == 1 else
                ops.reshape(v, shape=(int(np.prod(ops.shape(v), dtype=np.int64)),))
                for v in (x, values)]
        return ops.concatenate(flat, axis=0)
    return ops.concatenate([x, values], axis=axis)


# ---- the calls ------------------------------------------------------------------------------
def _split_call(equal):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("ary", "indices_or_sections", "axis"), required=2)
        sections = static(p["indices_or_sections"], "the sections (a count or indices)")
        axis = static(p.get("axis", 0), "`axis=`")
        return split(b, _array(b, p["ary"]), sections, axis, equal)
    return handler


def _fixed_split_call(name, least, axis):
    fixed = split_along(name, least, axis)

    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("ary", "indices_or_sections"), required=2)
        sections = static(p["indices_or_sections"], "the sections (a count or indices)")
        return fixed(b, _array(b, p["ary"]), sections)
    return handler


def _at_least_call(ndim):
    def handler(b, args, kwargs):
        if not args:
            raise CallError("needs at least one array", f"np.atleast_{ndim}d(x)")
        out = tuple(at_least(b, _array(b, x), ndim) for x in args)
        return out[0] if len(out) == 1 else out
    return handler


def _tile_call(b, args, kwargs):
    p = bind(args, kwargs, ("A", "reps"), required=2)
    return tile(b, _array(b, p["A"]), static(p["reps"], "`reps`"))


def _repeat_call(b, args, kwargs):
    p = bind(args, kwargs, ("a", "repeats", "axis"), required=2)
    axis = static(p.get("axis"), "`axis=`")
    return repeat(b, _array(b, p["a"]), static(p["repeats"], "`repeats`"), axis)


def _append_call(b, args, kwargs):
    p = bind(args, kwargs, ("arr", "values", "axis"), required=2)
    axis = static(p.get("axis"), "`axis=`")
    return append(b, _array(b, p["arr"]), _array(b, p["values"]), axis)


FUNCTIONS = {
    np.split: _split_call(True), np.array_split: _split_call(False),
    np.hsplit: _fixed_split_call("hsplit", 1, 1), np.vsplit: _fixed_split_call("vsplit", 2, 0),
    np.dsplit: _fixed_split_call("dsplit", 3, 2),
    np.atleast_1d: _at_least_call(1), np.atleast_2d: _at_least_call(2),
    np.atleast_3d: _at_least_call(3),
    np.tile: _tile_call, np.repeat: _repeat_call, np.append: _append_call,
}
