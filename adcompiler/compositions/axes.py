"""Axes in the compositions: NumPy's reading of ``axis=`` arguments, slices along one axis, the
flattening reshape, and the permutations of ``np.swapaxes`` and ``np.moveaxis``.

Invariants: an axis comes back in ``range(ndim)`` or raises NumPy's own error (TypeError for a
non-integer, AxisError out of bounds); a slice along an axis and the flattening are views
(``getitem`` of slices, ``reshape``); a swap or a move is one ``transpose`` (a view), its axes
placed as NumPy places them.
"""

from __future__ import annotations

import numpy as np

FULL = ("s", None, None, None)   # the index spec of `:`


def axis_in(axis, ndim) -> int:
    """``axis`` in ``range(ndim)`` (negative ones from the end), NumPy's AxisError outside."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"an integer is required for the axis, not {axis!r}")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(int(axis), ndim)
    return int(axis) % ndim


def axes_in(axis, ndim) -> tuple:
    """``axis`` (None: all of them, an int, or a tuple or list) as a tuple in ``range(ndim)``."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(axis_in(a, ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))


def slice_along(ops, x, axis, start, stop, step=None):
    """``x[:, ..., start:stop:step]`` with the slice on ``axis``: a view."""
    return ops.getitem(x, (), (FULL,) * axis + (("s", start, stop, step),))


def flattened(ops, x):
    """``x.reshape(-1)`` (a view), with its length written out."""
    return ops.reshape(x, shape=(ops.size(x),))


def swapaxes(ops, x, i, j):
    """``np.swapaxes`` for ``i`` and ``j`` in ``range(ndim)``: a transpose."""
    perm = list(range(len(ops.shape(x))))
    perm[i], perm[j] = j, i
    return ops.transpose(x, axes=tuple(perm))


def rollaxis_order(ndim, axis, start):
    """The transpose of NumPy's ``rollaxis(a, axis, start)`` (``axis`` in ``range(ndim)``,
    ``start`` in ``range(ndim + 1)``): ``axis`` placed before the axis that was at ``start``;
    None where nothing moves (NumPy returns a view of ``a`` as it is)."""
    if axis < start:
        start -= 1
    if axis == start:
        return None
    order = [n for n in range(ndim) if n != axis]
    order.insert(start, axis)
    return tuple(order)


def moveaxis(ops, x, source, destination):
    """``np.moveaxis`` for tuples of axes in ``range(ndim)`` of one length: a transpose whose
    axes are the others in order, with each ``source`` axis inserted at its ``destination``."""
    order = [n for n in range(len(ops.shape(x))) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return ops.transpose(x, axes=tuple(order))
