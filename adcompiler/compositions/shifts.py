"""Differences, flips and rolls: ``np.diff``, ``np.flip``/``fliplr``/``flipud`` and ``np.roll``,
spelled in slices and concatenations.

Invariants: NumPy's values and dtypes (``diff`` of booleans is ``!=``, as NumPy's); ``flip`` is
a reversed slice (a view, as NumPy's), ``roll`` a concatenation of two slices per axis (a new
array, a copy where nothing moves); every derivative comes from the slices' and the
concatenation's rules. The caller reads the arguments: ``n`` a non-negative int, axes in
``range(ndim)``, ``prepend``/``append`` arrays, shifts ints.
"""

from __future__ import annotations

import numpy as np

from .axes import FULL, slice_along


# ---- differences ----------------------------------------------------------------------------
def edge(ops, value, x, axis):
    """A ``prepend``/``append`` value: a 0-d one broadcast to one slice of ``x`` along axis."""
    if not ops.shape(value):
        shape = list(ops.shape(x))
        shape[axis] = 1
        value = ops.broadcast_to(value, shape=tuple(shape))
    return value


def diff(ops, x, n, axis, before=None, after=None):
    """``x[1:] - x[:-1]`` along ``axis``, ``n`` times (``!=`` for booleans, as NumPy); the
    :func:`edge` values ``before`` and ``after`` (None: not given) are concatenated first."""
    if n == 0:
        return x
    parts = [v for v in (before, x, after) if v is not None]
    if len(parts) > 1:
        x = ops.concatenate(parts, axis=axis)
    op = ops.not_equal if np.dtype(ops.dtype(x)) == np.bool_ else ops.subtract
    for _ in range(int(n)):
        x = op(slice_along(ops, x, axis, 1, None), slice_along(ops, x, axis, None, -1))
    return x


# ---- flips ----------------------------------------------------------------------------------
def flip(ops, x, axes):
    """``x`` reversed along ``axes`` (a slice with step -1 each): a view, as NumPy's; with no
    axes a 0-d ``x`` is copied and another is ``x`` itself."""
    if not axes:
        return ops.copy(x) if not ops.shape(x) else x
    index = tuple(("s", None, None, -1) if a in axes else FULL for a in range(max(axes) + 1))
    return ops.getitem(x, (), index)


# ---- rolls ----------------------------------------------------------------------------------
def roll_offsets(pairs, ndim, axis_of):
    """``{axis: total shift}`` of ``np.roll``'s ``(shift, axis)`` pairs (``np.broadcast`` of the
    two), each axis read by the caller's ``axis_of(axis, ndim)``."""
    offsets = {}
    for sh, ax in pairs:
        ax = axis_of(int(ax), ndim)
        offsets[ax] = offsets.get(ax, 0) + int(sh)
    return offsets


def roll(ops, x, offsets):
    """Along each axis of ``offsets`` (``{axis: shift}``), the last ``shift`` entries moved to
    the front: a concatenation of two slices; a copy where nothing moves."""
    shape, out = tuple(ops.shape(x)), x
    for axis, sh in sorted(offsets.items()):
        n = shape[axis]
        k = int(sh) % n if n else 0
        if k:
            out = ops.concatenate([slice_along(ops, out, axis, n - k, None),
                                   slice_along(ops, out, axis, None, n - k)], axis=axis)
    return ops.copy(out) if out is x else out


def roll_flat(ops, x, shift):
    """``np.roll(x, shift)`` with ``axis=None``: the flattened array rolled, its shape restored."""
    flat = roll(ops, ops.reshape(x, shape=(-1,)), {0: shift})
    return ops.reshape(flat, shape=tuple(ops.shape(x)))
